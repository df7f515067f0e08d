package spool

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// A spool written before the reaper took jobs from finished/ directly may
// hold jobs in exited/, with histories that end in exited. RecoverExited,
// at the reaper's start, moves them to finished/ (a job never lost), where
// they read as any finished job, and removes exited/; a copy left in
// finished/ by a crash is the older one and gives way.
func TestRecoverExited_MovesOldJobsToFinished(t *testing.T) {
	s := newSpool(t)
	old := filepath.Join(s.Root(), string(legacyExited))
	if err := os.Mkdir(old, DirPerm); err != nil {
		t.Fatal(err)
	}
	exited := func(j *Job) {
		t.Helper()
		j.History = append(j.History, Event{State: legacyExited, At: j.SubmittedAt, Note: "completion seen"})
		b, err := j.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(old, j.JID), b, FilePerm); err != nil {
			t.Fatal(err)
		}
	}
	a := place(t, s, Finished)
	if err := os.Rename(filepath.Join(s.Dir(Finished), a.JID), filepath.Join(t.TempDir(), "a")); err != nil {
		t.Fatal(err)
	}
	exited(a)
	b := place(t, s, Finished) // and a stale copy stays in finished/
	exited(b)
	if err := os.WriteFile(filepath.Join(old, ".b.tmp"), nil, FilePerm); err != nil {
		t.Fatal(err) // a staging file: not a job
	}

	if _, err := s.As(Sched).RecoverExited(); err == nil {
		t.Error("sched recovered the reaper's jobs")
	}
	moved, err := s.As(Reaper).RecoverExited()
	if err != nil {
		t.Fatal(err)
	}
	if len(moved) != 2 {
		t.Errorf("moved %v, want %s and %s", moved, a.JID, b.JID)
	}
	if _, err := os.Stat(old); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("exited/ still there: %v", err)
	}
	for _, j := range []*Job{a, b} {
		st, got, err := s.Find(j.JID)
		if err != nil || st != Finished {
			t.Fatalf("%s: in %q, %v; want finished", j.JID, st, err)
		}
		if last := got.History[len(got.History)-1]; last.State != legacyExited || Outcome(st) != OutcomeExited {
			t.Errorf("%s: history ends in %s, outcome %q", j.JID, last.State, Outcome(st))
		}
		if err := s.As(Reaper).Remove(got); err != nil {
			t.Errorf("%s: the reaper cannot remove it: %v", j.JID, err)
		}
	}
	if moved, err := s.As(Reaper).RecoverExited(); err != nil || len(moved) != 0 {
		t.Errorf("second start: moved %v, %v", moved, err)
	}
}
