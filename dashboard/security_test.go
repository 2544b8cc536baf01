package dashboard_test

import (
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/shardq/shardq/dashboard"
)

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func TestAuth(t *testing.T) {
	t.Parallel()
	e := setup(t, dashboard.Options{BasicAuth: &dashboard.BasicAuth{User: "ops", Password: "s3cret"}, BearerToken: "tok-123"})

	for name, h := range map[string][]string{
		"none":         nil,
		"wrong pass":   {"Authorization", basic("ops", "nope")},
		"wrong user":   {"Authorization", basic("admin", "s3cret")},
		"wrong bearer": {"Authorization", "Bearer tok-999"},
	} {
		for _, path := range []string{"/", "/api/queues", "/assets/app.js", "/queues/" + e.q + "/tasks/" + e.evil} {
			if r := e.get(path, h...); r.code != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s, GET %s: %d", name, path, r.code)
			}
		}
		if r := e.do(http.MethodPost, "/api/queues/"+e.q+"/resume", nil, h...); r.code != http.StatusUnauthorized {
			t.Errorf("%s, POST: %d", name, r.code)
		}
	}
	if r := e.get("/"); !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Basic ") {
		t.Errorf("challenge %q", r.header.Get("WWW-Authenticate"))
	}
	if r := e.get("/", "Authorization", basic("ops", "s3cret")); r.code != 200 {
		t.Fatalf("basic auth: %d", r.code)
	}
	if r := e.get("/api/queues", "Authorization", "Bearer tok-123"); r.code != 200 {
		t.Fatalf("bearer: %d", r.code)
	}
	// the scheme is case-insensitive (RFC 9110); the token is not
	for h, want := range map[string]int{"bearer tok-123": 200, "BEARER tok-123": 200, "bEaReR  tok-123": 200,
		"Bearertok-123": 401, "Bearer TOK-123": 401, "Bearer ": 401, "Basic tok-123": 401} {
		if r := e.get("/api/queues", "Authorization", h); r.code != want {
			t.Errorf("Authorization %q: %d, want %d", h, r.code, want)
		}
	}
	// a script with the bearer token needs no CSRF token: browsers never
	// send that header by themselves
	if r := e.do(http.MethodPost, "/api/queues/"+e.q+"/resume", nil, "Authorization", "Bearer tok-123"); r.code != 200 || e.info().Paused {
		t.Fatalf("bearer POST: %d %s", r.code, r.body)
	}
	// basic auth is sent by browsers on their own: it needs the token, and
	// the token of the user who asked for it
	auth := []string{"Authorization", basic("ops", "s3cret")}
	if r := e.do(http.MethodPost, "/api/queues/"+e.q+"/pause", nil, auth...); r.code != http.StatusForbidden {
		t.Fatalf("basic POST without token: %d", r.code)
	}
	tok := e.csrf(auth...)
	if r := e.do(http.MethodPost, "/api/queues/"+e.q+"/pause", nil, append(auth, "X-CSRF-Token", tok)...); r.code != 200 || !e.info().Paused {
		t.Fatalf("basic POST with token: %d %s", r.code, r.body)
	}
}

func TestCSRF(t *testing.T) {
	t.Parallel()
	e := setup(t, dashboard.Options{Unauthenticated: true})
	tok := e.csrf()
	path := "/queues/" + e.q + "/tasks/" + e.dead[0] + "/run"
	form := func(csrf string) url.Values {
		return url.Values{"csrf": {csrf}, "return": {"/queues/" + e.q + "?state=dead"}}
	}
	for name, c := range map[string]struct {
		body   url.Values
		header []string
	}{
		"no token":     {form(""), nil},
		"bad token":    {form("AAAA" + tok[4:]), nil},
		"other key":    {form(otherToken(t)), nil},
		"cross-site":   {form(tok), []string{"Sec-Fetch-Site", "cross-site"}},
		"same-site":    {form(tok), []string{"Sec-Fetch-Site", "same-site"}},
		"origin":       {form(tok), []string{"Origin", "https://evil.example"}},
		"api no token": {nil, nil},
	} {
		p := path
		if c.body == nil {
			p = "/api" + path
		}
		if r := e.do(http.MethodPost, p, c.body, c.header...); r.code != http.StatusForbidden {
			t.Errorf("%s: %d %s", name, r.code, r.body)
		}
	}
	if qi := e.info(); qi.Dead != 5 {
		t.Fatalf("a rejected request changed the queue: %+v", qi)
	}
	// the form as a page sends it: same origin, token in the body
	r := e.do(http.MethodPost, path, form(tok), "Sec-Fetch-Site", "same-origin", "Origin", e.srv.URL)
	want := "/dash/queues/" + e.q + "?done=run&n=1&state=dead"
	if r.code != http.StatusSeeOther || r.header.Get("Location") != want {
		t.Fatalf("form POST: %d to %q, want %q", r.code, r.header.Get("Location"), want)
	}
	if e.info().Dead != 4 {
		t.Fatal("the task did not move")
	}
	if page := e.page(t, strings.TrimPrefix(want, "/dash")); !strings.Contains(page.body, "Task queued to run now.") {
		t.Fatal("no flash after the action")
	}
	// a return path elsewhere falls back to the queue page
	for _, back := range []string{"//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:alert(1)"} {
		r := e.do(http.MethodPost, "/queues/"+e.q+"/pause", url.Values{"csrf": {tok}, "return": {back}})
		if loc := r.header.Get("Location"); r.code != http.StatusSeeOther || !strings.HasPrefix(loc, "/dash/queues/"+e.q+"?") {
			t.Errorf("return %q: redirected to %q", back, loc)
		}
	}
	// the token is in every page's forms and meta tag
	page := e.page(t, "/queues/"+e.q+"?state=dead")
	if !strings.Contains(page.body, `name="csrf" value="`+tok+`"`) || !strings.Contains(page.body, `name="csrf-token" content="`+tok+`"`) {
		t.Fatal("page forms lack the CSRF token")
	}
}

// otherToken is a valid token of another dashboard (another key).
func otherToken(t *testing.T) string {
	e := newEnv(t)
	e.serve(dashboard.Options{Unauthenticated: true})
	return e.csrf()
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	e := setup(t, dashboard.Options{Unauthenticated: true, ReadOnly: true})
	for _, p := range []string{"/", "/queues/" + e.q + "?state=dead", "/queues/" + e.q + "?state=active",
		"/queues/" + e.q + "/tasks/" + e.dead[0], "/queues/" + e.q + "/tasks/" + e.active[0]} {
		r := e.page(t, p)
		if strings.Contains(r.body, `method="post"`) || strings.Contains(r.body, "<button") {
			t.Errorf("%s shows actions in read-only mode", p)
		}
		if !strings.Contains(r.body, "read-only") {
			t.Errorf("%s does not say it is read-only", p)
		}
	}
	tok := e.csrf()
	for _, p := range []string{"/api/queues/" + e.q + "/pause", "/api/queues/" + e.q + "/tasks/" + e.dead[0] + "/run",
		"/queues/" + e.q + "/tasks/" + e.dead[0] + "/delete", "/api/queues/" + e.q + "/groups/k/pause"} {
		if r := e.do(http.MethodPost, p, url.Values{"csrf": {tok}}, "X-CSRF-Token", tok); r.code != http.StatusForbidden {
			t.Errorf("POST %s: %d", p, r.code)
		}
	}
	if qi := e.info(); qi.Dead != 5 || !qi.Paused {
		t.Fatalf("read-only dashboard changed the queue: %+v", qi)
	}
}

func TestBasePath(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.serve(dashboard.Options{Unauthenticated: true, BasePath: "/behind/proxy/"})
	r := e.page(t, "/")
	if !strings.Contains(r.body, `href="/behind/proxy/workers"`) || !strings.Contains(r.body, `src="/behind/proxy/assets/app.js"`) {
		t.Fatalf("links ignore BasePath:\n%s", r.body)
	}
	// without BasePath, links follow the StripPrefix mount
	e.serve(dashboard.Options{Unauthenticated: true})
	r = e.page(t, "/workers")
	links := regexp.MustCompile(`href="([^"]+)"`).FindAllStringSubmatch(r.body, -1)
	for _, l := range links {
		if !strings.HasPrefix(l[1], "/dash/") && !strings.HasPrefix(l[1], "?") {
			t.Errorf("link %q is not under /dash/", l[1])
		}
	}
}

// TestNewRefusesEmptySecrets: Options with no credentials, or an empty
// one, are an error at construction, naming the field and never a
// secret. The docs' mount with DASHBOARD_PASSWORD unset once served every
// page and action to "curl -u ops:". Unauthenticated is the one way to an
// open dashboard, and it does not mix with credentials.
func TestNewRefusesEmptySecrets(t *testing.T) {
	t.Parallel()
	insp := newEnv(t).insp
	const secret = "pw-Zq81-never-shown"
	for name, c := range map[string]struct {
		opts  dashboard.Options
		want  error
		field string
	}{
		"zero options":         {dashboard.Options{}, dashboard.ErrInvalid, "BearerToken"},
		"empty password":       {dashboard.Options{BasicAuth: &dashboard.BasicAuth{User: "ops", Password: ""}}, dashboard.ErrInvalid, "BasicAuth.Password"},
		"blank password":       {dashboard.Options{BasicAuth: &dashboard.BasicAuth{User: "ops", Password: " \n"}}, dashboard.ErrInvalid, "BasicAuth.Password"},
		"empty user":           {dashboard.Options{BasicAuth: &dashboard.BasicAuth{Password: secret}}, dashboard.ErrInvalid, "BasicAuth.User"},
		"empty password+token": {dashboard.Options{BasicAuth: &dashboard.BasicAuth{User: "ops"}, BearerToken: secret}, dashboard.ErrInvalid, "BasicAuth.Password"},
		"blank token":          {dashboard.Options{BearerToken: "\t"}, dashboard.ErrInvalid, "BearerToken"},
		"colon in user":        {dashboard.Options{BasicAuth: &dashboard.BasicAuth{User: "a:b", Password: secret}}, dashboard.ErrInvalid, "BasicAuth.User"},
		"open and basic":       {dashboard.Options{Unauthenticated: true, BasicAuth: &dashboard.BasicAuth{User: "ops", Password: secret}}, dashboard.ErrInvalid, "Unauthenticated"},
		"open and token":       {dashboard.Options{Unauthenticated: true, BearerToken: secret}, dashboard.ErrInvalid, "Unauthenticated"},
	} {
		d, err := dashboard.New(insp, c.opts)
		if !errors.Is(err, c.want) || d != nil {
			t.Errorf("%s: New returned a dashboard: %t, and %v; want %v", name, d != nil, err, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.field) || strings.Contains(err.Error(), secret) {
			t.Errorf("%s: error %q should name %s and no secret", name, err, c.field)
		}
	}
	if _, err := dashboard.New(nil, dashboard.Options{Unauthenticated: true}); !errors.Is(err, dashboard.ErrInvalid) {
		t.Errorf("nil Inspector: %v", err)
	}
	for name, opts := range map[string]dashboard.Options{
		"basic":           {BasicAuth: &dashboard.BasicAuth{User: "ops", Password: secret}},
		"token":           {BearerToken: secret},
		"basic, no token": {BasicAuth: &dashboard.BasicAuth{User: "ops", Password: secret}, BearerToken: ""},
		"unauthenticated": {Unauthenticated: true},
	} {
		if _, err := dashboard.New(insp, opts); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestHostCheck: an unauthenticated dashboard answers only loopback Host
// names and AllowedHosts. A page of an attacker's site, its name pointed
// at 127.0.0.1 (DNS rebinding), sends its own Host and Origin: it must
// neither read the CSRF token nor a task, nor resume a queue. Before the
// check all three answered 200.
func TestHostCheck(t *testing.T) {
	t.Parallel()
	e := setup(t, dashboard.Options{Unauthenticated: true})
	_, port, err := net.SplitHostPort(strings.TrimPrefix(e.srv.URL, "http://"))
	must(t, err)
	tok := e.csrf()
	rebound := "rebind.attacker.example:" + port
	page := []string{"Host", rebound, "Origin", "http://" + rebound, "Sec-Fetch-Site", "same-origin"}
	for _, path := range []string{"/api/csrf", "/api/queues/" + e.q + "/tasks/" + e.dead[0], "/queues/" + e.q + "/tasks/" + e.dead[0], "/", "/assets/app.js"} {
		if r := e.get(path, page...); r.code != http.StatusMisdirectedRequest || !strings.Contains(r.body, "is not allowed") ||
			strings.Contains(r.body, e.dead[0]) || strings.Contains(r.body, tok) {
			t.Errorf("GET %s from a rebound name: %d %.300s, want 421", path, r.code, r.body)
		}
	}
	if r := e.do(http.MethodPost, "/api/queues/"+e.q+"/resume", nil, append(page, "X-CSRF-Token", tok)...); r.code != http.StatusMisdirectedRequest {
		t.Errorf("POST resume from a rebound name: %d %s", r.code, r.body)
	}
	if !e.info().Paused {
		t.Fatal("a request from a rebound name resumed the queue")
	}
	for _, host := range []string{"localhost:" + port, "LocalHost.:" + port, "127.0.0.1:" + port, "127.0.0.2", "[::1]:" + port, "[::1]", "localhost"} {
		if r := e.get("/api/queues/"+e.q+"/tasks/"+e.dead[0], "Host", host); r.code != 200 {
			t.Errorf("Host %s: %d %s", host, r.code, r.body)
		}
	}
	for _, host := range []string{"localhost.attacker.example", "127.0.0.1.nip.io", "0.0.0.0:" + port, "10.0.0.5"} {
		if r := e.get("/", "Host", host); r.code != http.StatusMisdirectedRequest {
			t.Errorf("Host %s: %d, want 421", host, r.code)
		}
	}
	// from the dashboard's own page, the action goes through
	if r := e.do(http.MethodPost, "/api/queues/"+e.q+"/resume", nil, "Origin", e.srv.URL, "X-CSRF-Token", tok); r.code != 200 || e.info().Paused {
		t.Fatalf("POST resume from localhost: %d %s", r.code, r.body)
	}

	t.Run("AllowedHosts", func(t *testing.T) {
		allowed := e.mountRaw(dashboard.Options{Unauthenticated: true, AllowedHosts: []string{"Dash.Example.com", "10.0.0.5:8080"}})
		for host, want := range map[string]int{"dash.example.com": 200, "DASH.example.com.:443": 200, "10.0.0.5": 200,
			"localhost": 200, "other.example.com": 421, "example.com": 421} {
			if code := allowed("/api/csrf", host); code != want {
				t.Errorf("AllowedHosts, Host %s: %d, want %d", host, code, want)
			}
		}
		if code := e.mountRaw(dashboard.Options{Unauthenticated: true, AllowedHosts: []string{"*"}})("/api/csrf", rebound); code != 200 {
			t.Errorf(`AllowedHosts "*": %d`, code)
		}
	})

	t.Run("Authenticated", func(t *testing.T) {
		// credentials a rebound page cannot send: no check unless asked for
		token := dashboard.Options{BearerToken: "tok-123"}
		if code := e.mountRaw(token)("/api/csrf", rebound, "Authorization", "Bearer tok-123"); code != 200 {
			t.Errorf("authenticated, any host: %d", code)
		}
		token.AllowedHosts = []string{"dash.example.com"}
		checked := e.mountRaw(token)
		if code := checked("/api/csrf", rebound, "Authorization", "Bearer tok-123"); code != 421 {
			t.Errorf("authenticated with AllowedHosts, foreign host: %d, want 421", code)
		}
		if code := checked("/api/csrf", "dash.example.com", "Authorization", "Bearer tok-123"); code != 200 {
			t.Errorf("authenticated with AllowedHosts, allowed host: %d", code)
		}
	})

	for _, bad := range [][]string{{""}, {"https://dash.example.com"}, {"dash example"}, {"ok.example", " "}} {
		if _, err := dashboard.New(e.insp, dashboard.Options{Unauthenticated: true, AllowedHosts: bad}); !errors.Is(err, dashboard.ErrInvalid) {
			t.Errorf("AllowedHosts %q: %v, want ErrInvalid", bad, err)
		}
	}
}

// mountRaw serves another dashboard over the same Redis and returns a
// GET that names a Host and headers, and gives back the status.
func (e *env) mountRaw(opts dashboard.Options) func(path, host string, header ...string) int {
	srv := httptest.NewServer(newDashboard(e.t, e.insp, opts))
	e.t.Cleanup(srv.Close)
	return func(path, host string, header ...string) int {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		must(e.t, err)
		req.Host = host
		for j := 0; j+1 < len(header); j += 2 {
			req.Header.Set(header[j], header[j+1])
		}
		res, err := http.DefaultClient.Do(req)
		must(e.t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		return res.StatusCode
	}
}
