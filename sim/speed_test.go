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

// The speed targets: easy over the SDSC-SP2 sample in at most 1 s,
// over 100,000 generated o2k jobs (960 processors) in at most 20 s. Wall
// times are only asserted without the race detector, which slows the run
// several times; the o2k run is left out under -short.
func TestSim_Speed(t *testing.T) {
	_, recs, err := workload.ReadFile(sdscTrace)
	if err != nil {
		t.Fatal(err)
	}
	d, m := timeEasy(t, recs, 128)
	t.Logf("easy, SDSC-SP2 sample (%d jobs, 128 processors): %v, %d decisions", len(recs), d, m.Decisions)
	if !raceEnabled && d > time.Second {
		t.Errorf("easy over the SDSC-SP2 sample took %v, want ≤ 1 s", d)
	}
	if testing.Short() || raceEnabled {
		return
	}
	seed := int64(1)
	_, o2k, err := workload.GenerateO2K(workload.O2KConfig{Jobs: 100000}, rand.New(rand.NewSource(seed)))
	if err != nil {
		t.Fatal(err)
	}
	d, m = timeEasy(t, o2k, workload.O2KMachineProcs)
	t.Logf("easy, o2k (100,000 jobs, seed %d, %d processors): %v, %d decisions, utilisation %.3f, mean wait %.0f s",
		seed, workload.O2KMachineProcs, d, m.Decisions, m.Utilization, m.MeanWait)
	if d > 20*time.Second {
		t.Errorf("easy over 100,000 o2k jobs took %v, want ≤ 20 s", d)
	}
}
