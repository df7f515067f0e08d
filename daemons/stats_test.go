package daemons

import (
	"testing"
	"time"

	"msched/hoststat"
)

func TestStats_RecordsLocalHosts(t *testing.T) {
	sp := newTestSpool(t)
	store, err := hoststat.OpenStore(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	hosts := []hoststat.Host{{Name: "cpu0", Arch: "x"}, {Name: "cpu1", Arch: "x", Address: "local"}}
	startDaemon(t, (&Stats{Env: testEnv(t, sp), Hosts: hosts, Interval: 20 * time.Millisecond, Store: store}).Run)
	eventually(t, "three samples of each local host", func() bool {
		return len(store.History("cpu0")) >= 3 && len(store.History("cpu1")) >= 3
	})
	s := store.History("cpu0")[0]
	if s.Uptime <= 0 || s.NCPU <= 0 || s.Time.IsZero() {
		t.Errorf("sample %+v", s)
	}
}

// Without a Store the daemon opens the one in spool/db and samples at once.
func TestStats_DefaultStoreSamplesAtStart(t *testing.T) {
	sp := newTestSpool(t)
	stop := startDaemon(t, (&Stats{Env: testEnv(t, sp), Hosts: []hoststat.Host{{Name: "h", Arch: "x"}}}).Run)
	eventually(t, "a sample in spool/db", func() bool {
		m, err := hoststat.ReadLatest(sp.Path("db"))
		return err == nil && !m["h"].Time.IsZero()
	})
	stop()
}
