package sim

import (
	"context"
	"fmt"
	"math"
	"testing"

	"msched/policy"
	"msched/workload"
)

// A hand-made result for pyss's counting: 150 finished jobs, two of them
// tiny, one finishing after the last submission.
func TestCompute_PyssCounting(t *testing.T) {
	r := &Result{Policy: "x", Hosts: 4}
	add := func(submit, start, end float64, est float64, procs int) {
		r.Jobs = append(r.Jobs, Job{ID: fmt.Sprint(len(r.Jobs)), Submit: submit, Min: procs, Max: procs, Run: end - start, Estimate: est})
		r.Status = append(r.Status, Done)
		r.Start = append(r.Start, start)
		r.End = append(r.End, end)
		r.NHosts = append(r.NHosts, int32(procs))
	}
	// Finish order: the tiny jobs first and fifth, then the others.
	add(0, 0, 1, 1, 1) // tiny, finishes at 1
	for i := 0; i < 3; i++ {
		add(0, 1, float64(2+i), 10, 2) // finish 2, 3, 4
	}
	add(4, 4, 5, 1, 1) // tiny, finishes at 5
	for i := 0; i < 144; i++ {
		add(float64(5+i), float64(5+i), float64(6+i), 5, 1) // finish 6..149, wait 0
	}
	add(149, 150, 400, 300, 4) // finishes after the last submission (149)
	r.LastSubmit = 149
	m := Compute(r, true)
	// 150 finished, 2 tiny: 148 not tiny. The skip of the first 1 % (1 job)
	// counts positions with the tiny jobs, as pyss does, so the tiny job at
	// position 1 uses it up and the job finishing at 2 counts; counting
	// stops at the job finishing after the last submission: 3 + 144.
	if m.Of != 148 || m.Jobs != 147 {
		t.Fatalf("counted %d of %d, want 147 of 148", m.Jobs, m.Of)
	}
	// Waits: the jobs finishing at 2, 3 and 4 waited 1 s; the rest 0.
	if want := 3.0 / 147; math.Abs(m.MeanWait-want) > 1e-12 {
		t.Fatalf("mean wait %g, want %g", m.MeanWait, want)
	}
	// Bounded slowdown: (1+run)/10 < 1 for those three, so every job counts
	// 1; plain slowdown: 2, 3/2 and 4/3 for them, 1 for the rest.
	if m.MeanBSD != 1 || math.Abs(m.MeanSlowdown-(2+1.5+4.0/3+144)/147) > 1e-12 {
		t.Fatalf("bounded slowdown %g, slowdown %g", m.MeanBSD, m.MeanSlowdown)
	}
	// With a first job that is not tiny, it is the one skipped.
	r.Jobs[0].Estimate = 2
	if m := Compute(r, true); m.Of != 149 || m.Jobs != 147 {
		t.Fatalf("counted %d of %d, want 147 of 149", m.Jobs, m.Of)
	}
	// Without pyss every finished job counts.
	if n := Compute(r, false).Jobs; n != 150 {
		t.Fatalf("plain counting: %d jobs, want 150", n)
	}
}

func TestFromSWF_Conventions(t *testing.T) {
	rec := func(id int64, submit, run float64, procs int, req float64) workload.Job {
		j := workload.NewJob()
		j.ID, j.Submit, j.Run, j.Procs, j.ReqTime = id, submit, run, procs, req
		return j
	}
	recs := []workload.Job{
		rec(1, 10, 100, 8, 50),    // runs past its request
		rec(2, 20, 100, 300, 500), // more processors than the machine
		rec(3, 0, 0, 4, 60),       // run time 0: a 1-s job of its 4 processors under pyss, kept otherwise
		rec(6, 50, -1, 1, 60),     // run time unknown, 1 processor: tiny under pyss, skipped otherwise
		rec(4, 30, 5.7, -1, 60),   // processors unknown
		rec(5, 40, 7, 2, -1),      // no request
	}
	pyss, err := FromSWF(workload.Slice(recs), 128, Request, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{
		{ID: "1", Submit: 10, Min: 8, Max: 8, Run: 50, Estimate: 100},
		{ID: "2", Submit: 20, Min: 128, Max: 128, Run: 100, Estimate: 500},
		{ID: "3", Submit: 1, Min: 4, Max: 4, Run: 1, Estimate: 1},
		{ID: "6", Submit: 50, Min: 1, Max: 1, Run: 1, Estimate: 1},
		{ID: "4", Submit: 30, Min: 1, Max: 1, Run: 1, Estimate: 1},
		{ID: "5", Submit: 40, Min: 2, Max: 2, Run: 1, Estimate: 7},
	}
	for i, j := range pyss.Jobs {
		if !sameJob(j, want[i]) {
			t.Errorf("pyss job %d = %+v, want %+v", i, j, want[i])
		}
	}
	if pyss.Tiny != 3 || pyss.Clamped != 1 {
		t.Errorf("tiny %d, clamped %d; want 3, 1", pyss.Tiny, pyss.Clamped)
	}
	// Only the 1-processor ones are pyss's tiny jobs, left out of its
	// statistics; the 4-processor second is counted.
	for i, tiny := range []bool{false, false, false, true, true, false} {
		if got := pyss.Jobs[i].pyssTiny(); got != tiny {
			t.Errorf("pyss job %s: tiny %v, want %v", pyss.Jobs[i].ID, got, tiny)
		}
	}
	plain, err := FromSWF(workload.Slice(recs), 128, Request, false)
	if err != nil {
		t.Fatal(err)
	}
	want = []Job{
		{ID: "1", Submit: 10, Min: 8, Max: 8, Run: 100, Estimate: 50},
		{ID: "2", Submit: 20, Min: 128, Max: 128, Run: 100, Estimate: 500},
		{ID: "3", Submit: 0, Min: 4, Max: 4, Run: 0, Estimate: 60},
		{ID: "5", Submit: 40, Min: 2, Max: 2, Run: 7, Estimate: 7},
	}
	if len(plain.Jobs) != len(want) || plain.Skipped != 2 {
		t.Fatalf("plain: %d jobs, %d skipped; want 4, 2", len(plain.Jobs), plain.Skipped)
	}
	for i, j := range plain.Jobs {
		if !sameJob(j, want[i]) {
			t.Errorf("plain job %d = %+v, want %+v", i, j, want[i])
		}
	}
}

func sameJob(a, b Job) bool {
	return a.ID == b.ID && a.Submit == b.Submit && a.Min == b.Min && a.Max == b.Max &&
		a.Run == b.Run && a.Estimate == b.Estimate && (a.Time == nil) == (b.Time == nil)
}

// A run's rejections are summed up with the first rejected job's reason.
func TestResult_RejectionSummary(t *testing.T) {
	jobs := []Job{rigid("A", 0, 1, 10, 10), rigid("B", 1, 1, 10, 10), rigid("C", 2, 1, 10, 10)}
	p := policyFunc(func(ctx context.Context, snap policy.Snapshot) (policy.Plan, error) {
		var pl policy.Plan
		for _, q := range snap.Queue {
			if q.ID == "A" {
				pl.StartNow = append(pl.StartNow, policy.Placement{Job: "A", Hosts: []string{"p0"}, Start: snap.Now})
			} else {
				pl.Reject = append(pl.Reject, policy.Rejection{Job: q.ID, Reason: "no " + q.ID})
			}
		}
		return pl, nil
	})
	r := run(t, Config{Machine: Identical(2)}, jobs, p)
	if got, want := r.RejectionSummary(), "2 of 3 jobs rejected; the first, B: no B"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	none := run(t, Config{Machine: Identical(2)}, jobs[:1], p)
	if got := none.RejectionSummary(); got != "" {
		t.Errorf("no rejection: %q", got)
	}
}
