package sim

import (
	"context"
	"testing"

	"msched/models"
	"msched/policy"
	"msched/profiler"
)

// A rigid job of 4 processors and 100 s on an 8-processor machine becomes
// moldable on 2..8 processors: 162.5 s on 2, 100 s on 4, 81.25 s on 8; the
// policy's predictor says the same; a job already moldable is kept.
func TestMoldable_FromRigid(t *testing.T) {
	eq2 := func(n int) float64 { return 100 / float64(n) }
	in := []Job{rigid("R", 0, 4, 100, 100), {ID: "M", Min: 1, Max: 3, Time: eq2}, rigid("W", 0, 8, 10, 10)}
	jobs := Moldable(in, 8, models.MoldCurve{})
	if in[0].Mold != nil || in[0].Min != 4 {
		t.Fatal("Moldable changed its argument")
	}
	r := jobs[0]
	if r.Min != 2 || r.Max != 8 || r.runOn(2) != 162.5 || r.runOn(4) != 100 || r.runOn(8) != 81.25 {
		t.Fatalf("R: %d..%d, %g %g %g", r.Min, r.Max, r.runOn(2), r.runOn(4), r.runOn(8))
	}
	if m := jobs[1]; m.Min != 1 || m.Max != 3 || m.Mold != nil || m.runOn(2) != 50 {
		t.Fatalf("M changed: %d..%d", m.Min, m.Max)
	}
	if w := jobs[2]; w.Min != 4 || w.Max != 8 || w.runOn(8) != 10 {
		t.Fatalf("W: %d..%d, %g", w.Min, w.Max, w.runOn(8))
	}
	if again := Moldable(jobs, 8, models.MoldCurve{})[0]; again.Min != 2 || again.Mold != r.Mold {
		t.Fatalf("a moldable job was molded again: %d..%d", again.Min, again.Max)
	}

	s, err := New(Config{Machine: Identical(8)}, jobs[:1])
	if err != nil {
		t.Fatal(err)
	}
	var predicted float64
	p := policyFunc(func(ctx context.Context, snap policy.Snapshot) (policy.Plan, error) {
		d, err := s.Predictor().Predict(ctx, &snap.Queue[0], snap.Hosts[:2])
		predicted = d.Seconds()
		return policy.Plan{StartNow: []policy.Placement{{Job: "R", Hosts: []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"}, Start: snap.Now}}}, err
	})
	res, err := s.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.End[0] != 81.25 || predicted != 162.5 {
		t.Fatalf("end %g, predicted on 2 hosts %g; want 81.25, 162.5", res.End[0], predicted)
	}
}

// With Downey's curve (σ 2) the same job runs on 2..8 hosts, its run and
// its estimate scaled by the curve: N_opt 4 is its working set, and 8 hosts
// (σ·N_opt) are where its speedup stops growing.
func TestMoldable_DowneyCurve(t *testing.T) {
	j := Moldable([]Job{rigid("R", 0, 4, 100, 200)}, 8, models.MoldCurve{Downey: true, Sigma: 2})[0]
	d := models.DowneyCurve{Opt: 4, Sigma: 2, Machine: 8}
	if j.Min != 2 || j.Max != 8 || j.size() != 4 {
		t.Fatalf("%d..%d, N_opt %d; want 2..8, 4", j.Min, j.Max, j.size())
	}
	for n := 2; n <= 8; n++ {
		if j.runOn(n) != 100*d.Factor(n) || j.estimateOn(n) != 200*d.Factor(n) {
			t.Errorf("on %d: run %g, estimate %g; want %g, %g", n, j.runOn(n), j.estimateOn(n), 100*d.Factor(n), 200*d.Factor(n))
		}
	}
	if !(j.runOn(2) > 100 && j.runOn(4) == 100 && j.runOn(8) < j.runOn(7)) {
		t.Errorf("run %g, %g, %g, %g on 2, 4, 7, 8", j.runOn(2), j.runOn(4), j.runOn(7), j.runOn(8))
	}
}

// A multicluster request keeps its size: its components fix it.
func TestMoldable_KeepsRequests(t *testing.T) {
	j := rigid("C", 0, 4, 100, 100)
	j.Request, j.Components = 2, []int{2, 2}
	if got := Moldable([]Job{j}, 8, models.MoldCurve{})[0]; got.Mold != nil || got.Min != 4 || got.Max != 4 {
		t.Fatalf("request molded: %d..%d", got.Min, got.Max)
	}
}

// A moldable trace job's estimate is scaled as its run is: told its
// request (200 s for a run of 100 s on 4 hosts), the policy hears 325 s
// for 2 hosts and 162.5 s for 8, while it runs 81.25 s on 8. Unknown stays
// unknown.
func TestMoldable_ScalesTheEstimate(t *testing.T) {
	jobs := Moldable([]Job{rigid("R", 0, 4, 100, 200), rigid("U", 0, 4, 100, 0)}, 8, models.MoldCurve{})
	if r := jobs[0]; r.estimateOn(2) != 325 || r.estimateOn(4) != 200 || r.estimateOn(8) != 162.5 {
		t.Fatalf("estimates %g %g %g, want 325 200 162.5", r.estimateOn(2), r.estimateOn(4), r.estimateOn(8))
	}
	if u := jobs[1]; u.estimateOn(2) != 0 {
		t.Fatalf("an unknown estimate became %g", u.estimateOn(2))
	}
	s, err := New(Config{Machine: Identical(8)}, jobs[:1])
	if err != nil {
		t.Fatal(err)
	}
	var told, queued float64
	p := policyFunc(func(ctx context.Context, snap policy.Snapshot) (policy.Plan, error) {
		d, err := s.Predictor().Predict(ctx, &snap.Queue[0], snap.Hosts[:2])
		told, queued = d.Seconds(), snap.Queue[0].Estimate.Seconds()
		return policy.Plan{StartNow: []policy.Placement{{Job: "R", Hosts: []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"}, Start: snap.Now}}}, err
	})
	res, err := s.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if told != 325 || queued != 325 || res.End[0] != 81.25 {
		t.Fatalf("told %g on 2 hosts, queued with %g, ended at %g; want 325, 325 (on Min), 81.25", told, queued, res.End[0])
	}
}

// The profiler is asked for a moldable trace job on its N_opt hosts, the
// size its Run and Estimate are for, and the answer is scaled. The
// executable has run 100 s on 4 hosts (a, b, molded) and 400 s on 2 (d, e,
// rigid); c, molded to 2..8 from 4, is told the 4-host history scaled to
// its 2 hosts, 162.5 s (asked on its 2 hosts, it would hear 650 s).
func TestMoldable_ProfilerEstimateOnNopt(t *testing.T) {
	p, err := profiler.New(profiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	jobs := Moldable([]Job{rigid("a", 0, 4, 100, 0), rigid("b", 0, 4, 100, 0), rigid("c", 1000, 4, 100, 0)}, 8, models.MoldCurve{})
	jobs = append(jobs, rigid("d", 200, 2, 400, 0), rigid("e", 200, 2, 400, 0))
	for i := range jobs {
		jobs[i].Executable, jobs[i].User = 3, 1
	}
	s, err := New(Config{Machine: Identical(8), Estimator: ProfilerEstimator(p)}, jobs)
	if err != nil {
		t.Fatal(err)
	}
	on := map[string][]string{"a": {"p0", "p1", "p2", "p3"}, "b": {"p4", "p5", "p6", "p7"},
		"d": {"p0", "p1"}, "e": {"p2", "p3"}, "c": {"p0", "p1", "p2", "p3"}}
	told := map[string]float64{}
	pol := policyFunc(func(ctx context.Context, snap policy.Snapshot) (policy.Plan, error) {
		var plan policy.Plan
		for _, q := range snap.Queue {
			told[q.ID] = q.Estimate.Seconds()
			plan.StartNow = append(plan.StartNow, policy.Placement{Job: q.ID, Hosts: on[q.ID], Start: snap.Now})
		}
		return plan, nil
	})
	if _, err := s.Run(context.Background(), pol); err != nil {
		t.Fatal(err)
	}
	if len(told) != 5 || told["c"] != 162.5 {
		t.Fatalf("estimates on Min hosts at submission %v, want c 162.5", told)
	}
}
