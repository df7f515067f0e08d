package profiler

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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

// feedRuns opens the profiler at db and feeds it from log until it has
// seen n runs, and a moment more (in which a double count would show),
// then stops the feed; the caller closes the profiler.
func feedRuns(t *testing.T, db, log string, n int) *Profiler {
	t.Helper()
	p, err := Open(db, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	stop := feed(t, log, p)
	waitCount(t, p, n)
	time.Sleep(20 * time.Millisecond)
	stop()
	if p.Count() != n {
		t.Errorf("the profiler saw %d runs, want %d", p.Count(), n)
	}
	return p
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
	p := feedRuns(t, db, log, 2)
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

	q := feedRuns(t, db, log, 3) // after the restart
	defer q.Close()
	bins := q.Bins(LevelUser, "/bin/sim", "ann", 0)
	if len(bins) < 2 || bins[1].N != 2 || bins[1].Mean() != 105 {
		t.Errorf("ann's 2-host bin %+v, want J1 and J5 (mean 105 s)", bins)
	}
}

// A rotation of the log while the feed is stopped: on restart it reads the
// rest of the rotated file (a record the reaper appended after the feed's
// last read) and then the new log, whose copy of an observed record it
// does not count again.
func TestFeedFromAccounting_AcrossRotation(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "accounting.jsonl")
	rec := func(jid string, secs int) string {
		return fmt.Sprintf(`{"jid":%q,"user":"ann","executable":"/bin/sim","hosts":["a"],"actual_seconds":%d,"state":"exited","swf_status":1}`+"\n", jid, secs)
	}
	if err := os.WriteFile(log, []byte(rec("J1", 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "profiler.db")
	if err := feedRuns(t, db, log, 1).Close(); err != nil {
		t.Fatal(err)
	}

	// J2 is appended to the old log, which is then rotated as the reaper
	// rotates it, J2 copied into the new one (its job still in the spool);
	// then J3. (Resuming at the old offset in the new log, as the feed did
	// before positions named their file, loses J2.)
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(rec("J2", 20))
	f.Close()
	if err := os.Link(log, log+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log+".new", []byte(rec("J2", 20)+rec("J3", 30)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(log+".new", log); err != nil {
		t.Fatal(err)
	}

	q := feedRuns(t, db, log, 3) // after the rotation: J1, J2, J3 once each
	defer q.Close()
	if e, ok := q.Estimate("/bin/sim", "ann", 1, 0); !ok || e.Mean != 20 {
		t.Errorf("after the rotation: estimate %+v, want the mean of J1, J2, J3 (20 s)", e)
	}
}

// A feed stopped before it read a record of the log, then the log rotated:
// the log it started on was named when it started, so on restart it reads
// that log (now generation 1) before the new one.
func TestFeedFromAccounting_RotatedBeforeItsFirstRecord(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "accounting.jsonl")
	rec := func(jid string) string {
		return fmt.Sprintf(`{"jid":%q,"user":"ann","executable":"/bin/sim","hosts":["a"],"actual_seconds":5,"state":"exited","swf_status":1}`+"\n", jid)
	}
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "profiler.db")
	if err := feedRuns(t, db, log, 0).Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, []byte(rec("J1")), 0o644); err != nil { // the same file, written in place
		t.Fatal(err)
	}
	if err := os.Link(log, log+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log+".new", []byte(rec("J2")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(log+".new", log); err != nil {
		t.Fatal(err)
	}
	q := feedRuns(t, db, log, 2)
	q.Close()
}

// A batch is counted at once: the good runs of it, not the ones that cannot
// be counted (a NUL in the user's name, here, which a job file could
// carry), and its position; after a restart nothing of it is counted
// again.
func TestFeedFromAccounting_Batch(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "accounting.jsonl")
	var b strings.Builder
	for i := range 2500 {
		user := "ann"
		if i == 1000 {
			user = `a\u0000b`
		}
		fmt.Fprintf(&b, `{"jid":"J%d","user":"%s","executable":"/bin/x%d","hosts":["a"],"actual_seconds":%d,"state":"exited","swf_status":1}`+"\n", i, user, i%3, i%7)
	}
	if err := os.WriteFile(log, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "profiler.db")
	p := feedRuns(t, db, log, 2499)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	q := feedRuns(t, db, log, 2499)
	defer q.Close()
	if s := q.Bins(LevelExecutable, "/bin/x1", "", 0)[0]; s.N != 832 {
		t.Errorf("/bin/x1 counted %v times, want 832 (833 but J1000, whose user's name holds a NUL)", s.N)
	}
}

// A fresh profiler with a file catching up on a log of 5,000 completed
// runs, counting each look's records (up to acct.DefaultFollowBatch) in one
// fsynced transaction, against one transaction per record (batch 1, as
// before): run both in one go to compare.
func BenchmarkFeed_CatchUp(b *testing.B) {
	const n = 5000
	log := filepath.Join(b.TempDir(), "accounting.jsonl")
	var sb strings.Builder
	for i := range n {
		fmt.Fprintf(&sb, `{"jid":"J%d","user":"u%d","executable":"/bin/x%d","hosts":["a","b"],"actual_seconds":%d,"state":"exited","swf_status":1}`+"\n", i, i%10, i%50, i%3600)
	}
	if err := os.WriteFile(log, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, batch := range []int{1, 0} {
		name := "batch=default"
		if batch == 1 {
			name = "batch=1"
		}
		b.Run(name, func(b *testing.B) {
			old := feedBatch
			feedBatch = batch
			defer func() { feedBatch = old }()
			for range b.N {
				p, err := Open(filepath.Join(b.TempDir(), "profiler.db"), Options{})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- FeedFromAccounting(ctx, log, p) }()
				for deadline := time.Now().Add(time.Minute); p.Count() != n; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						b.Fatalf("counted %d runs of %d in a minute", p.Count(), n)
					}
				}
				cancel()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				p.Close()
			}
		})
	}
}

// A run the store cannot hold (a category past bbolt's largest key) is
// passed over, and the rest of its batch counted with its position.
func TestFeedFromAccounting_RunTheStoreCannotHold(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "accounting.jsonl")
	rec := func(jid, exe string) string {
		return fmt.Sprintf(`{"jid":"%s","user":"ann","executable":"%s","hosts":["a"],"actual_seconds":5,"state":"exited","swf_status":1}`+"\n", jid, exe)
	}
	lines := rec("J1", "/bin/a") + rec("J2", "/bin/"+strings.Repeat("x", 40000)) + rec("J3", "/bin/a")
	if err := os.WriteFile(log, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "profiler.db")
	p := feedRuns(t, db, log, 2)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, []byte(lines+rec("J4", "/bin/a")), 0o644); err != nil {
		t.Fatal(err)
	}
	q := feedRuns(t, db, log, 3) // J4 only, after the restart
	defer q.Close()
	if s := q.Bins(LevelExecutable, "/bin/a", "", 0)[0]; s.N != 3 {
		t.Errorf("/bin/a counted %v times, want 3", s.N)
	}
}

// A store that fails for a while (a full disk) loses nothing: the feed
// tries the batch again until the store takes it, then goes on; after a
// restart nothing is counted twice.
func TestFeedFromAccounting_StoreFailsForAWhile(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "accounting.jsonl")
	rec := func(jid string) string {
		return fmt.Sprintf(`{"jid":"%s","user":"ann","executable":"/bin/a","hosts":["a"],"actual_seconds":5,"state":"exited","swf_status":1}`+"\n", jid)
	}
	if err := os.WriteFile(log, []byte(rec("J1")+rec("J2")+rec("J3")), 0o644); err != nil {
		t.Fatal(err)
	}
	var faults atomic.Int32
	oldRetry, oldFault := feedRetry, feedFault
	feedRetry = time.Millisecond
	feedFault = func() error {
		if faults.Add(1) <= 4 {
			return errors.New("write profiler.db: no space left on device")
		}
		return nil
	}
	t.Cleanup(func() { feedRetry, feedFault = oldRetry, oldFault })
	db := filepath.Join(dir, "profiler.db")
	p := feedRuns(t, db, log, 3)
	if n := faults.Load(); n < 5 {
		t.Errorf("the store was tried %d times, want the 4 failures and more", n)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(rec("J4"))
	f.Close()
	q := feedRuns(t, db, log, 4)
	q.Close()
}

// Stopped while the store fails: the feed ends without error and without
// storing a position past the records it could not store; restarted with
// a store that works, it counts them.
func TestFeedFromAccounting_StoppedWhileTheStoreFails(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "accounting.jsonl")
	rec := `{"jid":"%s","user":"ann","executable":"/bin/a","hosts":["a"],"actual_seconds":5,"state":"exited","swf_status":1}` + "\n"
	if err := os.WriteFile(log, []byte(fmt.Sprintf(rec+rec, "J1", "J2")), 0o644); err != nil {
		t.Fatal(err)
	}
	var faults atomic.Int32
	oldRetry, oldFault := feedRetry, feedFault
	feedRetry = time.Millisecond
	feedFault = func() error { faults.Add(1); return errors.New("no space left on device") }
	t.Cleanup(func() { feedRetry, feedFault = oldRetry, oldFault })
	db := filepath.Join(dir, "profiler.db")
	p, err := Open(db, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	stop := feed(t, log, p)
	for deadline := time.Now().Add(10 * time.Second); faults.Load() < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the store was not tried three times within 10 s")
		}
	}
	stop() // fails the test if the feed returns an error
	if p.Count() != 0 {
		t.Errorf("counted %d runs with a store that fails", p.Count())
	}
	p.Close()
	feedFault = func() error { return nil }
	q := feedRuns(t, db, log, 2)
	q.Close()
}
