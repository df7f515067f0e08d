package spool

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// midMove simulates a crash after step M2 of Move(j, from, to): from/J
// holds the new content (history ends in to) but the rename has not happened.
func midMove(t *testing.T, s *Spool, j *Job, to State) {
	t.Helper()
	j.History = append(j.History, Event{State: to, At: time.Now().UTC()})
	writeJob(t, s, j.State(), j)
}

// movedOn writes into state to a copy of j whose history goes one step
// further, to to: the job as the owner of to has it, while j's file stays.
func movedOn(t *testing.T, s *Spool, j *Job, to State) *Job {
	t.Helper()
	r := *j
	r.History = append(append([]Event(nil), j.History...), Event{State: to, At: time.Now().UTC()})
	writeJob(t, s, to, &r)
	return &r
}

func TestRecover_CrashWindows(t *testing.T) {
	for _, tc := range []struct {
		name       string
		setup      func(t *testing.T, s *Spool) *Job // returns the job; recovery runs on scheduling/
		wantIn     State
		wantAction string
	}{
		{"nothing in flight", func(t *testing.T, s *Spool) *Job {
			return place(t, s, Scheduling)
		}, Scheduling, ""},
		{"crash after M2: move completed", func(t *testing.T, s *Spool) *Job {
			j := place(t, s, Scheduling)
			midMove(t, s, j, Runnable)
			return j
		}, Runnable, "completed"},
		{"crash after M3 without atomic rename: stale copy removed", func(t *testing.T, s *Spool) *Job {
			j := place(t, s, Scheduling)
			midMove(t, s, j, Runnable)
			writeJob(t, s, Runnable, j) // the same content in both
			return j
		}, Runnable, "removed-stale"},
		{"crash after M3 with M2 lost (renames not kept in order): old copy removed", func(t *testing.T, s *Spool) *Job {
			j := place(t, s, Scheduling) // from/J keeps its old content
			movedOn(t, s, j, Runnable)
			return j
		}, Runnable, "removed-stale"},
		{"copy already moved on by its new owner: stale copy removed", func(t *testing.T, s *Spool) *Job {
			j := place(t, s, Scheduling)
			midMove(t, s, j, Runnable)
			movedOn(t, s, j, Running)
			return j
		}, Running, "removed-stale"},
		{"history names an illegal next state: left alone", func(t *testing.T, s *Spool) *Job {
			j := place(t, s, Scheduling)
			midMove(t, s, j, Finished)
			return j
		}, Scheduling, "conflict"},
		{"no history (written by hand): left alone", func(t *testing.T, s *Spool) *Job {
			j := place(t, s, Scheduling)
			if err := os.WriteFile(filepath.Join(s.Dir(Scheduling), j.JID), []byte("jid: "+j.JID+"\ncommand: [a]\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return j
		}, Scheduling, ""},
		{"unparseable file: reported, left alone", func(t *testing.T, s *Spool) *Job {
			j := place(t, s, Scheduling)
			if err := os.WriteFile(filepath.Join(s.Dir(Scheduling), j.JID), []byte("command: [\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return j
		}, Scheduling, "unreadable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSpool(t)
			j := tc.setup(t, s)
			got, err := s.Recover(Scheduling)
			if err != nil {
				t.Fatal(err)
			}
			action := ""
			if len(got) == 1 {
				action = got[0].Action
			} else if len(got) > 1 {
				t.Fatalf("recovered %+v", got)
			}
			if action != tc.wantAction {
				t.Errorf("action %q (%+v), want %q", action, got, tc.wantAction)
			}
			if in := where(t, s, j.JID); len(in) != 1 || in[0] != tc.wantIn {
				t.Errorf("after recovery the job is in %v, want [%s]", in, tc.wantIn)
			}
			// Recovery is idempotent: a second run finds nothing more to do.
			again, err := s.Recover(Scheduling)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range again {
				if r.Action == "completed" || r.Action == "removed-stale" {
					t.Errorf("second recovery acted again: %+v", r)
				}
			}
		})
	}
}

func TestFind_PrefersLongerHistoryDuringDuplicate(t *testing.T) {
	s := newSpool(t)
	j := place(t, s, Scheduling)
	midMove(t, s, j, Runnable)
	r := movedOn(t, s, j, Running)
	st, got, err := s.Find(j.JID)
	if err != nil || st != Running || len(got.History) != len(r.History) {
		t.Errorf("Find = %s %v, want running", st, err)
	}
	if _, _, err := s.Find("J999999"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Find of unknown job: %v", err)
	}
	if _, _, err := s.Find("../x"); err == nil {
		t.Error("Find accepted a bad JID")
	}
}

func TestClaim_SubmitToQueued(t *testing.T) {
	s := newSpool(t)
	n1, err := s.Submit("job.yaml", []byte(validJob))
	if err != nil {
		t.Fatal(err)
	}
	n2, err := s.Submit("dir/job.yaml", []byte(validJob))
	if err != nil {
		t.Fatal(err)
	}
	if n1 != "job.yaml" || n2 != "job.yaml-2" {
		t.Errorf("submitted as %q and %q", n1, n2)
	}
	es, err := s.List(Submitted)
	if err != nil || len(es) != 2 {
		t.Fatalf("list submitted: %v %v", es, err)
	}
	c, err := s.Claim(n1)
	if err != nil {
		t.Fatal(err)
	}
	if c.JID != "J000001" || c.Name != "job.yaml" || string(c.Data) != validJob || c.User == "" {
		t.Errorf("claim %+v", c)
	}
	if _, err := os.Lstat(filepath.Join(s.Dir(Submitted), n1)); !os.IsNotExist(err) {
		t.Error("claimed file still in submitted/")
	}
	// While claimed, the job can be found and is reported as submitted.
	if st, _, err := s.Find(c.JID); err != nil || st != Submitted {
		t.Errorf("Find of a claimed job: %s %v", st, err)
	}
	j, err := c.Job()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Move(j, Submitted, Queued, ""); err != nil {
		t.Fatal(err)
	}
	q, err := s.Read(Queued, c.JID)
	if err != nil {
		t.Fatal(err)
	}
	if q.JID != c.JID || q.User != c.User || !q.SubmittedAt.Equal(c.ArrivedAt) || len(q.History) != 2 ||
		q.History[0].State != Submitted || q.History[1].State != Queued {
		t.Errorf("queued job %+v", q)
	}
	if js := junk(t, s); len(js) > 0 {
		t.Errorf("left behind: %v", js)
	}
	if _, err := s.Claim(n1); !errors.Is(err, ErrNotFound) {
		t.Errorf("claiming a gone file: %v", err)
	}
}

func TestClaim_RejectionKeepsTheBytes(t *testing.T) {
	s := newSpool(t)
	orig := "name: broken\nnotify: bob@example.org\ncomand: [x]\n\xff\n"
	name, err := s.Submit("broken.yaml", []byte(orig))
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Claim(name)
	if err != nil {
		t.Fatal(err)
	}
	_, perr := c.Job()
	var pe *ParseError
	if !errors.As(perr, &pe) {
		t.Fatalf("bad submission parsed: %v", perr)
	}
	w := c.Rejection(pe.Detail())
	if err := s.Move(w, Submitted, Rejected, "invalid"); err != nil {
		t.Fatal(err)
	}
	r, err := s.Read(Rejected, c.JID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Original != orig {
		t.Errorf("original bytes changed: %q", r.Original)
	}
	if r.Reason != pe.Detail() || !strings.Contains(r.Reason, "broken.yaml:") {
		t.Errorf("reason %q", r.Reason)
	}
	if r.User != c.User || r.JID != c.JID {
		t.Errorf("wrapper %+v", r)
	}

	// Salvage of name and notify when the bytes are YAML but invalid.
	name, _ = s.Submit("inv.yaml", []byte("name: inv\nnotify: bob@example.org\nhosts: {count: 0}\ncommand: [x]\n"))
	c, _ = s.Claim(name)
	if _, err := c.Job(); err == nil {
		t.Fatal("count 0 accepted")
	}
	w = c.Rejection("x")
	if w.Name != "inv" || w.Notify != "bob@example.org" {
		t.Errorf("salvaged name %q notify %q", w.Name, w.Notify)
	}
}

func TestClaim_RecoverAfterCrash(t *testing.T) {
	s := newSpool(t)
	// Claimed, then crashed before the move (after C2).
	n, _ := s.Submit("a.yaml", []byte(validJob))
	pending, err := s.Claim(n)
	if err != nil {
		t.Fatal(err)
	}
	// Claimed and moved, then crashed before the claim was removed (after S1).
	n, _ = s.Submit("b.yaml", []byte(validJob))
	done, err := s.Claim(n)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := done.Job()
	b, _ := j.Marshal()
	if err := WriteAtomic(s.Dir(Queued), done.JID, b); err != nil {
		t.Fatal(err)
	}

	s2, _ := Open(s.Root())
	cs, err := s2.RecoverClaims()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].JID != pending.JID || cs[0].Name != "a.yaml" || string(cs[0].Data) != validJob ||
		!cs[0].ArrivedAt.Equal(pending.ArrivedAt) {
		t.Fatalf("recovered claims %+v, want only %s", cs, pending.JID)
	}
	if _, err := os.Lstat(filepath.Join(s.tmp, done.file)); !os.IsNotExist(err) {
		t.Error("completed claim not removed")
	}
	j, err = cs[0].Job()
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Move(j, Submitted, Queued, "recovered"); err != nil {
		t.Fatal(err)
	}
	if in := where(t, s2, pending.JID); len(in) != 1 || in[0] != Queued {
		t.Errorf("recovered job is in %v", in)
	}
	if next, _ := s2.NextJID(); next != "J000003" {
		t.Errorf("next JID after recovery %s, want J000003 (never reuse)", next)
	}
}

func TestMove_Refusals(t *testing.T) {
	s := newSpool(t)
	j := place(t, s, Queued)
	stale := *j
	if err := s.Move(j, Queued, Scheduling, ""); err != nil {
		t.Fatal(err)
	}
	// A stale copy of the job still says queued: the file is not there.
	if err := s.Move(&stale, Queued, Scheduling, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("move of a job no longer in queued: %v", err)
	}
	// Read from scheduling, asked to move from queued.
	if err := s.Move(j, Queued, Runnable, ""); err == nil || !strings.Contains(err.Error(), "read from") {
		t.Errorf("move with the wrong from: %v", err)
	}
	// The destination already holds the JID: never overwrite.
	other := place(t, s, Scheduling)
	writeJob(t, s, Runnable, other)
	if err := s.Move(other, Scheduling, Runnable, ""); err == nil || !strings.Contains(err.Error(), "already in runnable") {
		t.Errorf("move over an existing file: %v", err)
	}
	if err := s.Remove(j); err == nil {
		t.Error("removed a job from scheduling/")
	}
}

func TestUpdateAndRemove(t *testing.T) {
	s := newSpool(t)
	j := place(t, s, Running)
	j.Run = &RunInfo{PID: 4242, PGID: 4242, Attempts: 1}
	if err := s.Update(j); err != nil {
		t.Fatal(err)
	}
	r, err := s.Read(Running, j.JID)
	if err != nil || r.Run == nil || r.Run.PID != 4242 {
		t.Fatalf("after update: %+v %v", r, err)
	}
	if err := s.Move(r, Running, Finished, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(r); err != nil {
		t.Fatal(err)
	}
	if in := where(t, s, j.JID); len(in) != 0 {
		t.Errorf("removed job still in %v", in)
	}
	if err := s.Remove(r); !errors.Is(err, ErrNotFound) {
		t.Errorf("second remove: %v", err)
	}
}

func TestList_Order(t *testing.T) {
	s := newSpool(t)
	for _, jid := range []string{"J000010", "J1000000", "J000002", "J999999"} {
		writeJob(t, s, Queued, &Job{JID: jid, Command: []string{"x"}})
	}
	// Staging dot-files and directories are not jobs.
	os.WriteFile(filepath.Join(s.Dir(Queued), ".J000001.123"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(s.Dir(Queued), "sub"), 0o755)
	es, err := s.List(Queued)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Name)
	}
	if strings.Join(got, " ") != "J000002 J000010 J999999 J1000000" {
		t.Errorf("order %v", got)
	}

	old := time.Now().Add(-time.Hour)
	for i, n := range []string{"c", "a", "b"} {
		p := filepath.Join(s.Dir(Submitted), n)
		os.WriteFile(p, []byte("x"), 0o644)
		os.Chtimes(p, old, old.Add(time.Duration(i)*time.Minute))
	}
	es, _ = s.List(Submitted)
	got = got[:0]
	for _, e := range es {
		got = append(got, e.Name)
	}
	if strings.Join(got, " ") != "c a b" {
		t.Errorf("submitted order %v, want arrival order c a b", got)
	}
}

// Each RequestCancel is a request of its own: asked twice, J000012 has
// two, which the daemons act on once and all remove.
func TestControl_Cancel(t *testing.T) {
	s := newSpool(t)
	for _, jid := range []string{"J000012", "J000003", "J000012"} {
		if err := s.RequestCancel(jid); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RequestCancel("../../etc/passwd"); err == nil {
		t.Error("cancel accepted a bad JID")
	}
	os.WriteFile(filepath.Join(s.Path(DirControl), "README"), []byte("x"), 0o644)
	cs, err := s.Controls()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 3 || cs[0].JID != "J000003" || cs[1].JID != "J000012" || cs[2].JID != "J000012" ||
		cs[1].File() == cs[2].File() || cs[0].Kind != Cancel || cs[0].At.IsZero() {
		t.Fatalf("controls %+v", cs)
	}
	if err := s.DoneControl(cs[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.DoneControl(cs[0]); err != nil {
		t.Errorf("second DoneControl: %v", err)
	}
	cs, _ = s.Controls()
	if len(cs) != 2 || cs[0].JID != "J000012" || cs[1].JID != "J000012" {
		t.Errorf("after done: %+v", cs)
	}
}

func TestCleanTmp(t *testing.T) {
	s := newSpool(t)
	n, _ := s.Submit("a.yaml", []byte(validJob))
	c, _ := s.Claim(n)
	old := time.Now().Add(-time.Hour)
	stale := []string{filepath.Join(s.tmp, "J000009.123"), filepath.Join(s.Path(DirDB), ".jid.456"),
		filepath.Join(s.As(Run).stage, "J000011.321")}
	fresh := filepath.Join(s.As(Sched).stage, "J000010.789")
	for _, p := range append(stale, fresh) {
		os.WriteFile(p, []byte("x"), 0o644)
	}
	for _, p := range stale {
		os.Chtimes(p, old, old)
	}
	os.Chtimes(filepath.Join(s.tmp, c.file), old, old)
	got, err := s.CleanTmp(time.Minute)
	if err != nil || got != 3 {
		t.Errorf("cleaned %d, %v; want 3", got, err)
	}
	for _, p := range []string{fresh, filepath.Join(s.tmp, c.file), s.As(Run).stage} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}

func TestAs_RefusesStatesOfOtherOwners(t *testing.T) {
	s := newSpool(t)
	j := place(t, s, Runnable)
	sched := s.As(Sched)
	if err := sched.Move(j, Runnable, Running, ""); err == nil || !strings.Contains(err.Error(), "sched does not own runnable (its owner is run)") {
		t.Errorf("sched moved a runnable job: %v", err)
	}
	if err := sched.Update(j); err == nil {
		t.Error("sched updated a runnable job")
	}
	if _, err := s.As(Run).Recover(Scheduling); err == nil {
		t.Error("run recovered scheduling/")
	}
	if _, err := s.As(Sched).Claim("x"); err == nil {
		t.Error("sched claimed a submission")
	}
	if err := s.As(Run).Move(j, Runnable, Running, ""); err != nil {
		t.Errorf("run could not move its own job: %v", err)
	}
	if in := where(t, s, j.JID); len(in) != 1 || in[0] != Running {
		t.Errorf("job in %v", in)
	}
}

func TestMove_NeverWritesAnUnreadableFile(t *testing.T) {
	s := newSpool(t)
	j := place(t, s, Queued)
	j.Hosts = &Hosts{Count: -1} // a daemon bug
	if err := s.Move(j, Queued, Scheduling, ""); err == nil || !strings.Contains(err.Error(), "hosts.count") {
		t.Errorf("moved a job with hosts.count -1: %v", err)
	}
	if r, err := s.Read(Queued, j.JID); err != nil || len(r.History) != len(j.History) {
		t.Errorf("job in queued/ after refused move: %v", err)
	}
	w := &Job{JID: j.JID, Reason: "bad", state: Queued, file: j.JID}
	if err := s.Move(w, Queued, Scheduling, ""); err == nil || !strings.Contains(err.Error(), "only go to rejected") {
		t.Errorf("moved a wrapper to scheduling: %v", err)
	}
}

// encode checks the tree it writes instead of parsing its output back; on
// jobs of every shape the bytes are Marshal's and Parse reads them back to
// the same job.
func TestEncode_ParsesBack(t *testing.T) {
	s := newSpool(t)
	full := place(t, s, Queued)
	es := 3
	full.Schedule = &Schedule{Hosts: []string{"a/cpu0", "b/cpu1"}, PredictedSeconds: 12.5, DecidedAt: time.Now().UTC(), Policy: "ga-xms"}
	full.Run = &RunInfo{StartedAt: time.Now().UTC(), EndedAt: time.Now().UTC(), ExitStatus: &es, PID: 42, PGID: 42, Attempts: 2, Host: "a/cpu0"}
	full.Reason, full.CancelRequested = "exit status 3", true
	full.Walltime = Duration(90 * time.Second)
	wrapper := &Job{JID: full.JID, User: "bob", SubmittedAt: full.SubmittedAt, History: full.History,
		Reason: "not YAML", Original: "\xff\xfe binary: [unclosed\n"}
	moldable := full.Clone()
	moldable.Hosts = &Hosts{Min: 2, Max: 0, Arch: "x86_64", Cluster: "c1"}
	uid := 1001
	remote := full.Clone()
	remote.Hosts = &Hosts{Cluster: "ws"}
	remote.Env, remote.Launch, remote.RanksPerHost, remote.SubmitDir, remote.UID = map[string]string{"A": "b c"}, LaunchMPI, 2, "/home/a", &uid
	remote.Run.SlurmJob = "17"
	for name, j := range map[string]*Job{"full": full, "wrapper": wrapper, "moldable": moldable, "remote": remote} {
		data, err := s.encode(j)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		back, err := Parse(j.JID, data)
		if err != nil {
			t.Fatalf("%s: written file does not parse: %v\n%s", name, err, data)
		}
		back.state, back.file = j.state, j.file
		if !reflect.DeepEqual(back, j) {
			t.Errorf("%s: read back\n%+v\nwant\n%+v", name, back, j)
		}
	}
	// What encode refuses, Parse refuses, for the same field.
	for i, bad := range []func(j *Job){
		func(j *Job) { j.Hosts = &Hosts{Count: -1} },
		func(j *Job) { j.History = append(j.History, Event{State: "limbo", At: time.Now()}) },
		func(j *Job) { j.JID = "J12" },
		func(j *Job) { j.Command, j.Reason = nil, "" },
		func(j *Job) { j.Model = &Model{} },
		func(j *Job) { j.Hosts = &Hosts{Min: 3, Max: 2} },
		func(j *Job) { j.Hosts = &Hosts{Count: 2, Min: 1} },
		func(j *Job) { j.Hosts = &Hosts{} },
		func(j *Job) { j.Walltime = -1 },
		func(j *Job) { j.Launch = "rsh" },
		func(j *Job) { j.RanksPerHost = 2 },
		func(j *Job) { j.Launch, j.RanksPerHost = LaunchMPI, -1 },
		func(j *Job) { j.Env = map[string]string{"MSCHED_JID": "x"} },
		func(j *Job) { j.Model = &Model{Name: "m", Params: map[string]float64{"x": math.NaN()}} },
	} {
		j := full.Clone()
		bad(j)
		_, eerr := s.encode(j)
		m, _ := j.Marshal()
		_, perr := Parse(j.JID, m)
		if eerr == nil || perr == nil {
			t.Errorf("case %d: encode: %v; parse: %v; want both to refuse", i, eerr, perr)
		}
	}
}

// A batch's moves are visible at once and durable at Commit; the claims of
// moves from submitted stay until then, so a crash before Commit leaves
// claims that RecoverClaims resolves, never a lost job.
func TestBatch_CommitsTogether(t *testing.T) {
	s := newSpool(t)
	in, sched, reaper := s.As(Init), s.As(Sched), s.As(Reaper)
	var names []string
	for _, n := range []string{"a.yaml", "b.yaml", "c.yaml"} {
		name, err := s.Submit(n, []byte(validJob))
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	claims, _, err := in.ClaimAll(names)
	if err != nil || len(claims) != 3 {
		t.Fatalf("claims %v, %v", claims, err)
	}
	b := in.Batch()
	var jobs []*Job
	for _, c := range claims {
		j, err := c.Job()
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Move(j, Submitted, Queued, ""); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	if got, _ := s.Names(Queued); len(got) != 3 {
		t.Errorf("before Commit: %d in queued/, want 3 (visible)", len(got))
	}
	if cs, _ := s.claimFiles(); len(cs) != 3 {
		t.Errorf("before Commit: %d claims, want 3 (kept until the moves are durable)", len(cs))
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if cs, _ := s.claimFiles(); len(cs) != 0 {
		t.Errorf("after Commit: %d claims left", len(cs))
	}

	// A crash before Commit: the next init finds the claim and the job, and
	// keeps the job once, not judged again.
	name, _ := s.Submit("d.yaml", []byte(validJob))
	c, err := in.Claim(name)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := c.Job()
	if err := in.Batch().Move(j, Submitted, Queued, ""); err != nil { // never committed
		t.Fatal(err)
	}
	again, err := in.RecoverClaims()
	if err != nil || len(again) != 0 {
		t.Errorf("recovery after an uncommitted batch judged %d claims again (%v), want 0", len(again), err)
	}
	if left, _ := s.claimFiles(); len(left) != 0 || len(where(t, s, j.JID)) != 1 {
		t.Errorf("after recovery: claims %v, job in %v; want no claim and the job in queued/", left, where(t, s, j.JID))
	}

	// Between daemon states, and removals.
	b = sched.Batch()
	for _, j := range jobs {
		if err := b.Move(j, Queued, Scheduling, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if in := where(t, s, j.JID); len(in) != 1 || in[0] != Scheduling {
			t.Errorf("%s in %v", j.JID, in)
		}
		r, _ := sched.Read(Scheduling, j.JID)
		r.Reason = "test"
		if err := sched.Move(r, Scheduling, Rejected, ""); err != nil {
			t.Fatal(err)
		}
		j.state, j.file = Rejected, j.JID
	}
	b = reaper.Batch()
	for _, j := range jobs {
		if err := b.Remove(j); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Names(Rejected); len(got) != 0 {
		t.Errorf("%d left in rejected/", len(got))
	}
	if left := junk(t, s); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
