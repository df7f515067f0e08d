package ga

import (
	"context"
	"errors"
	"math/rand"
	"slices"
	"testing"
)

// The contract tests of the Optimizer interface run on SA and random search
// alike; SA's own tests are in sa_test.go.

// blOptimizers builds SA and random search on p with the same seed, for the
// contract tests both must pass.
func blOptimizers(t *testing.T, p *Problem, k CostKind, seed int64, trace TraceFunc) map[string]Optimizer {
	t.Helper()
	a, err := NewSA(p, SAConfig{Cost: k, Trace: trace}, rand.New(rand.NewSource(seed)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRandomSearch(p, RandomConfig{Cost: k, Trace: trace}, rand.New(rand.NewSource(seed)))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]Optimizer{"sa": a, "random": r}
}

var blOptNames = []string{"sa", "random"}

func TestOptimizers_RespectBudgetExactly(t *testing.T) {
	p := blEq2(10, 8, true, true, rand.New(rand.NewSource(1)))
	for _, budget := range []int{1, 2, 7, 64, 1000} {
		opts := blOptimizers(t, p, XMS, 5, nil)
		for _, name := range blOptNames {
			o := opts[name]
			if err := o.Run(context.Background(), budget); err != nil {
				t.Fatal(err)
			}
			if o.Evaluations() != budget {
				t.Errorf("%s: %d evaluations for a budget of %d", name, o.Evaluations(), budget)
			}
			// A second Run with a larger budget continues to it exactly;
			// one with a smaller budget does nothing.
			if err := o.Run(context.Background(), budget+33); err != nil {
				t.Fatal(err)
			}
			if err := o.Run(context.Background(), budget); err != nil {
				t.Fatal(err)
			}
			if o.Evaluations() != budget+33 {
				t.Errorf("%s: %d evaluations after continuing to %d", name, o.Evaluations(), budget+33)
			}
			c, cost := o.Best()
			if !Legal(p, c) {
				t.Fatalf("%s: best string is illegal", name)
			}
			var s Schedule
			if got := Evaluate(p, c, XMS, &s); got != cost {
				t.Errorf("%s: best cost %g, but the string evaluates to %g", name, cost, got)
			}
		}
	}
}

func TestOptimizers_DeterministicForSeed(t *testing.T) {
	p := blEq2(12, 8, true, true, rand.New(rand.NewSource(2)))
	type run struct {
		trace []float64
		best  *Chromosome
	}
	do := func(name string, seed int64) run {
		var r run
		o := blOptimizers(t, p, MS, seed, func(evals int, best float64) { r.trace = append(r.trace, float64(evals), best) })[name]
		if err := o.Run(context.Background(), 3000); err != nil {
			t.Fatal(err)
		}
		r.best, _ = o.Best()
		return r
	}
	for _, name := range blOptNames {
		a, b, c := do(name, 9), do(name, 9), do(name, 10)
		if !slices.Equal(a.trace, b.trace) || !slices.Equal(a.best.Order, b.best.Order) {
			t.Errorf("%s: two runs with seed 9 differ", name)
		}
		for j := range a.best.Map {
			if !a.best.Map[j].Equal(b.best.Map[j]) {
				t.Errorf("%s: two runs with seed 9 map task %d differently", name, j)
			}
		}
		if slices.Equal(a.trace, c.trace) {
			t.Errorf("%s: seeds 9 and 10 traced the same run", name)
		}
	}
}

func TestOptimizers_ReturnContextError(t *testing.T) {
	p := blEq2(10, 8, false, false, rand.New(rand.NewSource(3)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range blOptNames {
		o := blOptimizers(t, p, MS, 1, nil)[name]
		if err := o.Run(ctx, 100); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Run on a cancelled context returned %v", name, err)
		}
		if o.Evaluations() != 0 {
			t.Errorf("%s: %d evaluations on a cancelled context", name, o.Evaluations())
		}
	}
	// Cancelled mid-run (at the first improvement, which is the first
	// evaluation): Run notices within its check interval and says why.
	for _, name := range blOptNames {
		ctx, cancel := context.WithCancel(context.Background())
		o := blOptimizers(t, p, MS, 1, func(int, float64) { cancel() })[name]
		err := o.Run(ctx, 1_000_000)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Run returned %v after cancellation", name, err)
		}
		if n := o.Evaluations(); n > 200 {
			t.Errorf("%s: %d evaluations after cancellation at the first", name, n)
		}
		cancel()
	}
}

// TestOptimizers_ImproveWithBudget: the mean best cost over instances falls
// with the budget, and SA, which searches, ends far ahead of random
// sampling at the same large budget.
func TestOptimizers_ImproveWithBudget(t *testing.T) {
	budgets := []int{200, 2000, 20000}
	mean := map[string][]float64{"sa": make([]float64, len(budgets)), "random": make([]float64, len(budgets))}
	const seeds = 4
	for seed := int64(1); seed <= seeds; seed++ {
		p := blEq2(20, 16, false, false, rand.New(rand.NewSource(seed)))
		lb := LowerBound(p)
		for bi, b := range budgets {
			for name, o := range blOptimizers(t, p, MS, seed, nil) {
				if err := o.Run(context.Background(), b); err != nil {
					t.Fatal(err)
				}
				_, c := o.Best()
				mean[name][bi] += c / lb / seeds
			}
		}
	}
	for _, name := range blOptNames {
		m := mean[name]
		t.Logf("%s: mean makespan / lower bound at %v evaluations: %.3f", name, budgets, m)
		for i := 1; i < len(m); i++ {
			if m[i] >= m[i-1] {
				t.Errorf("%s: no improvement from %d to %d evaluations (%.3f -> %.3f)", name, budgets[i-1], budgets[i], m[i-1], m[i])
			}
		}
	}
	last := len(budgets) - 1
	if mean["sa"][last] > 0.8*mean["random"][last] {
		t.Errorf("SA at %d evaluations (%.3f of the bound) is not clearly ahead of random search (%.3f)", budgets[last], mean["sa"][last], mean["random"][last])
	}
}

func TestRandomSearch_UsesPeakCounts(t *testing.T) {
	p := blEq2(10, 12, true, false, rand.New(rand.NewSource(8)))
	r, err := NewRandomSearch(p, RandomConfig{}, rand.New(rand.NewSource(8)))
	if err != nil {
		t.Fatal(err)
	}
	seen := make([]map[int]bool, len(p.Tasks))
	for i := range seen {
		seen[i] = map[int]bool{}
	}
	for i := 0; i < 200; i++ {
		r.sample()
		if !Legal(p, r.cand) {
			t.Fatal("illegal sample")
		}
		for j, tk := range p.Tasks {
			if got, want := r.cand.Map[j].Count(), PeakHosts(p, tk); got != want {
				t.Fatalf("task %d on %d hosts, peak is %d", j, got, want)
			}
			for _, h := range r.cand.Map[j].Hosts(nil) {
				seen[j][h] = true
			}
		}
	}
	// Hosts are random: over 200 samples a task short of its allowed set
	// visits more hosts than its count.
	for j, tk := range p.Tasks {
		if k := PeakHosts(p, tk); k < len(allowedHosts(p, tk)) && len(seen[j]) <= k {
			t.Errorf("task %d always on the same %d hosts", j, k)
		}
	}
}
