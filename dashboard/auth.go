package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
)

// Errors of the request checks; each maps to its HTTP status in fail.
var (
	errReadOnly  = errors.New("dashboard: read-only: actions are disabled")
	errCSRF      = errors.New("dashboard: missing or invalid CSRF token")
	errForbidden = errors.New("dashboard: cross-origin request rejected")
)

// credentials are the secrets of Options as SHA-256 digests: compared
// in constant time whatever their lengths, and never kept in the clear
// where a dump of the server would print them.
type credentials struct {
	basic, bearer     bool
	user, pass, token [sha256.Size]byte
	// compare is subtle.ConstantTimeCompare; a test counts its calls
	compare func(a, b []byte) int
}

func newCredentials(o Options) credentials {
	c := credentials{compare: subtle.ConstantTimeCompare}
	if o.BasicAuth != nil {
		c.basic, c.user, c.pass = true, sha256.Sum256([]byte(o.BasicAuth.User)), sha256.Sum256([]byte(o.BasicAuth.Password))
	}
	if o.BearerToken != "" {
		c.bearer, c.token = true, sha256.Sum256([]byte(o.BearerToken))
	}
	return c
}

// equal compares got with a secret's digest in constant time: 1 when
// they match, else 0.
func (c *credentials) equal(got string, want [sha256.Size]byte) int {
	sum := sha256.Sum256([]byte(got))
	return c.compare(sum[:], want[:])
}

// authenticate checks the request's credentials against the options. It
// returns the basic-auth user (for the CSRF token), whether a bearer
// token authenticated it, and whether it may go on.
func (d *server) authenticate(r *http.Request) (user string, bearer, ok bool) {
	if d.opts.Unauthenticated {
		return "", false, true
	}
	c := &d.creds
	if c.bearer {
		if got, found := bearerToken(r.Header.Get("Authorization")); found && c.equal(got, c.token) == 1 {
			return "", true, true
		}
	}
	if c.basic {
		// both compared whatever the first gives: && would tell by its
		// time whether the user was right
		if u, p, found := r.BasicAuth(); found && c.equal(u, c.user)&c.equal(p, c.pass) == 1 {
			return u, false, true
		}
	}
	return "", false, false
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header. The scheme is case-insensitive (RFC 9110, section 11.1).
func bearerToken(h string) (string, bool) {
	scheme, tok, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	return tok, tok != ""
}

// challenge answers an unauthenticated request with 401.
func (d *server) challenge(w http.ResponseWriter, r *http.Request) {
	if d.creds.basic {
		w.Header().Set("WWW-Authenticate", `Basic realm="`+d.opts.Title+`", charset="UTF-8"`)
	} else {
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+d.opts.Title+`"`)
	}
	if isAPI(r) {
		writeJSONError(w, http.StatusUnauthorized, "authentication required")
		return
	}
	http.Error(w, "authentication required", http.StatusUnauthorized)
}

// checkAction guards every request that is not a GET: read-only mode,
// cross-origin requests (Sec-Fetch-Site, Origin), and the CSRF token in
// the "csrf" form field or the X-CSRF-Token header. A request
// authenticated by bearer token needs no CSRF token: browsers never send
// that header on their own.
func (d *server) checkAction(r *http.Request, user string, bearer bool) error {
	if d.opts.ReadOnly {
		return errReadOnly
	}
	if err := d.cop.Check(r); err != nil {
		return errForbidden
	}
	if bearer {
		return nil
	}
	got := r.Header.Get("X-CSRF-Token")
	if got == "" {
		r.Body = http.MaxBytesReader(nil, r.Body, 64<<10)
		got = r.PostFormValue("csrf")
	}
	if !hmac.Equal([]byte(got), []byte(d.csrfToken(user))) {
		return errCSRF
	}
	return nil
}

// csrfToken is the token for user: an HMAC of the user under the
// dashboard's key, so it cannot be guessed, and a page of one user is no
// use to another.
func (d *server) csrfToken(user string) string {
	m := hmac.New(sha256.New, d.csrf)
	m.Write([]byte("shardq-dashboard-csrf\x00" + user))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

type userKey struct{}

func withUser(r *http.Request, user string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), userKey{}, user))
}

func userOf(r *http.Request) string {
	u, _ := r.Context().Value(userKey{}).(string)
	return u
}

// isAPI reports whether r is for the JSON API.
func isAPI(r *http.Request) bool {
	return r.URL.Path == "/api" || strings.HasPrefix(r.URL.Path, "/api/")
}
