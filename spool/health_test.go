package spool

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func healthOf(t *testing.T, s *Spool, now time.Time) map[string]Health {
	t.Helper()
	hs, err := s.Health(now)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 5 {
		t.Fatalf("%d daemons, want 5", len(hs))
	}
	out := map[string]Health{}
	for _, h := range hs {
		out[h.Daemon] = h
	}
	return out
}

func TestHealth_Heartbeats(t *testing.T) {
	s, err := Create(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, h := range healthOf(t, s, now) {
		if h.State != HealthNever {
			t.Errorf("%s: %s before any beat, want never", h.Daemon, h.State)
		}
	}
	sched := s.As(Sched).Heart(Sched)
	if err := sched.Beat(); err != nil {
		t.Fatal(err)
	}
	run := s.As(Run).Heart(Run)
	if err := run.Beat(); err != nil {
		t.Fatal(err)
	}
	if err := run.Stop(); err != nil {
		t.Fatal(err)
	}
	// init's process is gone: it ran here and exited without a clean stop.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	writeBeat(t, s, Beat{Daemon: "init", PID: cmd.Process.Pid, Host: host, At: now, EveryS: 5})
	// reaper ran elsewhere and has not beaten for a minute.
	writeBeat(t, s, Beat{Daemon: "reaper", PID: 1, Host: "elsewhere", At: now.Add(-time.Minute), EveryS: 5})

	got := healthOf(t, s, time.Now())
	for d, want := range map[string]string{"sched": HealthUp, "run": HealthStopped, "init": HealthDown, "reaper": HealthStale, "stats": HealthNever} {
		if got[d].State != want {
			t.Errorf("%s: %s, want %s", d, got[d].State, want)
		}
	}
	// The same beat, three beats later plus a second, is stale.
	if h := healthOf(t, s, time.Now().Add(StaleAfter*HeartbeatEvery+time.Second))["sched"]; h.State != HealthStale {
		t.Errorf("sched after %d missed beats: %s, want stale", StaleAfter, h.State)
	}
}

func writeBeat(t *testing.T, s *Spool, b Beat) {
	t.Helper()
	data, _ := json.Marshal(b)
	if err := os.WriteFile(filepath.Join(s.Path(DirDB), heartbeatFile(b.Daemon)), data, 0o644); err != nil {
		t.Fatal(err)
	}
}
