package profiler

import (
	"context"
	"errors"
	"testing"
	"time"

	"msched/models"
	"msched/policy"
)

func TestModel_PredictsUpperLimit(t *testing.T) {
	p := newMem(t)
	observeAll(t, p, "a", "u", 2, 10, 12, 14, 16, 18)
	e, _ := p.Estimate("a", "u", 2, 0)
	hosts := []models.HostSpec{{Arch: "x"}, {Arch: "y"}}
	got, err := p.Model("a", "u").Predict(context.Background(), models.Scenario{Hosts: hosts})
	if err != nil || got != e.Upper() {
		t.Errorf("Predict = %v, %v; want %v", got, err, e.Upper())
	}
	// Attained time goes in as a parameter.
	got, _ = p.Model("a", "u").Predict(context.Background(), models.Scenario{Hosts: hosts, Params: map[string]float64{ParamAttained: 1000}})
	if got <= 1000 {
		t.Errorf("after 1000 s attained: %v, want beyond 1000", got)
	}
	if _, err := newMem(t).Model("a", "u").Predict(context.Background(), models.Scenario{Hosts: hosts}); !errors.Is(err, ErrNoHistory) {
		t.Errorf("empty profiler: err %v, want ErrNoHistory", err)
	}
}

func TestPredictor_ModelFirstThenProfiler(t *testing.T) {
	p := newMem(t)
	observeAll(t, p, "/bin/sim", "ann", 1, 60, 60)
	observeAll(t, p, "byname", "ann", 1, 30, 30)
	next := policy.PredictorFunc(func(_ context.Context, j *policy.QueuedJob, _ []policy.Host) (time.Duration, error) {
		if j.Model != "" {
			return 7 * time.Second, nil
		}
		return 0, nil
	})
	pr := Predictor{Profiler: p, Next: next}
	hosts := []policy.Host{{Name: "h0"}}
	for _, c := range []struct {
		job  policy.QueuedJob
		want time.Duration
	}{
		{policy.QueuedJob{ID: "1", Model: "warwick", Executable: "/bin/sim", User: "ann"}, 7 * time.Second},
		{policy.QueuedJob{ID: "2", Executable: "/bin/sim", User: "ann"}, 60 * time.Second},
		{policy.QueuedJob{ID: "3", Name: "byname", User: "ann"}, 30 * time.Second},
	} {
		got, err := pr.Predict(context.Background(), &c.job, hosts)
		if err != nil || got != c.want {
			t.Errorf("job %s: %v, %v; want %v", c.job.ID, got, err, c.want)
		}
	}
	got, err := Predictor{Profiler: newMem(t)}.Predict(context.Background(), &policy.QueuedJob{ID: "4", Name: "x"}, hosts)
	if got != 0 || err != nil {
		t.Errorf("no history: %v, %v; want 0 (the policy falls back)", got, err)
	}
}
