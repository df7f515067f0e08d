package web

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
)

// HostNames is the set of names a request's Host header may carry. It is
// the defence against DNS rebinding: a page on evil.example whose name the
// attacker re-points at 127.0.0.1 is same-origin, for the browser, with the
// status page on 127.0.0.1:8080, but its requests carry Host: evil.example.
// An IP literal or localhost in Host is never such a request: the attacker
// cannot make a browser's origin be an address or a name it does not control
// the resolution of.
type HostNames struct {
	names map[string]bool // lower case, without port, brackets or trailing dot
	anyIP bool
}

// AllowHosts returns the names a server listening on listen ("host:port",
// as web.addr) answers to: names (web.hosts), and
//   - listen's own host (an address or a name);
//   - localhost, 127.0.0.1 and ::1 when that host is a loopback address or
//     localhost;
//   - when listen has no host or an unspecified one (":8080",
//     "0.0.0.0:8080", "[::]:8080"): any IP literal, localhost and this
//     machine's name (os.Hostname), because which of its addresses a client
//     uses is not known here.
//
// listen "" (a CGI program, behind a web server whose virtual hosts choose
// the names) allows names only. A name may carry a port, which is ignored:
// the port does not tell a rebinding page from the real one.
func AllowHosts(listen string, names []string) (*HostNames, error) {
	a := &HostNames{names: map[string]bool{}}
	for _, n := range names {
		h := hostPart(n)
		if h == "" || strings.ContainsAny(h, "/ \t*") {
			return nil, fmt.Errorf("web: hosts: %q is not a host name or address", n)
		}
		a.names[h] = true
	}
	if listen == "" {
		return a, nil
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("web: address %q: %w", listen, err)
	}
	host = hostPart(host)
	ip, ipErr := netip.ParseAddr(host)
	switch {
	case host == "" || (ipErr == nil && ip.IsUnspecified()):
		a.anyIP = true
		a.names["localhost"] = true
		if hn, err := os.Hostname(); err == nil && hn != "" {
			a.names[hostPart(hn)] = true
		}
	case host == "localhost" || (ipErr == nil && ip.IsLoopback()):
		for _, n := range []string{host, "localhost", "127.0.0.1", "::1"} {
			a.names[n] = true
		}
	default:
		a.names[host] = true
	}
	return a, nil
}

// Allows says whether a request with this Host header is for this page.
func (a *HostNames) Allows(host string) bool {
	h := hostPart(host)
	if h == "" {
		return false
	}
	if a.anyIP {
		if _, err := netip.ParseAddr(h); err == nil {
			return true
		}
	}
	return a.names[h]
}

// hostPart is a Host header's or an address's host, normalised: without
// port and IPv6 brackets, lower case, without the trailing dot of a fully
// qualified name.
func hostPart(s string) string {
	if h, _, err := net.SplitHostPort(s); err == nil {
		s = h
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	return strings.TrimSuffix(strings.ToLower(s), ".")
}
