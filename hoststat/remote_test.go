package hoststat

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func openFixture(t *testing.T, path ...string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join(append([]string{"testdata"}, path...)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestParseRemote(t *testing.T) {
	for _, tc := range []struct {
		file string
		want Stats
	}{
		// A login script's greeting before the marker is passed over;
		// alice idle 13 min, bob active, carol on an X display (no idle).
		{"busy", Stats{Uptime: 10234.56, Load1: 1.25, Load5: 0.80, Load15: 0.40, NCPU: 8, Idle: 0}},
		{"nobody", Stats{Uptime: 99.5, Load5: 0.01, Load15: 0.05, NCPU: 2, Idle: NoUser}},
		{"old", Stats{Uptime: 4e6, Load1: 0.1, Load5: 0.1, Load15: 0.1, NCPU: 4, Idle: 24 * 3600}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := ParseRemote(openFixture(t, "remote", tc.file))
			if err != nil || got != tc.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	for _, bad := range []string{"", "uptime 1 2\n", "msched-stats-1\n", "msched-stats-1\n1 2\n0 0 0 1/1 1\nmany\n", "msched-stats-1\n1 2\n0 0\n2\n"} {
		if _, err := ParseRemote(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseRemote(openFixture(t, "remote", "noproc")); err == nil || !strings.Contains(err.Error(), "uptime") {
		t.Errorf("no /proc: %v", err)
	}
}

func TestParseWhoIdle(t *testing.T) {
	for in, want := range map[string]float64{
		"": NoUser,
		"alice    pts/0        Nov 24 01:02 00:13        4242 (h)\n":                                             13 * 60,
		"alice    pts/0        2026-11-24 01:02 02:05        4242 (h)\nbob pts/1 2026-11-24 01:02 00:01 1 (h)\n": 60,
		"carol    :0           Nov 20 09:00   ?           900 (:0)\n":                                            NoUser,
		"garbage\n": NoUser,
	} {
		if got := ParseWhoIdle(strings.NewReader(in)); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}

// The command runs under sh here as it does under a remote login shell, and
// its output parses.
func TestRemoteCommand_RunsLocally(t *testing.T) {
	if _, err := exec.LookPath("who"); err != nil {
		t.Skip("no who(1)")
	}
	out, err := exec.Command("sh", "-c", RemoteCommand).Output()
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseRemote(strings.NewReader(string(out)))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if s.Uptime <= 0 || s.NCPU < 1 || s.Load1 < 0 {
		t.Errorf("%+v", s)
	}
}

func TestParseSlurmPing(t *testing.T) {
	for file, want := range map[string]bool{"ping-up": true, "ping-down": false, "ping-backup": true} {
		up, detail, err := ParseSlurmPing(openFixture(t, "slurm", file))
		if err != nil || up != want || !strings.HasPrefix(detail, "Slurmctld(primary) at ") {
			t.Errorf("%s: up %v, %q, %v", file, up, detail, err)
		}
	}
	if _, _, err := ParseSlurmPing(strings.NewReader("scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error\n")); err == nil {
		t.Error("no controller line accepted")
	}
}

func TestParseSlurmNodes(t *testing.T) {
	utc := time.UTC
	nodes, err := ParseSlurmNodes(openFixture(t, "slurm", "nodes"), utc)
	if err != nil {
		t.Fatal(err)
	}
	boot := time.Date(2026, 11, 24, 1, 55, 37, 0, utc)
	want := []SlurmNode{
		{Name: "n1", State: "IDLE", CPUs: 2, Load: 0.22, LoadOK: true, BootTime: boot},
		{Name: "n2", State: "IDLE+DRAIN", CPUs: 4, Load: 1.5, LoadOK: true, BootTime: boot, Reason: "maint window [root@2026-11-24T02:10:45]"},
		{Name: "n3", State: "DOWN*", CPUs: 2, BootTime: boot, Reason: "Not responding [slurm@2026-11-24T02:15:00]"},
		{Name: "n4", State: "MIXED", CPUs: 2, Load: 0.97, LoadOK: true, BootTime: boot},
	}
	if len(nodes) != len(want) {
		t.Fatalf("%d nodes: %+v", len(nodes), nodes)
	}
	for i := range want {
		if nodes[i] != want[i] {
			t.Errorf("node %d: %+v, want %+v", i, nodes[i], want[i])
		}
	}
	downs := []bool{false, true, true, false}
	for i, n := range nodes {
		d, why := n.Down()
		if d != downs[i] || d && !strings.Contains(why, n.Name) {
			t.Errorf("%s down %v %q", n.Name, d, why)
		}
	}
	if _, why := nodes[1].Down(); why != "slurm: node n2 is drained (IDLE+DRAIN): maint window [root@2026-11-24T02:10:45]" {
		t.Errorf("drained: %q", why)
	}
	now := boot.Add(time.Hour)
	s, ok := nodes[1].Stats(now)
	if !ok || s != (Stats{Time: now, Uptime: 3600, Load1: 1.5, Load5: 1.5, Load15: 1.5, NCPU: 4, Idle: NoUser}) {
		t.Errorf("stats %+v %v", s, ok)
	}
	if _, ok := nodes[2].Stats(now); ok {
		t.Error("a node without CPULoad gave a sample")
	}
	for _, st := range []string{"IDLE~", "IDLE+POWERED_DOWN", "ALLOCATED", "MIXED+COMPLETING"} {
		if d, _ := (SlurmNode{Name: "x", State: st}).Down(); d {
			t.Errorf("%s taken as down", st)
		}
	}
	if _, err := ParseSlurmNodes(strings.NewReader("NodeName=x CPUTot=many\n"), nil); err == nil {
		t.Error("bad CPUTot accepted")
	}
}
