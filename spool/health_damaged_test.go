package spool

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Heartbeats are written without an fsync (Heart.Beat), so a crash of the
// machine may leave one empty or partial. Such a beat says nothing: the
// daemon is shown as without a beat, and the others as their beats say;
// Health does not fail for it (msched status and the web page would then
// show no daemon at all).
func TestHealth_DamagedBeatIsNoBeat(t *testing.T) {
	s, err := Create(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.As(Sched).Heart(Sched).Beat(); err != nil {
		t.Fatal(err)
	}
	for _, damaged := range []string{"", `{"daemon":"run","pid":12`} {
		if err := os.WriteFile(filepath.Join(s.Path(DirDB), heartbeatFile("run")), []byte(damaged), 0o644); err != nil {
			t.Fatal(err)
		}
		got := healthOf(t, s, time.Now())
		if h := got["run"]; h.State != HealthNever || h.Beat != nil {
			t.Errorf("beat %q: run %s (beat %v), want never", damaged, h.State, h.Beat)
		}
		if h := got["sched"]; h.State != HealthUp {
			t.Errorf("beat %q: sched %s, want up", damaged, h.State)
		}
	}
}
