package hoststat

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestParseCPUModels(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []Host
	}{
		{"testdata/cpuinfo-x86", []Host{
			{Name: "m/cpu0", Arch: "Intel(R) Xeon(R) Processor", Cluster: "m", Address: "local"},
			{Name: "m/cpu1", Arch: "Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz", Cluster: "m", Address: "local"},
			{Name: "m/cpu2", Arch: "Intel(R) Xeon(R) Processor", Cluster: "m", Address: "local"},
		}},
		{"testdata/cpuinfo-arm64", []Host{
			{Name: "m/cpu0", Arch: runtime.GOARCH, Cluster: "m", Address: "local"},
			{Name: "m/cpu1", Arch: runtime.GOARCH, Cluster: "m", Address: "local"},
			{Name: "m/cpu2", Arch: runtime.GOARCH, Cluster: "m", Address: "local"},
		}},
	} {
		f, err := os.Open(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		models, err := ParseCPUModels(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := cpuHosts("m", models, 3); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v", tc.file, got)
		}
	}
}

func TestLocalHosts(t *testing.T) {
	hosts, err := LocalHosts()
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != runtime.NumCPU() || !hosts[0].IsLocal() || !strings.HasSuffix(hosts[0].Name, "/cpu0") || hosts[0].Arch == "" {
		t.Fatalf("got %+v", hosts)
	}
	// Local hosts must be writable as a hosts file and read back.
	path := filepath.Join(t.TempDir(), "hosts.yaml")
	if err := WriteHosts(path, hosts); err != nil {
		t.Fatal(err)
	}
	if back, err := LoadHosts(path); err != nil || !reflect.DeepEqual(back, hosts) {
		t.Fatalf("round trip: %v %+v", err, back)
	}
}

func TestLoadHosts(t *testing.T) {
	hosts, err := LoadHosts("testdata/hosts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []Host{
		{Name: "sun1", Arch: "SunUltra1", Cluster: "lab", Address: "ssh://sun1.example.org"},
		{Name: "sun2", Arch: "SunUltra1", Cluster: "lab", Address: "ssh://ms@sun2.example.org:2222"},
		{Name: "here/cpu0", Arch: "Intel(R) Xeon(R) Processor", Address: "local"},
	}
	if !reflect.DeepEqual(hosts, want) {
		t.Fatalf("got %+v", hosts)
	}
	if hosts[0].IsLocal() || !hosts[2].IsLocal() {
		t.Error("IsLocal wrong")
	}
	path := filepath.Join(t.TempDir(), "h.yaml")
	if err := WriteHosts(path, hosts); err != nil {
		t.Fatal(err)
	}
	if back, err := LoadHosts(path); err != nil || !reflect.DeepEqual(back, hosts) {
		t.Fatalf("round trip: %v %+v", err, back)
	}
}

func TestParseHosts_Errors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"empty", "", "h.yaml: no hosts"},
		{"comment only", "# nothing\n", "h.yaml: no hosts"},
		{"empty list", "[]\n", "h.yaml: no hosts"},
		{"not a list", "name: a\narch: x\n", "h.yaml:1: want a list of hosts"},
		{"item not a mapping", "- a\n", "h.yaml:1: host 1: want a mapping"},
		{"unknown field", "- name: a\n  arch: x\n  cpus: 4\n", `h.yaml:3: host 1: unknown field "cpus"`},
		{"missing arch", "- name: a\n  arch: x\n- name: b\n", `h.yaml:3: host 2: field "arch": required`},
		{"missing name", "- arch: x\n", `h.yaml:1: host 1: field "name": required`},
		{"duplicate name", "- {name: a, arch: x}\n- {name: a, arch: y}\n", `h.yaml:2: host 2: field "name": "a" already used on line 1`},
		{"field twice", "- name: a\n  arch: x\n  name: b\n", `h.yaml:3: host 1: field "name" given twice`},
		{"not a string", "- name: a\n  arch: [x]\n", `h.yaml:2: host 1: field "arch": want a string`},
		{"null", "- name: a\n  arch: ~\n", `h.yaml:2: host 1: field "arch": want a string`},
		{"comma in name", "- {name: 'a,b', arch: x}\n", `h.yaml:1: host 1: field "name": "a,b" holds white space or a comma`},
		{"comma in cluster", "- {name: a, arch: x, cluster: 'c,d'}\n", `h.yaml:1: host 1: field "cluster": "c,d" holds white space or a comma`},
		{"two documents", "- {name: a, arch: x}\n---\n- {name: b, arch: x}\n", "more than one YAML document"},
		{"syntax", "- name: [a\n", "h.yaml: yaml:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHosts([]byte(tc.yaml), "h.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "hoststat: ") {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestWriteHosts_Invalid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.yaml")
	for _, hosts := range [][]Host{nil, {{Name: "a"}}, {{Name: "a", Arch: "x"}, {Name: "a", Arch: "x"}}} {
		if err := WriteHosts(path, hosts); err == nil {
			t.Errorf("wrote invalid %+v", hosts)
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Error("an invalid hosts file was written")
	}
}

func TestParseAddress(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Address
		bad  string
	}{
		{in: "", want: Address{Kind: KindLocal}},
		{in: "local", want: Address{Kind: KindLocal}},
		{in: "ssh://node02", want: Address{Kind: KindSSH, Host: "node02"}},
		{in: "ssh://alice@127.0.0.2:2222", want: Address{Kind: KindSSH, User: "alice", Host: "127.0.0.2", Port: 2222}},
		{in: "ssh://[::1]:22", want: Address{Kind: KindSSH, Host: "::1", Port: 22}},
		{in: "slurm:///etc/slurm/c1.conf", want: Address{Kind: KindSlurm, SlurmConf: "/etc/slurm/c1.conf"}},
		{in: "slurm:///etc/slurm/c1.conf?partition=debug", want: Address{Kind: KindSlurm, SlurmConf: "/etc/slurm/c1.conf", Partition: "debug"}},
		{in: "ssh://", bad: "want ssh://"},
		{in: "ssh://-oProxyCommand=x", bad: "may not start with '-'"},
		{in: "ssh://a:b@host", bad: "no passwords"},
		{in: "ssh://host:99999", bad: "port"},
		{in: "ssh://host/path", bad: "nothing after it"},
		{in: "slurm://relative.conf", bad: "absolute"},
		{in: "slurm:///c.conf?x=1", bad: "unknown parameter"},
		{in: "rsh://host", bad: "want local, ssh://"},
	} {
		got, err := ParseAddress(tc.in)
		if tc.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%q: got %+v, %v; want an error saying %q", tc.in, got, err, tc.bad)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if back, err := ParseAddress(got.String()); err != nil || back != got {
			t.Errorf("%q: String %q reads back as %+v, %v", tc.in, got.String(), back, err)
		}
	}
}

func TestParseHosts_Clusters(t *testing.T) {
	for _, tc := range []struct{ doc, bad string }{
		{`[{name: a, arch: x, cluster: c1, address: "slurm:///c1.conf"}, {name: b, arch: x, cluster: c1, address: "slurm:///c1.conf"}]`, ""},
		{`[{name: a, arch: x, address: "slurm:///c1.conf"}]`, "required for a Slurm node"},
		{`[{name: a, arch: x, cluster: c1, address: "slurm:///c1.conf"}, {name: b, arch: x, cluster: c1, address: "ssh://h"}]`, "mixes Slurm nodes"},
		{`[{name: a, arch: x, cluster: c1, address: "slurm:///c1.conf"}, {name: b, arch: x, cluster: c1, address: "slurm:///c2.conf"}]`, "same slurm.conf"},
		{`[{name: a, arch: x, address: "ftp://h"}]`, `field "address"`},
		// The run daemon starts a job through one launcher: this machine's
		// CPUs and an ssh host cannot run one job together.
		{`[{name: a, arch: x, cluster: ws, address: local}, {name: b, arch: x, cluster: ws, address: "ssh://h"}]`, "mixes local and ssh hosts"},
		{`[{name: a, arch: x}, {name: b, arch: x, address: "ssh://h"}]`, "mixes local and ssh hosts"},
		{`[{name: a, arch: x, cluster: ws, address: "ssh://h1"}, {name: b, arch: x, cluster: ws, address: "ssh://u@h2:22"}]`, ""},
	} {
		_, err := ParseHosts([]byte(tc.doc), "hosts.yaml")
		if (err == nil) != (tc.bad == "") || (err != nil && !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("%s: got %v, want %q", tc.doc, err, tc.bad)
		}
	}
}

// A host's launcher: this machine, ssh (whatever the destination: one
// launcher reaches every ssh host), or one partition of a Slurm cluster
// (a job is one sbatch, of one partition).
func TestLauncher(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"", "local"}, {"local", "local"},
		{"ssh://127.0.0.2", "ssh"}, {"ssh://u@127.0.0.3:2222", "ssh"},
		{"slurm:///etc/a/slurm.conf", "slurm:///etc/a/slurm.conf"},
		{"slurm:///etc/a/slurm.conf?partition=p", "slurm:///etc/a/slurm.conf?partition=p"},
		{"slurm:///etc/b/slurm.conf", "slurm:///etc/b/slurm.conf"},
		{"ftp://x", "ftp://x"}, // no launcher reaches it
	} {
		if got := (Host{Name: "h", Address: tc.addr}).Launcher(); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.addr, got, tc.want)
		}
	}
}
