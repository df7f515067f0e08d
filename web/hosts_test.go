package web

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"msched/hoststat"
	"msched/spool"
)

// /api/hosts and the hosts page show each host up or down, with the reason
// and since when, and how it is reached (a Slurm cluster's nodes as Slurm).
func TestHosts_ShowDownAndKind(t *testing.T) {
	sp, err := spool.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	db := sp.Path(spool.DirDB)
	hostsFile := filepath.Join(db, "hosts.yaml")
	yaml := `- {name: here/cpu0, arch: x, cluster: here}
- {name: ws, arch: x, cluster: ws, address: "ssh://alice@ws.example.org:2222"}
- {name: n1, arch: x, cluster: c1, address: "slurm:///etc/slurm/c1.conf"}
- {name: n2, arch: x, cluster: c1, address: "slurm:///etc/slurm/c1.conf"}
`
	if err := os.WriteFile(hostsFile, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	since := now.Add(-3 * time.Minute)
	for _, h := range []string{"ws", "n2", "gone"} {
		reason := "ssh: connect to host ws.example.org port 2222: Connection refused"
		if h != "ws" {
			reason = "slurm: the controller does not answer: Slurmctld(primary) at ctl is DOWN"
		}
		if err := hoststat.MarkDown(db, h, reason, since); err != nil {
			t.Fatal(err)
		}
	}
	h := New(Config{Spool: sp, HostsFile: hostsFile, Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler)})

	var hv []HostView
	decode(t, get(t, h, "/api/hosts"), &hv)
	want := []struct{ name, kind, state string }{{"here/cpu0", "local", "up"}, {"ws", "ssh", "down"}, {"n1", "slurm", "up"}, {"n2", "slurm", "down"}}
	if len(hv) != len(want) {
		t.Fatalf("%d hosts: %+v", len(hv), hv)
	}
	for i, w := range want {
		v := hv[i]
		if v.Name != w.name || v.Kind != w.kind || v.State != w.state || (v.Down != nil) != (w.state == "down") {
			t.Errorf("host %d: %+v, want %+v", i, v, w)
		}
		if v.Down != nil && (!v.Down.Since.Equal(since) || v.Down.Reason == "") {
			t.Errorf("%s: down %+v", v.Name, v.Down)
		}
	}

	body := get(t, h, "/hosts").Body.String()
	for _, s := range []string{
		`data-host="ws" data-state="down"`,
		`down since 2026-11-24 11:57:00 UTC (3m0s ago)`,
		`Connection refused`,
		`data-host="n1" data-state="up"`,
		`>(Slurm)</span>`,
		`>(ssh)</span>`,
	} {
		if !strings.Contains(body, s) {
			t.Errorf("hosts page lacks %q", s)
		}
	}
	if strings.Contains(body, `data-host="gone"`) {
		t.Error("a record of a host not in the hosts file is shown")
	}
}
