package redact

import (
	"strings"
	"testing"
)

// urlCases are Redis URLs of every form queue.NewRedisClient accepts,
// and some it refuses, each holding the secret "S3cr3t" (or the one
// named) somewhere a secret may go.
var urlCases = []struct {
	raw, want string
}{
	{"redis://u:S3cr3t@host:6379/0", "redis://u:xxxxx@host:6379/0"},
	{"redis://:S3cr3t@host:6379", "redis://:xxxxx@host:6379"},
	{"redis://S3cr3t@host:6379", "redis://xxxxx@host:6379"},
	{"rediss://u:S3cr3t@host:6380?dial_timeout=2s", "rediss://u:xxxxx@host:6380?dial_timeout=2s"},
	{"unix://u:S3cr3t@/run/redis.sock?db=2", "unix://u:xxxxx@/run/redis.sock?db=2"},
	{"unix:///run/redis.sock?db=2&password=S3cr3t", "unix:///run/redis.sock?db=2&password=xxxxx"},
	{"redis+cluster://u:S3cr3t@h1:7000?addr=h2:7001&addr=h3:7002", "redis+cluster://u:xxxxx@h1:7000?addr=h2:7001&addr=h3:7002"},
	{"rediss+cluster://u:S3cr3t@h1:7000", "rediss+cluster://u:xxxxx@h1:7000"},
	{"redis+sentinel://h1:26379?master_name=m&password=S3cr3t&addr=h2:26379", "redis+sentinel://h1:26379?master_name=m&password=xxxxx&addr=h2:26379"},
	{"rediss+sentinel://u:S3cr3t@h1:26379?master_name=m&sentinel_password=S3cr3t", "rediss+sentinel://u:xxxxx@h1:26379?master_name=m&sentinel_password=xxxxx"},
	{"redis+sentinel://h1:26379?PASSWORD=S3cr3t", "redis+sentinel://h1:26379?PASSWORD=xxxxx"},
	{"redis+sentinel://h1:26379?pass%77ord=S3cr3t", "redis+sentinel://h1:26379?pass%77ord=xxxxx"},
	// that do not parse
	{"redis://u:S3cr3t%zz@host:6379", "redis://u:xxxxx@host:6379"},
	{"redis://u:S3cr/3t@host:6379", "redis://u:xxxxx@host:6379"},
	{"redis://u:S3cr@3t@host:6379", "redis://u:xxxxx@host:6379"},
	{"redis://u:S3cr3t@[::1", "redis://u:xxxxx@[::1"},
	{"redis://u:S3cr3t@host:6379#frag", "redis://u:xxxxx@host:6379#xxxxx"},
	{"redis://host:6379#S3cr3t", "redis://host:6379#xxxxx"},
	{"redis://u:S3c?r3t@host:6379", "redis://u:xxxxx@host:6379"},
	{"redis://u:S3c#r3t@host:6379?db=1", "redis://u:xxxxx@host:6379?db=1"},
	{"redis://u:S3cr3t@host:6379?password=S3cr3t#S3cr3t", "redis://u:xxxxx@host:6379?password=xxxxx#xxxxx"},
	{"redis+sentinel://h:26379?master_name=m&password=S3@cr3t", "redis+sentinel://h:26379?master_name=m&password=xxxxx"},
	{"redis+sentinel://u:S3cr3t@h:26379?password=S3@cr3t", "redis+sentinel://u:xxxxx@h:26379?password=xxxxx"},
	// an "@" in a query value: all before it is hidden
	{"redis+cluster://h1:7000?addr=u:S3cr3t@h2:7001", "redis+cluster://h1:xxxxx@h2:7001"},
	{"u:S3cr3t@host:6379", "u:xxxxx@host:6379"},
	{"redis://u:S3cr3t\x00@host", "redis://u:xxxxx@host"},
	{"unix://u:S3cr3t@/tmp/x.sock?db=S3cr3t", "unix://u:xxxxx@/tmp/x.sock?db=xxxxx"},
	// no secret: unchanged
	{"redis://host:6379/0?dial_timeout=2s", "redis://host:6379/0?dial_timeout=2s"},
	{"unix:///run/redis.sock", "unix:///run/redis.sock"},
	{"", ""},
}

// TestURL: every form hides its secret and keeps what helps a reader
// (scheme, user, host, options).
func TestURL(t *testing.T) {
	for _, c := range urlCases {
		got := URL(c.raw)
		if got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.raw, got, c.want)
		}
		if strings.Contains(got, "S3cr") {
			t.Errorf("URL(%q) = %q shows the secret", c.raw, got)
		}
	}
}

// TestScrub: a message quoting any part of the URL's secret, as written
// or unescaped, shows it masked; the rest of the message stays.
func TestScrub(t *testing.T) {
	raw := "redis+sentinel://u:p%40ss@h:1?master_name=m&sentinel_password=tok%2Fen"
	msg := `redis: bad "p%40ss" "p@ss" "tok%2Fen" "tok/en" master_name=m`
	got := Scrub(msg, raw)
	if want := `redis: bad "xxxxx" "xxxxx" "xxxxx" "xxxxx" master_name=m`; got != want {
		t.Fatalf("Scrub = %q, want %q", got, want)
	}
	for _, c := range urlCases {
		if got := Scrub("quoted: "+c.raw, c.raw); strings.Contains(got, "S3cr") {
			t.Errorf("Scrub of %q shows the secret: %q", c.raw, got)
		}
	}
}

// FuzzURL: a password, or a secret option's value, of any bytes, in a URL
// of any scheme never shows in URL's result, nor in a message Scrub cleans,
// unless the same bytes show when the secret is not written at all (then
// the other parts of the URL hold them, and they tell nothing).
func FuzzURL(f *testing.F) {
	f.Add(uint8(0), "u", "S3cr3t", "host:6379", "db", "0")
	f.Add(uint8(2), "", "S3cr3t%zz", "h1:7000", "addr", "h2:7001")
	f.Add(uint8(4), "u", "p/a?s#s@w", "h1:26379", "master_name", "m")
	f.Add(uint8(5), "u", "x", "[::1", "password", "S3cr3t")
	schemes := []string{"redis://", "rediss://", "redis+cluster://", "rediss+cluster://", "redis+sentinel://", "rediss+sentinel://", "unix://"}
	f.Fuzz(func(t *testing.T, scheme uint8, user, password, host, opt, value string) {
		// a user name, a host and an option's name hold none of the
		// characters that end a part; a password and a value may hold any
		if strings.ContainsAny(user, "?#@/:&=") || strings.ContainsAny(host, "?#@&=") {
			return
		}
		head := schemes[int(scheme)%len(schemes)]
		build := func(password, value string) string {
			return head + user + ":" + password + "@" + host + "?" + opt + "=" + value
		}
		raw := build(password, value)
		if password != "" && !strings.Contains(URL(build("", value)), password) {
			if got := URL(raw); strings.Contains(got, password) {
				t.Fatalf("URL(%q) = %q shows the password %q", raw, got, password)
			}
			if got := Scrub(raw, raw); strings.Contains(got, password) {
				t.Fatalf("Scrub of %q = %q shows the password %q", raw, got, password)
			}
		}
		// an unescaped "&" or "#" ends the option: what follows is no longer its value
		if secretName(opt) && value != "" && !strings.ContainsAny(value, "&#") && !strings.ContainsAny(opt, "&#=@?/") && !strings.Contains(URL(build(password, "")), value) {
			if got := URL(raw); strings.Contains(got, value) {
				t.Fatalf("URL(%q) = %q shows the %s %q", raw, got, opt, value)
			}
		}
	})
}
