package notify

import (
	"context"
	"errors"
	"testing"
)

// fakeResolver answers from maps; a name it does not know is an error.
type fakeResolver struct {
	cname map[string]string
	hosts map[string][]string
	ptr   map[string][]string
}

var errNotFound = errors.New("no such host")

func (f fakeResolver) LookupCNAME(_ context.Context, h string) (string, error) {
	if c, ok := f.cname[h]; ok {
		return c, nil
	}
	return "", errNotFound
}

func (f fakeResolver) LookupHost(_ context.Context, h string) ([]string, error) {
	if a, ok := f.hosts[h]; ok {
		return a, nil
	}
	return nil, errNotFound
}

func (f fakeResolver) LookupAddr(_ context.Context, a string) ([]string, error) {
	if n, ok := f.ptr[a]; ok {
		return n, nil
	}
	return nil, errNotFound
}

// fqdn is tested with a fake resolver only: FQDN asks the machine's, whose
// answers a test cannot know (and FQDN is never empty: its fallback is
// the host name, else "localhost").
func TestFQDN(t *testing.T) {
	for _, c := range []struct {
		name, host string
		r          fakeResolver
		want       string
	}{
		{"already qualified", "node7.example.org", fakeResolver{}, "node7.example.org"},
		{"canonical name", "node7", fakeResolver{cname: map[string]string{"node7": "node7.example.org."}}, "node7.example.org"},
		// Debian's /etc/hosts: 127.0.1.1 node7.example.org node7
		{"reverse of its address", "node7", fakeResolver{cname: map[string]string{"node7": "node7"},
			hosts: map[string][]string{"node7": {"127.0.1.1"}}, ptr: map[string][]string{"127.0.1.1": {"node7", "node7.example.org"}}},
			"node7.example.org"},
		{"its own name first", "node7", fakeResolver{hosts: map[string][]string{"node7": {"192.0.2.7", "192.0.2.8"}},
			ptr: map[string][]string{"192.0.2.7": {"ec2-192-0-2-7.compute.example.com."}, "192.0.2.8": {"NODE7.example.org."}}},
			"NODE7.example.org"},
		{"another name of its address", "node7", fakeResolver{hosts: map[string][]string{"node7": {"192.0.2.7"}},
			ptr: map[string][]string{"192.0.2.7": {"ec2-192-0-2-7.compute.example.com."}}}, "ec2-192-0-2-7.compute.example.com"},
		{"localhost does not count", "vm", fakeResolver{cname: map[string]string{"vm": "vm"}, hosts: map[string][]string{"vm": {"127.0.0.1"}},
			ptr: map[string][]string{"127.0.0.1": {"localhost", "localhost.localdomain", "vm"}}}, "vm"},
		{"nothing known", "vm", fakeResolver{}, "vm"},
	} {
		if got := fqdn(context.Background(), c.host, c.r); got != c.want {
			t.Errorf("%s: fqdn(%q) = %q, want %q", c.name, c.host, got, c.want)
		}
	}
}

func TestDefaultFrom(t *testing.T) {
	for _, c := range []struct{ host, domain, want string }{
		{"node7.example.org", "", "msched@node7.example.org"},
		{"node7.example.org", "example.com", "msched@node7.example.org"},
		{"node7", "example.com", "msched@example.com"},
		{"node7", "", "msched@node7"},
	} {
		if got := DefaultFrom(c.host, c.domain); got != c.want {
			t.Errorf("DefaultFrom(%q, %q) = %q, want %q", c.host, c.domain, got, c.want)
		}
	}
}
