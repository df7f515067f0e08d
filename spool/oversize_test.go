package spool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oversize puts a 200 MB job file into submitted/: a job's start, then
// 200 MB of a hole (a sparse file: its size is what init looks at).
func oversize(tb testing.TB, s *Spool, name string) {
	tb.Helper()
	f, err := os.Create(filepath.Join(s.Dir(Submitted), name))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(validJob + "# and 200 MB more\n"); err != nil {
		tb.Fatal(err)
	}
	if err := f.Truncate(200 << 20); err != nil {
		tb.Fatal(err)
	}
}

// judgeLikeInit is init's path for one submission (daemons.judge): claim,
// parse, and move to queued/ or, with the reason, to rejected/.
func judgeLikeInit(tb testing.TB, s *Spool, name string) *Job {
	tb.Helper()
	c, err := s.Claim(name)
	if err != nil {
		tb.Fatal(err)
	}
	j, err := c.Job()
	if err == nil {
		if err := s.Move(j, Submitted, Queued, ""); err != nil {
			tb.Fatal(err)
		}
		return j
	}
	var pe *ParseError
	if !errors.As(err, &pe) {
		tb.Fatalf("%T %v", err, err)
	}
	r := c.Rejection(pe.Detail())
	if err := s.Move(r, Submitted, Rejected, "invalid submission"); err != nil {
		tb.Fatal(err)
	}
	return r
}

// Issue 13: a 200 MB job file made init use 3.5 GB and took 26 s. It must
// cost init under 50 MB and be rejected in under a second (the time is
// BenchmarkJudge_200MB's figure: a wall-clock bound here would fail on a
// loaded machine). Init refuses it by its size (fstat) and reads, keeps
// and quotes only its first 4 KiB.
func TestJudge_200MBFileIsCheap(t *testing.T) {
	s := newSpool(t).As(Init)
	oversize(t, s, "big.yaml")
	var r *Job
	n := allocated(func() { r = judgeLikeInit(t, s, "big.yaml") })
	if n > 50<<20 {
		t.Errorf("judging a 200 MB file allocated %d MB, over 50 MB", n>>20)
	}
	if r.State() != Rejected || !strings.HasPrefix(r.Reason, "big.yaml: too large: 209715200 bytes, over the limit of 1048576 bytes (1 MiB)") {
		t.Errorf("state %s, reason %q", r.State(), r.Reason)
	}
	if len(r.Original) > oversizeKept || !strings.HasPrefix(r.Original, validJob) {
		t.Errorf("kept %d bytes of it: %.100q…", len(r.Original), r.Original)
	}
	fi, err := os.Stat(filepath.Join(s.Dir(Rejected), r.JID))
	if err != nil || fi.Size() > 16<<10 {
		t.Errorf("the rejected job file: %v, %d bytes", err, fi.Size())
	}
	t.Logf("judging a 200 MB file allocated %d KiB", n>>10)
}

// BenchmarkJudge_200MB is init's cost for one 200 MB submission: claim,
// refuse by size, move to rejected/ with its first 4 KiB (fsyncs
// included). The file is made outside the timer.
func BenchmarkJudge_200MB(b *testing.B) {
	s := newSpool(b).As(Init)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		oversize(b, s, "big.yaml")
		b.StartTimer()
		if r := judgeLikeInit(b, s, "big.yaml"); r.State() != Rejected {
			b.Fatalf("%s: %s", r.State(), r.Reason)
		}
	}
}
