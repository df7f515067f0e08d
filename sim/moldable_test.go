package sim

import (
	"context"
	"testing"

	"msched/policy"
)

// A rigid job of 4 processors and 100 s on an 8-processor machine becomes
// moldable on 2..8 processors: 162.5 s on 2, 100 s on 4, 81.25 s on 8; the
// policy's predictor says the same; a job already moldable is kept.
func TestMoldable_FromRigid(t *testing.T) {
	eq2 := func(n int) float64 { return 100 / float64(n) }
	in := []Job{rigid("R", 0, 4, 100, 100), {ID: "M", Min: 1, Max: 3, Time: eq2}, rigid("W", 0, 8, 10, 10)}
	jobs := Moldable(in, 8)
	if in[0].Time != nil || in[0].Min != 4 {
		t.Fatal("Moldable changed its argument")
	}
	r := jobs[0]
	if r.Min != 2 || r.Max != 8 || r.Time(2) != 162.5 || r.Time(4) != 100 || r.Time(8) != 81.25 {
		t.Fatalf("R: %d..%d, %g %g %g", r.Min, r.Max, r.Time(2), r.Time(4), r.Time(8))
	}
	if m := jobs[1]; m.Min != 1 || m.Max != 3 || m.Time(2) != 50 {
		t.Fatalf("M changed: %d..%d", m.Min, m.Max)
	}
	if w := jobs[2]; w.Min != 4 || w.Max != 8 || w.Time(8) != 10 {
		t.Fatalf("W: %d..%d, %g", w.Min, w.Max, w.Time(8))
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

// A multicluster request keeps its size: its components fix it.
func TestMoldable_KeepsRequests(t *testing.T) {
	j := rigid("C", 0, 4, 100, 100)
	j.Request, j.Components = 2, []int{2, 2}
	if got := Moldable([]Job{j}, 8)[0]; got.Time != nil || got.Min != 4 || got.Max != 4 {
		t.Fatalf("request molded: %d..%d", got.Min, got.Max)
	}
}
