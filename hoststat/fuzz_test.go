package hoststat

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseHosts parses arbitrary bytes as a hosts file. It must not
// panic; a file it accepts has at least one host, unique names, each host
// valid; and what WriteHosts writes of those hosts parses back to the same
// hosts.
func FuzzParseHosts(f *testing.F) {
	for _, p := range []string{"testdata/hosts.yaml", "../examples/hetero/hosts128.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"- {name: a, arch: x}\n- {name: a, arch: y}\n",
		"- {name: n1, arch: generic, cluster: c, address: slurm://c/part}\n",
		"- {name: n1, arch: generic, address: slurm://c/part}\n",
		"- {name: 'a b', arch: x}\n",
		"- name: 1\n  arch: 2.5\n  address: ssh://u@h:22\n",
		"---\n---\n",
		"[]\n",
		"- [a]\n",
		"- {name: a, arch: x, colour: red}\n",
		"- &a {name: a, arch: x}\n- *a\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		hs, err := ParseHosts(data, "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "hoststat: fuzz") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(hs) == 0 {
			t.Fatal("accepted a file of no hosts")
		}
		seen := map[string]bool{}
		for _, h := range hs {
			if err := h.validate(); err != nil {
				t.Fatalf("accepted an invalid host %+v: %v", h, err)
			}
			if seen[h.Name] {
				t.Fatalf("accepted the name %q twice", h.Name)
			}
			seen[h.Name] = true
		}
		b, err := marshalHosts(hs)
		if err != nil {
			t.Fatalf("WriteHosts of accepted hosts: %v", err)
		}
		back, err := ParseHosts(b, "fuzz")
		if err != nil {
			t.Fatalf("reading back: %v\n%s", err, b)
		}
		if !reflect.DeepEqual(back, hs) {
			t.Fatalf("read back %+v, wrote %+v", back, hs)
		}
	})
}
