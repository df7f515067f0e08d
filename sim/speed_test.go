package sim

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"msched/policy"
	"msched/workload"
)

// timeEasy runs easy over recs on procs processors (request estimates) and
// returns the wall time of the run and its metrics.
func timeEasy(t testing.TB, recs []workload.Job, procs int) (time.Duration, Metrics) {
	tr, err := FromSWF(workload.Slice(recs), procs, Request, false)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Machine: Identical(procs)}, tr.Jobs)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.New("easy", policy.Options{Predictor: s.Predictor()})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r, err := s.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return time.Since(start), Compute(r, false)
}

// The speed targets, measured as benchmarks (never as timed
// tests: the machines are shared): easy over the SDSC-SP2 sample in at most
// 1 s, over 100,000 generated o2k jobs (960 processors) in at most 20 s.
//
//	go test -run XXX -bench EASY -benchtime 1x ./sim
func BenchmarkEASY_SDSC(b *testing.B) {
	_, recs, err := workload.ReadFile(sdscTrace)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		_, m := timeEasy(b, recs, 128)
		b.ReportMetric(float64(m.Decisions), "decisions")
	}
}

func BenchmarkEASY_O2K100k(b *testing.B) {
	_, o2k, err := workload.GenerateO2K(workload.O2KConfig{Jobs: 100000}, rand.New(rand.NewSource(1)))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, m := timeEasy(b, o2k, workload.O2KMachineProcs)
		b.ReportMetric(m.Utilization, "utilisation")
	}
}
