package main

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"msched/chaos"
)

// The chaos suite in a bounded form (msched bench chaos runs it at full
// size): the daemons as processes, SIGKILLs of daemons and shepherds,
// hostile files among the jobs, and, as root (as in CI), a full disk:
// README's guarantees must all hold.
func TestChaos_Bounded(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos suite takes about a minute")
	}
	cfg := chaos.Config{Exe: mschedBin, Dir: t.TempDir(), Jobs: 120, Rate: 30, Bad: 24, Kills: 10,
		Slots: 8, Timeout: 3 * time.Minute, Seed: 1, Progress: testWriter{t}}
	if os.Geteuid() == 0 {
		cfg.Full = 4 * time.Second
	} else {
		t.Log("not root: no full-disk phase (it mounts a tmpfs)")
	}
	res, err := chaos.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	t.Logf("%s", b)
	if !res.OK() {
		t.Errorf("a guarantee failed: %s", b)
	}
	// The attacks took place.
	kills := 0
	for v, n := range res.Kills {
		if v != "shepherd" {
			kills += n
		}
	}
	if kills == 0 || res.Jobs != cfg.Jobs+cfg.Bad || cfg.Full > 0 && res.FullSeconds < cfg.Full.Seconds() {
		t.Errorf("the attacks did not all happen: %d daemon kills, %d submissions, full %.1f s", kills, res.Jobs, res.FullSeconds)
	}
}

// testWriter sends each write to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}
