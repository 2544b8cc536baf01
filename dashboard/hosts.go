package dashboard

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// hostSet is the Host names a dashboard answers. A page of another site
// whose name an attacker points at 127.0.0.1 (DNS rebinding) is, to the
// browser, of the same origin as the dashboard: it could read tasks and
// post actions to an unauthenticated one. Its requests name the
// attacker's host, so refusing hosts the dashboard was not told of stops
// it.
type hostSet struct {
	check bool // false: any Host (authenticated, no AllowedHosts)
	any   bool // AllowedHosts holds "*"
	names map[string]bool
}

// newHostSet reads Options.AllowedHosts: names or addresses, with or
// without a port, or "*".
func newHostSet(o Options) (hostSet, error) {
	s := hostSet{check: o.Unauthenticated || len(o.AllowedHosts) > 0, names: map[string]bool{}}
	for j, h := range o.AllowedHosts {
		switch name := hostName(h); {
		case h == "*":
			s.any = true
		case name == "":
			return s, fmt.Errorf("%w: AllowedHosts[%d] is empty", ErrInvalid, j)
		case strings.ContainsAny(strings.TrimSpace(h), "/?#@ \t"):
			return s, fmt.Errorf("%w: AllowedHosts[%d] %q is not a host name or address", ErrInvalid, j, h)
		default:
			s.names[name] = true
		}
	}
	return s, nil
}

// allows reports whether the dashboard answers a request for hostport,
// the request's Host.
func (s *hostSet) allows(hostport string) bool {
	if !s.check || s.any {
		return true
	}
	name := hostName(hostport)
	if name == "localhost" || s.names[name] {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// hostName is the host of hostport in lower case, without its port,
// brackets or a trailing dot: "[::1]:8080" is "::1", "Dash.Example.:80"
// is "dash.example".
func hostName(hostport string) string {
	h := strings.ToLower(strings.TrimSpace(hostport))
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	} else {
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	}
	return strings.TrimSuffix(h, ".")
}

// misdirected answers a request for a Host the dashboard does not answer
// with 421 Misdirected Request.
func (d *server) misdirected(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if len(host) > 100 {
		host = host[:100] + "..."
	}
	msg := fmt.Sprintf("dashboard: host %q is not allowed: this dashboard answers localhost, loopback addresses "+
		"and Options.AllowedHosts (shardq dashboard --allowed-host)", host)
	if isAPI(r) {
		writeJSONError(w, http.StatusMisdirectedRequest, msg)
		return
	}
	http.Error(w, msg, http.StatusMisdirectedRequest)
}
