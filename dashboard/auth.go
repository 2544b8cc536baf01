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

// authenticate checks the request's credentials against the options. It
// returns the basic-auth user (for the CSRF token), whether a bearer
// token authenticated it, and whether it may go on.
func (d *Dashboard) authenticate(r *http.Request) (user string, bearer, ok bool) {
	if d.opts.Unauthenticated {
		return "", false, true
	}
	ba, tok := d.opts.BasicAuth, d.opts.BearerToken
	if tok != "" {
		if got, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found && equal(got, tok) {
			return "", true, true
		}
	}
	if ba != nil {
		if u, p, found := r.BasicAuth(); found && equal(u, ba.User) && equal(p, ba.Password) {
			return u, false, true
		}
	}
	return "", false, false
}

// equal compares secrets in constant time.
func equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// challenge answers an unauthenticated request with 401.
func (d *Dashboard) challenge(w http.ResponseWriter, r *http.Request) {
	if d.opts.BasicAuth != nil {
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
func (d *Dashboard) checkAction(r *http.Request, user string, bearer bool) error {
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
func (d *Dashboard) csrfToken(user string) string {
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
