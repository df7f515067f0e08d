package daemons

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"msched/acct"
	"msched/policy"
	"msched/spool"
)

func readPublished(t *testing.T, sp *spool.Spool) *spool.PublishedSchedule {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sp.Path(spool.DirDB), spool.ScheduleFile))
	if err != nil {
		return nil
	}
	var p spool.PublishedSchedule
	if json.Unmarshal(b, &p) != nil {
		return nil
	}
	return &p
}

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
		p := readPublished(t, sp)
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
	rec, _ := json.Marshal(acct.Record{JID: reaped, State: spool.OutcomeExited, ExitStatus: &zero, SWFStatus: swfCompleted})
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
		p := readPublished(t, sp)
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
	eventually(t, "nothing held", func() bool { p := readPublished(t, sp); return p != nil && len(p.Held) == 0 })
}
