package ga

import (
	"context"
	"errors"
	"math"
	"math/rand"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"

	"msched/workload"
)

// lpRandom is a random one-host problem of n tasks on m hosts for checking
// LPBound: Braun-like heterogeneous times, every other instance with bases,
// some hosts disallowed (Allowed) and some allowed hosts where a task cannot
// run (+Inf or NaN run time). If wide, task 0 has Max 3 but a single allowed
// host: still a one-host task for the LP, though not for Min-min.
func lpRandom(n, m int, rng *rand.Rand, withBase, wide bool) *Problem {
	p := &Problem{Hosts: m}
	mult := make([]float64, m)
	for h := range mult {
		mult[h] = 1 + 9*rng.Float64()
	}
	for j := 0; j < n; j++ {
		row := make([]float64, m)
		tau := 1 + 99*rng.Float64()
		for h := range row {
			row[h] = tau * mult[h] * (1 + rng.Float64())
		}
		t := &Task{ID: string(rune('A'+j%26)) + string(rune('0'+j/26)), Min: 1, Max: 1}
		switch {
		case j == 0 && wide:
			t.Max, t.Allowed = 3, msBits(m, m-1)
		case rng.Intn(3) == 0:
			t.Allowed = NewBits(m)
			for h := 0; h < m; h++ {
				if rng.Intn(2) == 0 {
					t.Allowed.Set(h)
				}
			}
			if t.Allowed.Count() == 0 {
				t.Allowed.Set(rng.Intn(m))
			}
		}
		if h := rng.Intn(m); j > 0 && m > 1 && rng.Intn(4) == 0 && (t.Allowed == nil || (t.Allowed.Has(h) && t.Allowed.Count() > 1)) {
			// An allowed host where the task cannot run, another being left.
			row[h] = []float64{math.Inf(1), math.NaN()}[rng.Intn(2)]
		}
		t.Runtime = func(hosts []int) float64 {
			if len(hosts) != 1 {
				return math.Inf(1)
			}
			return row[hosts[0]]
		}
		p.Tasks = append(p.Tasks, t)
	}
	if withBase {
		p.Base = make([]float64, m)
		for h := range p.Base {
			p.Base[h] = float64(n) * 20 * rng.Float64() / float64(m)
		}
	}
	return p
}

// lpSimplexOptimum solves the full LP relaxation of a one-host problem with
// gonum's dense simplex: variables x_th for every allowed host of finite time,
// then C, then a slack per host; rows Σ_h x_th = 1 per task and
// C − Σ_t e_th·x_th − s_h = base_h per host. It is built from p directly,
// not from LPBound's own tables, and starts from the basis of every task on
// its fastest host (gonum's phase 1 can fail on these LPs). It is only fit
// for small instances: 512 tasks on 16 hosts take about a minute.
func lpSimplexOptimum(t *testing.T, p *Problem) float64 {
	t.Helper()
	type pair struct {
		task, host int
		time       float64
	}
	n, m := len(p.Tasks), p.Hosts
	var pairs []pair
	var basic []int
	load := make([]float64, m)
	for h := range load {
		load[h] = p.base(h)
	}
	for j, task := range p.Tasks {
		fastest := -1
		for h := 0; h < m; h++ {
			if task.Allowed != nil && !task.Allowed.Has(h) {
				continue
			}
			if d := task.Time(singleHost(m, h)); !math.IsInf(d, 1) {
				if fastest < 0 || d < pairs[fastest].time {
					fastest = len(pairs)
				}
				pairs = append(pairs, pair{j, h, d})
			}
		}
		basic = append(basic, fastest)
		load[pairs[fastest].host] += pairs[fastest].time
	}
	top := 0
	for h := range load {
		if load[h] > load[top] {
			top = h
		}
	}
	basic = append(basic, len(pairs))
	for h := 0; h < m; h++ {
		if h != top {
			basic = append(basic, len(pairs)+1+h)
		}
	}
	cols := len(pairs) + 1 + m
	a := mat.NewDense(n+m, cols, nil)
	b := make([]float64, n+m)
	c := make([]float64, cols)
	for i, pr := range pairs {
		a.Set(pr.task, i, 1)
		a.Set(n+pr.host, i, -pr.time)
	}
	for j := 0; j < n; j++ {
		b[j] = 1
	}
	for h := 0; h < m; h++ {
		a.Set(n+h, len(pairs), 1)
		a.Set(n+h, len(pairs)+1+h, -1)
		b[n+h] = p.base(h)
	}
	c[len(pairs)] = 1
	opt, _, err := lp.Simplex(c, a, b, 1e-10, basic)
	if err != nil {
		t.Fatalf("gonum simplex: %v", err)
	}
	return opt
}

// lpWorkTerm is LowerBound's work term for a one-host problem:
// (Σ_h base_h + Σ_t min_h e_th) / m.
func lpWorkTerm(p *Problem) float64 {
	work := 0.0
	for h := 0; h < p.Hosts; h++ {
		work += p.base(h)
	}
	for _, t := range p.Tasks {
		least := math.Inf(1)
		for _, h := range allowedHosts(p, t) {
			least = math.Min(least, t.Time(singleHost(p.Hosts, h)))
		}
		work += least
	}
	return work / float64(p.Hosts)
}

// lpCheckSandwich asserts a closed gap (so Bound ≤ Primal), the work term ≤
// Bound and, if minMin, Bound ≤ the makespan of Min-min's schedule.
func lpCheckSandwich(t *testing.T, p *Problem, r LPResult, what string, minMin bool) {
	t.Helper()
	if g := r.Gap(); !(g >= 0 && g <= 1e-9) {
		t.Errorf("%s: gap %g (bound %g, primal %g, %d iterations)", what, g, r.Bound, r.Primal, r.Iterations)
	}
	if w := lpWorkTerm(p); r.Bound < w*(1-1e-12) {
		t.Errorf("%s: bound %g below the work term %g", what, r.Bound, w)
	}
	lpCheckWeights(t, p, r, what)
	if !minMin {
		return
	}
	c, err := MinMin(p)
	if err != nil {
		t.Fatalf("%s: min-min: %v", what, err)
	}
	var s Schedule
	if ms := Evaluate(p, c, MS, &s); r.Bound > ms {
		t.Errorf("%s: bound %g above the min-min makespan %g", what, r.Bound, ms)
	}
}

// lpCheckWeights checks that r.Weights are weights (one per host, none
// negative, summing to 1) at which the dual D is at least r.Bound: the
// weights the bound was found at, which DualResponse is handed. D is
// computed here from p directly, not from LPBound's tables.
func lpCheckWeights(t *testing.T, p *Problem, r LPResult, what string) {
	t.Helper()
	w := r.Weights
	if len(w) != p.Hosts {
		t.Fatalf("%s: %d weights for %d hosts", what, len(w), p.Hosts)
	}
	sum, d := 0.0, 0.0
	for h, v := range w {
		if !(v >= 0) {
			t.Errorf("%s: weight %d is %g", what, h, v)
		}
		sum += v
		d += v * p.base(h)
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("%s: weights sum to %g", what, sum)
	}
	for _, task := range p.Tasks {
		least := math.Inf(1)
		for h := range p.Hosts {
			if task.Allowed != nil && !task.Allowed.Has(h) {
				continue
			}
			if e := task.Time(singleHost(p.Hosts, h)); e == e && !math.IsInf(e, 1) {
				least = math.Min(least, w[h]*e)
			}
		}
		d += least
	}
	if d < r.Bound*(1-1e-9) {
		t.Errorf("%s: D at the weights is %.12g, below the bound %.12g", what, d, r.Bound)
	}
}

func TestLPBound_MatchesSimplex(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for i, size := range [][2]int{{30, 4}, {30, 4}, {60, 6}, {60, 6}, {12, 8}, {40, 3}, {25, 1}} {
		wide := i%3 == 2
		p := lpRandom(size[0], size[1], rng, i%2 == 0, wide)
		r, err := LPBound(context.Background(), p)
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		want := lpSimplexOptimum(t, p)
		if math.Abs(r.Bound-want) > 1e-7*want {
			t.Errorf("instance %d (%d×%d): bound %.12g, simplex optimum %.12g", i, size[0], size[1], r.Bound, want)
		}
		if r.Primal < want*(1-1e-9) {
			t.Errorf("instance %d: primal %.12g below the optimum %.12g", i, r.Primal, want)
		}
		lpCheckSandwich(t, p, r, "instance", !wide)
	}
}

// TestLPBound_IdenticalHosts checks a degenerate case with a closed form: on
// identical hosts every task may go anywhere at the same cost, the LP fills
// the hosts like water poured over their bases, and C is the larger of the
// latest base and (Σ_h base_h + Σ_t e_t)/m.
func TestLPBound_IdenticalHosts(t *testing.T) {
	times := []float64{7, 3, 3, 9, 1, 4, 4, 4, 12, 2}
	etc := make([][]float64, len(times))
	for j, d := range times {
		etc[j] = []float64{d, d, d, d, d}
	}
	p := FromETC(etc)
	// Σ e = 49: C = 49/5 without base, (33 + 49)/5 = 16.4 over bases
	// 0, 2, 5, 12, 14, and the latest base when it is above the water.
	for _, c := range []struct {
		base []float64
		want float64
	}{{nil, 49.0 / 5}, {[]float64{0, 2, 5, 12, 14}, 16.4}, {[]float64{0, 2, 5, 30, 40}, 40}} {
		p.Base = c.base
		r, err := LPBound(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(r.Bound-c.want) > 1e-12*c.want || r.Gap() > 1e-9 {
			t.Errorf("base %v: bound %.15g, primal %.15g, want %.15g", c.base, r.Bound, r.Primal, c.want)
		}
	}
}

func TestLPBound_Trivial(t *testing.T) {
	// One host: everything runs there after its base.
	p := FromETC([][]float64{{3}, {4}, {5}})
	p.Base = []float64{2}
	if r, err := LPBound(context.Background(), p); err != nil || math.Abs(r.Bound-14) > 1e-12 || r.Gap() > 1e-9 {
		t.Errorf("one host: %+v, %v; want bound 14", r, err)
	}
	// No tasks: the latest base.
	q := &Problem{Hosts: 3, Base: []float64{1, 6, 2}}
	if r, err := LPBound(context.Background(), q); err != nil || math.Abs(r.Bound-6) > 1e-12 || r.Gap() > 1e-9 {
		t.Errorf("no tasks: %+v, %v; want bound 6", r, err)
	}
}

func TestLPBound_Errors(t *testing.T) {
	ctx := context.Background()
	p := FromETC([][]float64{{1, 2}, {3, 4}})
	p.Tasks[1].Max = 2
	if _, err := LPBound(ctx, p); err == nil {
		t.Error("a task that may use two hosts: no error")
	}
	p = FromETC([][]float64{{1, 2}, {math.Inf(1), 4}})
	p.Tasks[1].Allowed = msBits(2, 0)
	if _, err := LPBound(ctx, p); err == nil {
		t.Error("a task with no finite time on its allowed hosts: no error")
	}
	p = FromETC([][]float64{{1, 2}})
	p.Base = []float64{0, math.NaN()}
	if _, err := LPBound(ctx, p); err == nil {
		t.Error("a NaN base: no error")
	}
	if _, err := LPBound(ctx, &Problem{}); err == nil {
		t.Error("no hosts: no error")
	}

	// A cancelled context: what the seeds give, and the context's error.
	etc, err := workload.GenerateETC("u_i_hilo", 64, 8, rand.New(rand.NewSource(3)))
	if err != nil {
		t.Fatal(err)
	}
	p = FromETC(etc)
	full, err := LPBound(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	r, err := LPBound(cctx, p)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: error %v, want context.Canceled", err)
	}
	lpCheckWeights(t, p, r, "cancelled")
	if w := lpWorkTerm(p); r.Bound < w*(1-1e-12) || r.Bound > full.Bound || r.Primal < full.Primal*(1-1e-12) {
		t.Errorf("cancelled: %+v; want the work term %g ≤ bound ≤ %g and primal ≥ %g", r, w, full.Bound, full.Primal)
	}
}

// TestLPBound_Braun closes the gap on 512×16 instances of all twelve of
// Braun's classes (a few milliseconds each).
func TestLPBound_Braun(t *testing.T) {
	for _, class := range workload.Classes() {
		etc, err := workload.GenerateETC(class, workload.BraunTasks, workload.BraunMachines, rand.New(rand.NewSource(1)))
		if err != nil {
			t.Fatal(err)
		}
		p := FromETC(etc)
		r, err := LPBound(context.Background(), p)
		if err != nil {
			t.Fatalf("%s: %v", class, err)
		}
		lpCheckSandwich(t, p, r, class, true)
	}
}

// BenchmarkLPBound is the LP bound of a 512-task, 16-host u_c_hihi instance.
func BenchmarkLPBound(b *testing.B) {
	etc, err := workload.GenerateETC("u_c_hihi", workload.BraunTasks, workload.BraunMachines, rand.New(rand.NewSource(1)))
	if err != nil {
		b.Fatal(err)
	}
	p := FromETC(etc)
	var r LPResult
	b.ReportAllocs()
	for b.Loop() {
		if r, err = LPBound(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
	if r.Gap() > 1e-9 {
		b.Fatalf("gap %g", r.Gap())
	}
	b.ReportMetric(float64(r.Iterations), "rounds")
}
