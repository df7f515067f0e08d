package spool

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// RecoverClaimsWith resolves each claim left in tmp/ by what became of its
// JID: in a state directory (the move was done: removed), in none but
// reaped (the job ran and left: removed, returned in done, never judged
// again), in neither (never moved: returned, to be judged). When reaped
// cannot answer, the claims it was asked about stay, unjudged.
func TestRecoverClaimsWith_ReapedJobsAreNotJudgedAgain(t *testing.T) {
	s := newSpool(t).As(Init)
	claim := func() *Claim {
		t.Helper()
		name, err := s.Submit("job.yaml", []byte(validJob))
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.Claim(name)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	queued, reaped, fresh := claim(), claim(), claim()
	// queued's move was done, reaped's too and its job has left since;
	// both claims stayed, as an init that died before its Commit leaves them.
	j, err := queued.Job()
	if err != nil {
		t.Fatal(err)
	}
	data, err := j.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(s.Dir(Queued), j.JID, data); err != nil {
		t.Fatal(err)
	}
	var asked []string
	record := func(_ context.Context, jids []string) (map[string]bool, error) {
		asked = append(asked, jids...)
		return map[string]bool{reaped.JID: true}, nil
	}
	failing := func(context.Context, []string) (map[string]bool, error) { return nil, errors.New("log unreadable") }

	claims, done, err := s.RecoverClaimsWith(context.Background(), failing)
	if err == nil || len(claims) != 0 || len(done) != 0 {
		t.Fatalf("reaped failing: %d claims, done %v, err %v; want none and an error", len(claims), done, err)
	}
	if left, _ := s.ClaimedJIDs(); !slices.Equal(left, []string{reaped.JID, fresh.JID}) {
		t.Fatalf("claims left %v; want %s's removed (its job is queued) and the two others kept", left, queued.JID)
	}

	claims, done, err = s.RecoverClaimsWith(context.Background(), record)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(asked, []string{reaped.JID, fresh.JID}) {
		t.Errorf("asked about %v; want only the JIDs in no state", asked)
	}
	if !slices.Equal(done, []string{reaped.JID}) || len(claims) != 1 || claims[0].JID != fresh.JID {
		t.Fatalf("done %v, claims %v; want %s done and %s to judge", done, claims, reaped.JID, fresh.JID)
	}
	if left, _ := s.ClaimedJIDs(); !slices.Equal(left, []string{fresh.JID}) {
		t.Errorf("claims left %v; want only %s's", left, fresh.JID)
	}
	if _, err := os.Lstat(filepath.Join(s.Dir(Queued), reaped.JID)); err == nil {
		t.Errorf("%s queued again", reaped.JID)
	}
}

// A claim whose job an older msched left in exited/ (before the reaper
// owned finished/) is resolved as moved on, not judged again: init may
// start before the reaper moves exited/ to finished/.
func TestRecoverClaimsWith_JobInLegacyExited(t *testing.T) {
	s := newSpool(t).As(Init)
	j := place(t, s, Submitted) // its claim stays in tmp/
	data, err := j.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(s.Root(), string(legacyExited))
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, j.JID), data, 0o644); err != nil {
		t.Fatal(err)
	}
	none := func(context.Context, []string) (map[string]bool, error) { return map[string]bool{}, nil }
	claims, done, err := s.RecoverClaimsWith(context.Background(), none)
	if err != nil || len(claims) != 0 || len(done) != 0 {
		t.Fatalf("%d claims to judge, done %v, err %v; want none: the job is in exited/", len(claims), done, err)
	}
}

// StateOf names the daemon-owned state a job's file is in, whichever it
// is; a job in exited/ is in a state for inAState (init's recovery) but in
// none StateOf names, and a name that is no JID is in none.
func TestSpool_StateOf(t *testing.T) {
	s := newSpool(t)
	jid, err := s.NextJID()
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := s.StateOf(jid); ok || s.inAState(jid) {
		t.Fatalf("a JID with no file: in %q", st)
	}
	old := filepath.Join(s.Root(), string(legacyExited))
	for _, st := range append(slices.Clone(States[1:]), legacyExited) {
		dir := s.Dir(st)
		if st == legacyExited {
			dir = old
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, jid)
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		got, ok := s.StateOf(jid)
		if want := st != legacyExited; ok != want || ok && got != st {
			t.Errorf("in %s: StateOf says %q %v", st, got, ok)
		}
		if !s.inAState(jid) {
			t.Errorf("in %s: not in a state for inAState", st)
		}
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.Dir(Queued), "J12"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st, ok := s.StateOf("J12"); ok {
		t.Errorf("StateOf of a name that is no JID: %q", st)
	}
}
