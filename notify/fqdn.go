package notify

import (
	"context"
	"net"
	"os"
	"strings"
	"time"
)

// fqdnTimeout bounds the resolver's part in FQDN: a mailer that cannot
// learn its name in that time uses what it has, rather than hold up the
// reaper's start.
const fqdnTimeout = 2 * time.Second

// FQDN is this host's fully qualified name, for the default sender
// (msched@FQDN), the EHLO name and the Message-IDs: mail servers refuse
// or rewrite a sender whose domain is a bare host name (Postfix's
// reject_non_fqdn_sender). As `hostname -f` finds it: the host name when
// it has a dot; else the canonical name the resolver gives for it
// (/etc/hosts, then DNS); else a name with a dot that a reverse lookup of
// one of its addresses gives, one that begins with the host name first;
// "localhost" names do not count. Failing all that, the bare host name
// ("localhost" when the system has none).
func FQDN() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "localhost"
	}
	ctx, cancel := context.WithTimeout(context.Background(), fqdnTimeout)
	defer cancel()
	return fqdn(ctx, h, net.DefaultResolver)
}

// resolver is what fqdn asks of net.Resolver.
type resolver interface {
	LookupCNAME(ctx context.Context, host string) (string, error)
	LookupHost(ctx context.Context, host string) ([]string, error)
	LookupAddr(ctx context.Context, addr string) ([]string, error)
}

func fqdn(ctx context.Context, host string, r resolver) string {
	if qualified(host) {
		return host
	}
	if c, err := r.LookupCNAME(ctx, host); err == nil {
		if c = strings.TrimSuffix(c, "."); qualified(c) {
			return c
		}
	}
	addrs, err := r.LookupHost(ctx, host)
	if err != nil {
		return host
	}
	other := ""
	for _, a := range addrs {
		names, err := r.LookupAddr(ctx, a)
		if err != nil {
			continue
		}
		for _, n := range names {
			n = strings.TrimSuffix(n, ".")
			switch {
			case !qualified(n):
			case strings.HasPrefix(strings.ToLower(n), strings.ToLower(host)+"."):
				return n
			case other == "":
				other = n
			}
		}
	}
	if other != "" {
		return other
	}
	return host
}

// qualified: a name with a dot that is not one of localhost's.
func qualified(name string) bool {
	l := strings.ToLower(name)
	return strings.Contains(strings.Trim(l, "."), ".") && l != "localhost" && !strings.HasPrefix(l, "localhost.") &&
		net.ParseIP(name) == nil
}

// DefaultFrom is the sender when smtp.from is not set: msched@host when
// host is fully qualified; else, with mail.domain set, msched@domain (the
// users' domain, which the site's server takes mail from); else
// msched@host all the same.
func DefaultFrom(host, domain string) string {
	if !qualified(host) && domain != "" {
		return "msched@" + domain
	}
	return "msched@" + host
}
