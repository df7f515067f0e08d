package daemons

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"msched/acct"
	"msched/spool"
)

// touch writes path (and its directory) and sets its times to at.
func touch(t *testing.T, path string, at time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

func age(t *testing.T, path string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool { _, err := os.Lstat(path); return err == nil }

// ended is the state the reaper reports ended jobs from (spool.Removable:
// exited/ before the reaper took finished/ over, finished/ since).
var ended = spool.Removable[0]

// The reaper removes the output and reports of jobs that left the spool
// once they are older than the limits, and nothing else.
func TestReaper_RetentionRemovesOldOutputAndReports(t *testing.T) {
	sp := newTestSpool(t)
	out, reps := sp.Path(spool.DirOutput), sp.Path(spool.DirReports)
	old, now := time.Now().Add(-48*time.Hour), time.Now()
	queued := putJob(t, sp, spool.Queued, &spool.Job{Command: []string{"x"}})
	for _, f := range []struct {
		path string
		at   time.Time
	}{
		{filepath.Join(out, "J000101", "stdout"), old}, // left, old: removed
		{filepath.Join(out, queued, "stdout"), old},    // still in the spool: kept
		{filepath.Join(out, "J000102", "stdout"), now}, // left, written lately: kept
		{filepath.Join(out, "J000103", "stdout"), now}, // its directory is old, its output not: kept
		{filepath.Join(reps, "J000101.txt"), old},      // removed
		{filepath.Join(reps, "J000102.txt"), now},      // kept
	} {
		touch(t, f.path, f.at)
		age(t, filepath.Dir(f.path), old)
	}
	age(t, filepath.Join(out, "J000102"), now)

	// The zero Retention keeps everything.
	alog, err := openAccounting(sp.Path(spool.DirDB))
	if err != nil {
		t.Fatal(err)
	}
	if err := (&retainer{}).apply(context.Background(), sp.As(spool.Reaper), alog, testEnv(t, sp).logger("reaper"), now); err != nil {
		t.Fatal(err)
	}
	alog.close()
	if !exists(filepath.Join(out, "J000101")) || !exists(filepath.Join(reps, "J000101.txt")) {
		t.Fatal("the zero Retention removed files")
	}

	startDaemon(t, (&Reaper{Env: testEnv(t, sp), Retention: Retention{OutputAge: 24 * time.Hour, ReportsAge: 24 * time.Hour}}).Run)
	eventually(t, "old output removed", func() bool { return !exists(filepath.Join(out, "J000101")) })
	if exists(filepath.Join(reps, "J000101.txt")) {
		t.Error("an old report was kept")
	}
	for _, p := range []string{filepath.Join(out, queued, "stdout"), filepath.Join(out, "J000102"),
		filepath.Join(out, "J000103", "stdout"), filepath.Join(reps, "J000102.txt")} {
		if !exists(p) {
			t.Errorf("%s was removed", p)
		}
	}
}

// Retention is applied at most once a period, not at every scan.
func TestRetention_AtMostOncePerPeriod(t *testing.T) {
	sp := newTestSpool(t)
	alog, err := openAccounting(sp.Path(spool.DirDB))
	if err != nil {
		t.Fatal(err)
	}
	defer alog.close()
	log := testEnv(t, sp).logger("reaper")
	r := &retainer{Retention: Retention{ReportsAge: time.Hour}}
	old, t0 := time.Now().Add(-2*time.Hour), time.Now()
	a, b := filepath.Join(sp.Path(spool.DirReports), "J000001.txt"), filepath.Join(sp.Path(spool.DirReports), "J000002.txt")
	touch(t, a, old)
	if err := r.apply(context.Background(), sp, alog, log, t0); err != nil || exists(a) {
		t.Fatalf("first period: err %v, old report still there %v", err, exists(a))
	}
	touch(t, b, old)
	if err := r.apply(context.Background(), sp, alog, log, t0.Add(retentionEvery/2)); err != nil || !exists(b) {
		t.Fatalf("within the period: err %v, report removed %v", err, !exists(b))
	}
	if err := r.apply(context.Background(), sp, alog, log, t0.Add(retentionEvery)); err != nil || exists(b) {
		t.Fatalf("next period: err %v, old report still there %v", err, exists(b))
	}
}

func jsonlJIDs(t *testing.T, path string) []string {
	t.Helper()
	var jids []string
	for _, l := range strings.Split(readText(t, path), "\n") {
		if r, ok := acct.ParseRecordLine([]byte(l)); ok {
			jids = append(jids, r.JID)
		}
	}
	return jids
}

// swfUsers maps the JIDs of an SWF file to their user numbers.
func swfUsers(t *testing.T, path string) map[string]string {
	t.Helper()
	users := map[string]string{}
	for _, l := range strings.Split(readText(t, path), "\n") {
		f := strings.Fields(l)
		if len(f) == swfFields && !strings.HasPrefix(f[0], ";") {
			users[f[0]] = f[swfUser]
		}
	}
	return users
}

// Rotation: the old logs become generation 1, older ones move up and the
// one past the limit goes; the new logs carry the records that init's
// recovery (a claim in tmp/) and a restarted reaper (a job still in
// the spool) ask about, with the SWF numbering a restart gives them; the
// reaper appends to the new logs.
func TestRetention_RotatesAccounting(t *testing.T) {
	sp := newTestSpool(t)
	db := sp.Path(spool.DirDB)
	ctx := context.Background()
	log := testEnv(t, sp).logger("reaper")
	var jids []string
	var jobs []*spool.Job
	for _, user := range []string{"alice", "bob", "alice", "carol"} {
		j := &spool.Job{User: user, Command: []string{"./" + user}, Run: &spool.RunInfo{ExitStatus: new(int)}}
		jids = append(jids, putJob(t, sp, ended, j))
		jobs = append(jobs, j)
	}
	stop := startDaemon(t, (&Reaper{Env: testEnv(t, sp)}).Run)
	eventually(t, "reaped", func() bool { return jobsIn(t, sp, ended) == 0 })
	stop()
	// bob's job has a claim left in tmp/ (init died before removing it);
	// carol's is back in ended (the reaper died before removing it).
	touch(t, filepath.Join(sp.Path(spool.DirTmp), "claim."+jids[1]+".1700000000000000000.job.yaml"), time.Now())
	jobs[3].History = nil
	putJob(t, sp, ended, jobs[3])

	alog, err := openAccounting(db)
	if err != nil {
		t.Fatal(err)
	}
	r := &retainer{Retention: Retention{AccountingBytes: 1, AccountingKeep: 2}}
	if err := r.apply(ctx, sp, alog, log, time.Now()); err != nil {
		t.Fatal(err)
	}
	live, gen1 := filepath.Join(db, acct.JSONL), filepath.Join(db, acct.JSONL+".1")
	if got := jsonlJIDs(t, gen1); len(got) != 4 {
		t.Errorf("accounting.jsonl.1 holds %v, want the 4 records", got)
	}
	if got := jsonlJIDs(t, live); strings.Join(got, ",") != jids[1]+","+jids[3] {
		t.Errorf("accounting.jsonl holds %v, want %s and %s", got, jids[1], jids[3])
	}
	if got := swfUsers(t, filepath.Join(db, acct.SWF+".1")); len(got) != 4 || got[jids[0][1:]] != "" && got["1"] != "1" {
		t.Errorf("accounting.swf.1: %v", got)
	}
	swf := readText(t, filepath.Join(db, acct.SWF))
	if !strings.HasPrefix(swf, swfHeader) {
		t.Errorf("the new SWF log lacks its header:\n%s", swf)
	}
	num := func(jid string) string { return strings.TrimLeft(jid[1:], "0") }
	// Numbered again in order of first appearance in the new log: bob 1,
	// carol 2 (they were 2 and 3).
	if u := swfUsers(t, filepath.Join(db, acct.SWF)); len(u) != 2 || u[num(jids[1])] != "1" || u[num(jids[3])] != "2" {
		t.Errorf("new SWF user numbers %v; want %s: 1, %s: 2", u, num(jids[1]), num(jids[3]))
	}
	found, err := reapedJIDs(sp)(ctx, []string{jids[1]})
	if err != nil || !found[jids[1]] {
		t.Errorf("init's recovery does not find the claimed %s done after the rotation (%v)", jids[1], err)
	}

	// Appends go to the new logs, numbered as a restart numbers them.
	bob := &spool.Job{User: "bob", Command: []string{"./bob"}, Run: &spool.RunInfo{ExitStatus: new(int)}}
	jids = append(jids, putJob(t, sp, ended, bob))
	if err := alog.record(bob); err != nil {
		t.Fatal(err)
	}
	alog.close()
	if got := jsonlJIDs(t, gen1); len(got) != 4 {
		t.Errorf("a record went to the rotated log: %v", got)
	}
	if u := swfUsers(t, filepath.Join(db, acct.SWF)); u[num(jids[4])] != "1" {
		t.Errorf("bob's new SWF line has user %q, want 1", u[num(jids[4])])
	}

	// A restarted reaper reaps carol's and bob's jobs without a second record.
	stop = startDaemon(t, (&Reaper{Env: testEnv(t, sp)}).Run)
	eventually(t, "reaped", func() bool { return jobsIn(t, sp, ended) == 0 })
	stop()
	if got := jsonlJIDs(t, live); strings.Join(got, ",") != jids[1]+","+jids[3]+","+jids[4] {
		t.Errorf("after the restart accounting.jsonl holds %v", got)
	}

	// Two more rotations: generation 1 moves to 2, and nothing goes past 2.
	for range 2 {
		before := readText(t, gen1)
		alog, err := openAccounting(db)
		if err != nil {
			t.Fatal(err)
		}
		r.last = time.Time{}
		if err := r.apply(ctx, sp, alog, log, time.Now()); err != nil {
			t.Fatal(err)
		}
		alog.close()
		if got := readText(t, filepath.Join(db, acct.JSONL+".2")); got != before {
			t.Errorf("accounting.jsonl.2 is not the earlier generation 1")
		}
	}
	for _, name := range []string{acct.JSONL + ".3", acct.SWF + ".3"} {
		if exists(filepath.Join(db, name)) {
			t.Errorf("%s kept beyond retention.accounting_keep 2", name)
		}
	}
}

// A rotation cut short by a crash after the link to generation 1 and
// before the new log replaced the old one does not move the generations up
// a second time when it is done again.
func TestRetention_RotateAgainAfterCrash(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log")
	for name, text := range map[string]string{"log": "current\n", "log.2": "older\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(path, path+".1"); err != nil { // the crash came here
		t.Fatal(err)
	}
	if err := rotateFile(dir, "log", 3, []byte("carried\n")); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"log": "carried\n", "log.1": "current\n", "log.2": "older\n"} {
		if got := readText(t, filepath.Join(dir, name)); got != want {
			t.Errorf("%s holds %q, want %q", name, got, want)
		}
	}
	if exists(path + ".3") {
		t.Error("the generations moved up twice")
	}
}

// A rotation deletes every generation past keep: also those past a gap
// (a reaper killed between two renames) and those a larger keep left.
func TestRetention_RotationDeletesPastKeep(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"log": "current\n", "log.1": "one\n", "log.3": "three\n", "log.7": "seven\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := rotateFile(dir, "log", 2, []byte("carried\n")); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"log": "carried\n", "log.1": "current\n", "log.2": "one\n"} {
		if got := readText(t, filepath.Join(dir, name)); got != want {
			t.Errorf("%s holds %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"log.3", "log.4", "log.7", "log.8"} {
		if exists(filepath.Join(dir, name)) {
			t.Errorf("%s kept past keep 2", name)
		}
	}
}

// A carried record is written again whole: a line an older msched left
// torn, its record glued after the torn start, is not copied torn into
// the new log.
func TestRetention_CarriesATornLineWhole(t *testing.T) {
	sp := newTestSpool(t)
	db := sp.Path(spool.DirDB)
	jid := "J000002"
	torn := `{"jid":"J000002","na{"jid":"J000002","name":"d","state":"exited","swf_status":1}` + "\n"
	if err := os.WriteFile(filepath.Join(db, acct.JSONL), []byte(`{"jid":"J000001","state":"exited","swf_status":1}`+"\n"+torn), 0o644); err != nil {
		t.Fatal(err)
	}
	touch(t, filepath.Join(sp.Path(spool.DirTmp), "claim."+jid+".1700000000000000000.job.yaml"), time.Now())
	alog, err := openAccounting(db)
	if err != nil {
		t.Fatal(err)
	}
	defer alog.close()
	r := &retainer{Retention: Retention{AccountingBytes: 1, AccountingKeep: 1}}
	if err := r.apply(context.Background(), sp, alog, testEnv(t, sp).logger("reaper"), time.Now()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(db, acct.JSONL))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("new log %q, want %s's record alone", b, jid)
	}
	var rec acct.Record
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil || rec.JID != jid || rec.Name != "d" {
		t.Fatalf("new log's line %q: %v", lines[0], err)
	}
}

// A follower of the log (acct.Follow, as the profiler's feed and learn's
// correction follow it) across the reaper's own rotation: every record
// once, the copy of a record carried into the new log marked as a copy.
// (Whether j3 is read before or after the rotation depends on the
// follower's timing; acct's tests cover each case.)
func TestRetention_FollowerAcrossRotation(t *testing.T) {
	sp := newTestSpool(t)
	db := sp.Path(spool.DirDB)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	alog, err := openAccounting(db)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { alog.close() }()
	record := func(inSpool bool) string {
		t.Helper()
		j := &spool.Job{User: "alice", Command: []string{"./sim"}, Run: &spool.RunInfo{ExitStatus: new(int)}}
		j.JID = putJob(t, sp, ended, j)
		if err := alog.record(j); err != nil {
			t.Fatal(err)
		}
		if !inSpool {
			if err := os.Remove(filepath.Join(sp.Dir(ended), j.JID)); err != nil {
				t.Fatal(err)
			}
		}
		return j.JID
	}
	type given struct {
		jid    string
		copied bool
	}
	got := make(chan given, 64)
	done := make(chan error, 1)
	go func() {
		done <- acct.Follow(ctx, filepath.Join(db, acct.JSONL), acct.Pos{}, time.Millisecond, 0, func(fs []acct.Followed) error {
			for _, f := range fs {
				got <- given{f.JID, f.Copy}
			}
			return nil
		})
	}()
	next := func() given {
		t.Helper()
		select {
		case g := <-got:
			return g
		case <-time.After(10 * time.Second):
			t.Fatal("the follower gave nothing within 10 s")
		}
		return given{}
	}
	j1, j2 := record(false), record(true) // j2 still in ended: carried by the rotation
	for _, want := range []given{{j1, false}, {j2, false}} {
		if g := next(); g != want {
			t.Fatalf("got %+v, want %+v", g, want)
		}
	}
	j3 := record(false) // maybe after the follower's last read of the old log
	r := &retainer{Retention: Retention{AccountingBytes: 1, AccountingKeep: 1}}
	if err := r.apply(ctx, sp, alog, testEnv(t, sp).logger("reaper"), time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := jsonlJIDs(t, filepath.Join(db, acct.JSONL)); strings.Join(got, ",") != j2 {
		t.Fatalf("the new log holds %v, want the copy of %s", got, j2)
	}
	j4 := record(false)
	for _, want := range []given{{j3, false}, {j2, true}, {j4, false}} {
		if g := next(); g != want {
			t.Fatalf("got %+v, want %+v", g, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(got) > 0 {
		t.Fatalf("given more: %+v", <-got)
	}
}
