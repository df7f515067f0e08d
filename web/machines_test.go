package web

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"msched/hoststat"
)

// CPU slots are grouped under their machine, whose load, CPUs and uptime
// are shown once, on its row; a host of its own keeps its one row.
func TestHosts_GroupedByMachine(t *testing.T) {
	sp := newSpool(t)
	db := sp.Path("db")
	hostsFile := filepath.Join(db, "hosts.yaml")
	yaml := `- {name: big/cpu0, arch: x, cluster: big}
- {name: big/cpu1, arch: x, cluster: big}
- {name: big/cpu2, arch: x, cluster: big}
- {name: ws, arch: y, cluster: ws, address: "ssh://ws.example.org"}
`
	if err := os.WriteFile(hostsFile, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := hoststat.OpenStore(db, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"big/cpu0", "big/cpu1", "big/cpu2"} {
		if err := st.Record(h, hoststat.Stats{Time: testNow.Add(-time.Minute), Load1: 1.25, Load5: 1, Load15: 0.5, NCPU: 3, Uptime: 7200, Idle: -1}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	h := New(Config{Spool: sp, HostsFile: hostsFile, Now: func() time.Time { return testNow }, Log: slog.New(slog.DiscardHandler)})
	body := get(t, h, "/hosts").Body.String()
	if n := strings.Count(body, "1.25 / 1.00 / 0.50"); n != 1 {
		t.Errorf("the machine's load is shown %d times, want once", n)
	}
	for _, s := range []string{`<tr class="machine" data-machine="big">`, `<tr class="slot" data-host="big/cpu1" data-state="up" data-machine="big">`,
		`title="big/cpu1">cpu1</td>`, `data-host="ws" data-state="up" data-machine="ws"`, `· 3 slots`} {
		if !strings.Contains(body, s) {
			t.Errorf("hosts page lacks %q", s)
		}
	}
	var hv []HostView
	decode(t, get(t, h, "/api/hosts"), &hv)
	if len(hv) != 4 || hv[1].Machine != "big" || hv[3].Machine != "ws" {
		t.Errorf("api/hosts machines: %+v", hv)
	}
}
