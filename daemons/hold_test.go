package daemons

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"msched/acct"
	"msched/policy"
	"msched/spool"
)

// queuedMember puts member i of array arrayJob (spec) into queued/.
func queuedMember(t *testing.T, sp *spool.Spool, arrayJob, spec string, i int) string {
	t.Helper()
	j := &spool.Job{Name: "sweep", Command: []string{"true"}, Walltime: spool.Duration(time.Minute), Array: spec, ArrayIndex: &i}
	if arrayJob == "" {
		jid, err := sp.NextJID()
		if err != nil {
			t.Fatal(err)
		}
		j.JID, arrayJob = jid, jid
	}
	j.ArrayJob = arrayJob
	return putJob(t, sp, spool.Queued, j)
}

// Sched runs at most an array's limit of its members at once, the
// lowest-numbered first; the others wait in queued/, unseen by the policy
// (they do not fill a window that other jobs could use), and the published
// schedule says why. A member that leaves runnable/ and running/ lets the
// next one go.
func TestSched_HoldsArrayMembersBeyondTheLimit(t *testing.T) {
	sp := newTestSpool(t)
	first := queuedMember(t, sp, "", "1-5%2", 1)
	members := []string{first}
	for i := 2; i <= 5; i++ {
		members = append(members, queuedMember(t, sp, first, "1-5%2", i))
	}
	other := putJob(t, sp, spool.Queued, &spool.Job{Name: "other", Command: []string{"true"}, Walltime: spool.Duration(time.Minute)})
	pol, err := policy.New("ga-xms", policy.Options{Seed: 1, Generations: 5, Window: 2})
	if err != nil {
		t.Fatal(err)
	}
	d := &Sched{Env: testEnv(t, sp), Hosts: localHosts(8), Policy: pol, Replan: 50 * time.Millisecond}
	startDaemon(t, d.Run)
	inState(t, sp, members[0], spool.Runnable)
	inState(t, sp, members[1], spool.Runnable)
	inState(t, sp, other, spool.Runnable) // past the held members, in a window of 2
	want := "array " + first + ": at most 2 of its jobs at once (2 placed or running)"
	eventually(t, "the rest held, and said so", func() bool {
		p, _ := sp.ReadSchedule()
		j, err := sp.Read(spool.Queued, members[4])
		return p != nil && err == nil && p.HeldReason(j) == want
	})
	time.Sleep(300 * time.Millisecond) // cycles pass: none of them starts
	for _, jid := range members[2:] {
		if st, _ := sp.StateOf(jid); st != spool.Queued {
			t.Fatalf("%s is %s; the array's limit is 2", jid, st)
		}
	}
	// Member 1 ends: run moves it out of running/ (here, of runnable/).
	if err := os.Remove(filepath.Join(sp.Dir(spool.Runnable), members[0])); err != nil {
		t.Fatal(err)
	}
	inState(t, sp, members[2], spool.Runnable)
	time.Sleep(300 * time.Millisecond)
	for _, jid := range members[3:] {
		if st, _ := sp.StateOf(jid); st != spool.Queued {
			t.Errorf("%s is %s; the array's limit is 2", jid, st)
		}
	}
}

// Sched holds a job until its dependencies are met, says what it waits
// for, and rejects, with the reason, one whose dependencies can never be
// met: an afterok job that failed, a dependency submitted after it, a JID
// that is no job. A reaped dependency is found in the accounting log.
func TestSched_Dependencies(t *testing.T) {
	defer func(g time.Duration) { missingGrace = g }(missingGrace)
	missingGrace = 300 * time.Millisecond
	sp := newTestSpool(t)
	job := func(name string, edit func(*spool.Job)) *spool.Job {
		j := &spool.Job{Name: name, Command: []string{"true"}, Walltime: spool.Duration(time.Minute)}
		if edit != nil {
			edit(j)
		}
		return j
	}
	zero, three := 0, 3
	running := putJob(t, sp, spool.Running, job("running", func(j *spool.Job) {
		j.Schedule = &spool.Schedule{Hosts: []string{"h0"}, PredictedSeconds: 60}
		j.Run = &spool.RunInfo{StartedAt: time.Now(), Attempts: 1}
	}))
	failed := putJob(t, sp, spool.Finished, job("failed", func(j *spool.Job) {
		j.Schedule = &spool.Schedule{Hosts: []string{"h0"}, PredictedSeconds: 60}
		j.Run = &spool.RunInfo{StartedAt: time.Now(), EndedAt: time.Now(), ExitStatus: &three, Attempts: 1}
		j.Reason = "exit status 3"
	}))
	burned, err := sp.NextJID() // given, and never a job
	if err != nil {
		t.Fatal(err)
	}
	reaped, err := sp.NextJID()
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(acct.Record{JID: reaped, State: spool.OutcomeExited, ExitStatus: &zero, SWFStatus: acct.SWFCompleted})
	if err := os.WriteFile(filepath.Join(sp.Path(spool.DirDB), acct.JSONL), append(rec, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	waits := putJob(t, sp, spool.Queued, job("waits", func(j *spool.Job) { j.After = []string{running} }))
	afterFailed := putJob(t, sp, spool.Queued, job("after-failed", func(j *spool.Job) { j.AfterOK = []string{failed} }))
	anyFailed := putJob(t, sp, spool.Queued, job("any-failed", func(j *spool.Job) { j.After = []string{failed} }))
	afterReaped := putJob(t, sp, spool.Queued, job("after-reaped", func(j *spool.Job) { j.AfterOK = []string{reaped} }))
	afterBurned := putJob(t, sp, spool.Queued, job("after-burned", func(j *spool.Job) { j.After = []string{burned} }))
	afterLater := putJob(t, sp, spool.Queued, job("after-later", func(j *spool.Job) { j.After = []string{"J000099"} }))
	bothOK := putJob(t, sp, spool.Queued, job("both", func(j *spool.Job) { j.AfterOK = []string{running, reaped} }))

	pol, err := policy.New("fifo", policy.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := &Sched{Env: testEnv(t, sp), Hosts: localHosts(8), Policy: pol, Replan: 50 * time.Millisecond}
	startDaemon(t, d.Run)
	for jid, want := range map[string]string{
		afterFailed: "afterok: " + failed + " exited with status 3; it had to exit with status 0",
		afterBurned: "dependency " + burned + ": no such job (not in the spool, nor in its accounting log)",
		afterLater:  "dependency J000099 is not older than this job (" + afterLater + "): a job can wait only for jobs submitted before it",
	} {
		if r := inState(t, sp, jid, spool.Rejected); r.Reason != want {
			t.Errorf("%s rejected for %q, want %q", jid, r.Reason, want)
		}
	}
	inState(t, sp, anyFailed, spool.Runnable)
	inState(t, sp, afterReaped, spool.Runnable)
	eventually(t, "the waiting jobs said to wait", func() bool {
		p, _ := sp.ReadSchedule()
		a, err1 := sp.Read(spool.Queued, waits)
		b, err2 := sp.Read(spool.Queued, bothOK)
		return p != nil && err1 == nil && err2 == nil &&
			p.HeldReason(a) == "waiting for "+running && p.HeldReason(b) == "waiting for "+running
	})
	// The running job ends with status 0: both go.
	j, err := sp.Read(spool.Running, running)
	if err != nil {
		t.Fatal(err)
	}
	j.Run.EndedAt, j.Run.ExitStatus = time.Now(), &zero
	if err := sp.As(spool.Run).Move(j, spool.Running, spool.Finished, "test"); err != nil {
		t.Fatal(err)
	}
	inState(t, sp, waits, spool.Runnable)
	if r := inState(t, sp, bothOK, spool.Runnable); r.Reason != "" {
		t.Errorf("reason %q", r.Reason)
	}
	eventually(t, "nothing held", func() bool { p, _ := sp.ReadSchedule(); return p != nil && len(p.Held) == 0 })
}

// A cycle reads the accounting log once for all the dependencies that are
// in no spool directory, however many jobs name them, and judges the jobs
// again with what it found: a reaped dependency releases its job in the
// same cycle, and missing ones are rejected once missing for missingGrace.
func TestHolds_OneLogReadPerCycle(t *testing.T) {
	sp := newTestSpool(t)
	var bogus []string
	for range 20 {
		jid, err := sp.NextJID() // given, and never a job
		if err != nil {
			t.Fatal(err)
		}
		bogus = append(bogus, jid)
	}
	reaped, err := sp.NextJID()
	if err != nil {
		t.Fatal(err)
	}
	zero := 0
	rec, _ := json.Marshal(acct.Record{JID: reaped, State: spool.OutcomeExited, ExitStatus: &zero, SWFStatus: acct.SWFCompleted})
	if err := os.WriteFile(filepath.Join(sp.Path(spool.DirDB), acct.JSONL), append(rec, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	var jobs []*spool.Job
	add := func(edit func(*spool.Job)) string {
		j := &spool.Job{Name: "dep", Command: []string{"true"}, Walltime: spool.Duration(time.Minute)}
		edit(j)
		jid := putJob(t, sp, spool.Queued, j)
		r, err := sp.Read(spool.Queued, jid)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, r)
		return jid
	}
	for _, b := range bogus {
		add(func(j *spool.Job) { j.AfterOK = []string{b} })
	}
	afterReaped := add(func(j *spool.Job) { j.AfterOK = []string{reaped} })

	reads := 0
	defer func(f func(context.Context, string, []string, func(acct.Record) bool) error) { readRecords = f }(readRecords)
	orig := readRecords
	readRecords = func(ctx context.Context, dir string, jids []string, fn func(acct.Record) bool) error {
		reads++
		return orig(ctx, dir, jids, fn)
	}
	var h holds
	none := func() map[string]int { return nil }
	// cycle judges every job at now as sched does: a pass, the log read,
	// and a second pass if it read it.
	cycle := func(now time.Time) (held map[string]string, rejected map[string]string) {
		held, rejected = map[string]string{}, map[string]string{}
		c := h.cycle(context.Background(), now, sp, none)
		for _, j := range jobs {
			c.judge(j)
		}
		if c.resolve() {
			c = c.again()
			for _, j := range jobs {
				if why, rej := c.judge(j); rej {
					rejected[j.JID] = why
				} else if why != "" {
					held[j.JID] = why
				}
			}
			if c.resolve() {
				t.Fatal("the second pass looked in the log again")
			}
		}
		if c.err != nil {
			t.Fatal(c.err)
		}
		c.finish()
		return held, rejected
	}
	now := time.Now()
	held, rejected := cycle(now)
	if reads != 1 {
		t.Fatalf("%d reads of the accounting log in a cycle, want 1", reads)
	}
	if why, ok := held[afterReaped]; ok {
		t.Errorf("the job after a reaped dependency is held (%q) in the cycle that found it in the log", why)
	}
	if len(held) != len(bogus) || len(rejected) != 0 {
		t.Fatalf("held %d and rejected %d, want %d held (missing for less than %v)", len(held), len(rejected), len(bogus), missingGrace)
	}
	held, rejected = cycle(now.Add(missingGrace))
	if reads != 2 {
		t.Fatalf("%d reads of the accounting log in two cycles, want 2", reads)
	}
	if len(rejected) != len(bogus) || len(held) != 0 {
		t.Fatalf("rejected %d and held %d after %v, want %d rejected", len(rejected), len(held), missingGrace, len(bogus))
	}
	for i, j := range jobs[:len(bogus)] {
		if want := "dependency " + bogus[i] + ": no such job (not in the spool, nor in its accounting log)"; rejected[j.JID] != want {
			t.Errorf("%s rejected for %q, want %q", j.JID, rejected[j.JID], want)
		}
	}
}

// A cycle reads init's claims once, when a lookup first needs them, and
// keeps them as a set for every other job it judges and for its second
// pass: a dependency claimed (an array's members included) waits, one in
// no directory is looked for in the log. A cycle that looks nothing up
// reads no claims.
func TestHolds_OneClaimsReadPerCycle(t *testing.T) {
	sp := newTestSpool(t)
	name, err := sp.Submit("sweep.yaml", []byte("name: sweep\ncommand: [\"true\"]\narray: 1-50\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := sp.As(spool.Init).Claim(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.As(spool.Init).ReserveArray(c, 50); err != nil {
		t.Fatal(err)
	}
	if len(c.Members) != 50 {
		t.Fatalf("claimed %d members, want 50", len(c.Members))
	}
	bogus, err := sp.NextJID() // given, and never a job
	if err != nil {
		t.Fatal(err)
	}
	var jobs []*spool.Job
	add := func(after ...string) *spool.Job {
		j := &spool.Job{Name: "dep", Command: []string{"true"}, Walltime: spool.Duration(time.Minute), After: after}
		r, err := sp.Read(spool.Queued, putJob(t, sp, spool.Queued, j))
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, r)
		return r
	}
	for _, m := range c.Members[:10] {
		add(m)
	}
	add(bogus)
	add(c.Members[49], bogus)
	free := add()

	reads := 0
	defer func(f func(*spool.Spool) ([]string, error)) { claimedJIDs = f }(claimedJIDs)
	orig := claimedJIDs
	claimedJIDs = func(sp *spool.Spool) ([]string, error) {
		reads++
		return orig(sp)
	}
	var h holds
	none := func() map[string]int { return nil }
	hc := h.cycle(context.Background(), time.Now(), sp, none)
	if why, rej := hc.judge(free); why != "" || rej || reads != 0 {
		t.Fatalf("a job without dependencies: %q %v, %d reads of the claims, want none", why, rej, reads)
	}
	for _, j := range jobs {
		hc.judge(j)
	}
	if !hc.resolve() {
		t.Fatal("the dependency in no directory was not looked for in the log")
	}
	hc = hc.again()
	for _, j := range jobs[:len(jobs)-1] {
		// Each waits for the dependencies not yet ended: a claimed member,
		// and the JID found nowhere (missing, not yet past its grace).
		want := "waiting for " + strings.Join(j.After, ", ")
		if why, rej := hc.judge(j); rej || why != want {
			t.Errorf("%s: %q %v, want %q", j.JID, why, rej, want)
		}
	}
	if hc.err != nil {
		t.Fatal(hc.err)
	}
	if reads != 1 {
		t.Fatalf("%d reads of the claims in a cycle, want 1", reads)
	}
	if s := hc.status[c.Members[49]]; s.State != spool.Submitted {
		t.Errorf("claimed member %s: %+v, want submitted", c.Members[49], s)
	}
	if s := hc.status[bogus]; !s.Missing {
		t.Errorf("%s, never a job: %+v, want missing", bogus, s)
	}

	// LookupJobs reads them once a call too.
	reads = 0
	st, err := LookupJobs(context.Background(), sp, []string{c.Members[0], c.Members[1], bogus, jobs[0].JID})
	if err != nil {
		t.Fatal(err)
	}
	if reads != 1 {
		t.Errorf("LookupJobs read the claims %d times, want 1", reads)
	}
	want := map[string]JobStatus{c.Members[0]: {State: spool.Submitted}, c.Members[1]: {State: spool.Submitted},
		bogus: {Missing: true}, jobs[0].JID: {State: spool.Queued}}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("LookupJobs: %+v, want %+v", st, want)
	}
}
