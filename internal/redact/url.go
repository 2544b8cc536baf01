// Package redact hides the secrets a Redis URL may hold, for every
// message, log line and page that names the URL.
package redact

import (
	"net/url"
	"sort"
	"strings"
)

// Mask stands for a hidden secret.
const Mask = "xxxxx"

// URL returns raw with every secret it may hold replaced by Mask: the
// password of its user info (all of the user info when there is no
// colon, as a password is often written there alone), the value of
// every query option whose name says it holds a secret (password,
// sentinel_password, token, ...), the fragment, and any of these secrets
// written again elsewhere in raw. It reads raw by hand,
// not with url.Parse, so a URL that does not parse (a bad %-escape, a
// "/", "?", "#" or "@" in the password) is hidden as well as one that
// does: the user info runs to the last "@", which hides too much of a
// URL with an "@" in a query value, and never too little.
func URL(raw string) string {
	p := split(raw)
	var b strings.Builder
	b.WriteString(p.head)
	if p.hasUser {
		if name, _, ok := strings.Cut(p.user, ":"); ok && !strings.ContainsAny(name, "/?#") {
			b.WriteString(name + ":")
		}
		b.WriteString(Mask + "@")
	}
	b.WriteString(p.host)
	if p.hasQuery {
		b.WriteByte('?')
		for i, opt := range strings.Split(p.query, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			if name, value, ok := strings.Cut(opt, "="); ok && secretName(name) && value != "" {
				b.WriteString(name + "=" + Mask)
			} else {
				b.WriteString(opt)
			}
		}
	}
	if p.hasFrag {
		b.WriteString("#" + Mask)
	}
	// a secret written a second time where nothing is secret (db=<password>)
	return Scrub(b.String(), raw)
}

// Scrub returns text with every secret of raw (those URL hides) replaced
// by Mask, in their written and their unescaped forms: for messages of
// other code (go-redis's) that may quote a part of the URL.
func Scrub(text, raw string) string {
	secrets := Secrets(raw)
	// longest first, so that a secret inside another is not left half shown
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	for _, s := range secrets {
		text = strings.ReplaceAll(text, s, Mask)
	}
	return text
}

// Secrets returns the secrets URL hides in raw, each as written and
// unescaped; none is empty.
func Secrets(raw string) []string {
	var out []string
	add := func(s string) {
		if s == "" {
			return
		}
		out = append(out, s)
		if u, err := url.PathUnescape(s); err == nil && u != s && u != "" {
			out = append(out, u)
		}
		if u, err := url.QueryUnescape(s); err == nil && u != s && u != "" {
			out = append(out, u)
		}
	}
	p := split(raw)
	if p.hasUser {
		if name, pw, ok := strings.Cut(p.user, ":"); ok && !strings.ContainsAny(name, "/?#") {
			add(pw)
		} else {
			add(p.user)
		}
	}
	for _, opt := range strings.Split(p.query, "&") {
		if name, value, _ := strings.Cut(opt, "="); secretName(name) {
			add(value)
		}
	}
	add(p.frag)
	return out
}

// parts are the pieces of a URL that URL keeps or hides.
type parts struct {
	head, user, host, query, frag string
	hasUser, hasQuery, hasFrag    bool
}

// split cuts raw into its parts: the scheme with "://", the user info up
// to the last "@" (a host never holds one, and a password written
// unescaped may hold "/", "?", "#" or "@") that is not in the value of a
// secret option, the host and path, the query and the fragment.
func split(raw string) parts {
	var p parts
	rest := raw
	if i := strings.Index(raw, "://"); i >= 0 && !strings.ContainsAny(raw[:i], "@/?#:") {
		p.head, rest = raw[:i+3], raw[i+3:]
	}
	at := strings.LastIndex(rest, "@")
	for at >= 0 {
		// an "@" in a secret option's value: the user info ends before that option
		opt, secret := secretValue(rest, at)
		if !secret {
			break
		}
		at = strings.LastIndex(rest[:opt], "@")
	}
	if at >= 0 {
		p.user, rest, p.hasUser = rest[:at], rest[at+1:], true
	}
	rest, p.frag, p.hasFrag = strings.Cut(rest, "#")
	p.host, p.query, p.hasQuery = strings.Cut(rest, "?")
	return p
}

// secretValue reports whether byte i of rest, a URL after its scheme,
// lies in the value of a query option that holds a secret, and where that
// option starts (its "?" or "&").
func secretValue(rest string, i int) (start int, secret bool) {
	start = max(strings.LastIndex(rest[:i], "&"), strings.LastIndex(rest[:i], "?"))
	if start < 0 {
		return 0, false
	}
	name, _, ok := strings.Cut(rest[start+1:i], "=")
	return start, ok && !strings.ContainsAny(name, "@?#/") && secretName(name)
}

// secretName reports whether a query option of this name holds a secret.
func secretName(name string) bool {
	n := strings.ToLower(name)
	if u, err := url.QueryUnescape(n); err == nil {
		n = u
	}
	for _, w := range []string{"pass", "secret", "token", "auth", "key", "credential"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}
