package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"msched/hoststat"
	"msched/spool"
)

// msched hosts shows each host up or down, the reasons after the table,
// and a Slurm cluster's nodes as Slurm; --json carries the same.
func TestHostsCmd_ShowsDownHosts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	sp, err := spool.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	db := sp.Path(spool.DirDB)
	hosts := `- {name: here/cpu0, arch: x, cluster: here}
- {name: ws, arch: x, cluster: ws, address: "ssh://ws.example.org"}
- {name: n1, arch: x, cluster: c1, address: "slurm:///etc/slurm/c1.conf"}
`
	if err := os.WriteFile(filepath.Join(db, "hosts.yaml"), []byte(hosts), 0o644); err != nil {
		t.Fatal(err)
	}
	reason := "ssh: connect to host ws.example.org port 22: Connection refused"
	if err := hoststat.MarkDown(db, "ws", reason, time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		root := newRoot()
		var out bytes.Buffer
		root.SetArgs(append([]string{"--spool", dir, "hosts"}, args...))
		root.SetOut(&out)
		root.SetErr(&out)
		if err := root.Execute(); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		return out.String()
	}
	text := run()
	lines := strings.Split(text, "\n")
	if !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(lines[0], "STATE") {
		t.Fatalf("header %q", lines[0])
	}
	for _, want := range []string{"here/cpu0  up", "ws         down 1m", "c1 (Slurm)", "ws: down since ", reason} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	var got struct {
		Hosts []struct {
			Name, Kind, State string
			Down              *hoststat.DownInfo
		}
	}
	if err := json.Unmarshal([]byte(run("--json")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Hosts) != 3 || got.Hosts[0].Kind != "local" || got.Hosts[0].State != "up" ||
		got.Hosts[1].State != "down" || got.Hosts[1].Down == nil || got.Hosts[1].Down.Reason != reason || got.Hosts[2].Kind != "slurm" {
		t.Errorf("json %+v", got)
	}
}
