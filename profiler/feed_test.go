package profiler

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// waitCount waits for the profiler to have seen n runs.
func waitCount(t *testing.T, p *Profiler, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.Count() != n {
		if time.Now().After(deadline) {
			t.Fatalf("profiler saw %d runs, want %d", p.Count(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func feed(t *testing.T, log string, p *Profiler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- FeedFromAccounting(ctx, log, p) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// The feed observes completed jobs only, each once, and resumes after a
// restart where it stopped: a torn last line is read when it is whole.
func TestFeedFromAccounting_OnceAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "accounting.jsonl")
	lines := `{"jid":"J1","user":"ann","executable":"/bin/sim","hosts":["a","b"],"actual_seconds":100,"state":"exited","swf_status":1}
{"jid":"J2","user":"ann","executable":"/bin/sim","hosts":["a"],"actual_seconds":3,"state":"exited","swf_status":0}
{"jid":"J3","user":"bob","executable":"/bin/sim","hosts":["a"],"actual_seconds":50,"state":"exited","swf_status":1}
{"jid":"J4","state":"rejected","swf_status":0}
{"jid":"J5","user":"ann","executable":"/bin/sim","hosts":["a","b"],`
	if err := os.WriteFile(log, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "profiler.db")
	p, err := Open(db, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	stop := feed(t, log, p)
	waitCount(t, p, 2)
	stop()
	if e, ok := p.Estimate("/bin/sim", "ann", 2, 0); !ok || e.Mean != 75 {
		t.Errorf("estimate %+v, want the mean of J1 and J3, 75 s", e)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`"actual_seconds":110,"state":"exited","swf_status":1}` + "\n")
	f.Close()

	q, err := Open(db, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	stop = feed(t, log, q)
	waitCount(t, q, 3)
	time.Sleep(20 * time.Millisecond) // a double count would show now
	stop()
	if q.Count() != 3 {
		t.Errorf("after the restart the profiler saw %d runs, want 3", q.Count())
	}
	bins := q.Bins(LevelUser, "/bin/sim", "ann", 0)
	if len(bins) < 2 || bins[1].N != 2 || bins[1].Mean() != 105 {
		t.Errorf("ann's 2-host bin %+v, want J1 and J5 (mean 105 s)", bins)
	}
}
