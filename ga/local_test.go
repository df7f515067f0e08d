package ga

import (
	"context"
	"math"
	"math/rand"
	"slices"
	"testing"
)

// msETC is a random ETC matrix of n tasks on m machines in the manner of
// Braun's range-based method: a task weight in [1, 3000) times a machine
// factor in [1, 1000), inconsistent (hi-hi).
func msETC(n, m int, rng *rand.Rand) [][]float64 {
	etc := make([][]float64, n)
	for i := range etc {
		w := 1 + 2999*rng.Float64()
		etc[i] = make([]float64, m)
		for h := range etc[i] {
			etc[i][h] = w * (1 + 999*rng.Float64())
		}
	}
	return etc
}

// msLoads are the hosts' loads of c computed from scratch.
func msLoads(p *Problem, c *Chromosome) []float64 {
	load := make([]float64, p.Hosts)
	for h := range load {
		load[h] = p.base(h)
	}
	for j, b := range c.Map {
		r := p.Tasks[j].Time(b)
		for _, h := range b.Hosts(nil) {
			load[h] += r
		}
	}
	return load
}

// msCheckLists fails the test unless l's per-host task lists hold exactly
// the tasks whose rows hold the host (in longerFirst order once sorted).
func msCheckLists(t *testing.T, p *Problem, c *Chromosome, l *localScratch) {
	t.Helper()
	for h, on := range l.on {
		n := 0
		for j, b := range c.Map {
			if b.Has(h) {
				n++
				if !slices.Contains(on, int32(j)) {
					t.Fatalf("host %d: task %d missing from its list", h, j)
				}
			}
		}
		if n != len(on) {
			t.Fatalf("host %d: list of %d tasks, %d hold it", h, len(on), n)
		}
		if l.sorted && !slices.IsSortedFunc(on, l.longerFirst) {
			t.Fatalf("host %d: list not in longerFirst order", h)
		}
	}
}

func msMax(v []float64) float64 {
	x := math.Inf(-1)
	for _, y := range v {
		x = math.Max(x, y)
	}
	return x
}

func msNewLocal(p *Problem) (*localScratch, *alignScratch) {
	var l localScratch
	var x alignScratch
	l.resize(len(p.Tasks), p.Hosts, p.Words())
	x.resize(len(p.Tasks), p.Hosts, p.Words())
	return &l, &x
}

// The descent never raises the makespan, keeps the string legal, and its
// incremental loads are the loads recomputed from scratch; on one-host
// tasks the largest load is the decoded makespan. At the end no move and no
// swap of the critical host leaves every load it changes below the
// makespan (checked by brute force).
func TestLocalSearchOneHost(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for trial := 0; trial < 20; trial++ {
		n, m := 20+rng.Intn(100), 2+rng.Intn(12)
		p := FromETC(msETC(n, m, rng))
		if trial%2 == 1 {
			p.Base = make([]float64, m)
			for h := range p.Base {
				p.Base[h] = 5000 * rng.Float64()
			}
			for _, task := range p.Tasks[:n/4] { // some tasks barred from host 0
				task.Allowed = NewBits(m)
				for h := 1; h < m; h++ {
					task.Allowed.Set(h)
				}
			}
		}
		c := NewRandom(p, rng)
		Repair(p, c, rng)
		var s Schedule
		before := Evaluate(p, c, MS, &s)
		l, x := msNewLocal(p)
		steps := localSearch(p, c, l, x, math.Inf(1), rng)
		msMustLegal(t, p, c, "after local search")
		msCheckLists(t, p, c, l)
		after := Evaluate(p, c, MS, &s)
		if after > before {
			t.Fatalf("trial %d: makespan rose from %g to %g", trial, before, after)
		}
		if steps == 0 && after < before {
			t.Fatalf("trial %d: no step taken but the makespan changed", trial)
		}
		want := msLoads(p, c)
		for h := range want {
			if math.Abs(want[h]-l.load[h]) > 1e-6*want[h] {
				t.Fatalf("trial %d: host %d load %g, recomputed %g", trial, h, l.load[h], want[h])
			}
		}
		if w := msMax(want); math.Abs(w-after) > 1e-9*after {
			t.Fatalf("trial %d: largest load %g, decoded makespan %g", trial, w, after)
		}
		crit := l.critical()
		lc := l.load[crit]
		host := func(j int) int { return firstHost(c.Map[j]) }
		ok := func(task *Task, h int) bool { return task.Allowed == nil || task.Allowed.Has(h) }
		for j, tj := range p.Tasks {
			if host(j) != crit {
				continue
			}
			for h := 0; h < m; h++ {
				if h == crit || !ok(tj, h) {
					continue
				}
				if math.Max(lc-tj.Time(msBits(m, crit)), want[h]+tj.Time(msBits(m, h))) < lc*(1-1e-9) {
					t.Fatalf("trial %d: moving task %d to host %d would help", trial, j, h)
				}
				for k, tk := range p.Tasks {
					if host(k) != h || !ok(tk, crit) {
						continue
					}
					nc := lc - tj.Time(msBits(m, crit)) + tk.Time(msBits(m, crit))
					nh := want[h] - tk.Time(msBits(m, h)) + tj.Time(msBits(m, h))
					if math.Max(nc, nh) < lc*(1-1e-9) {
						t.Fatalf("trial %d: swapping tasks %d and %d would help", trial, j, k)
					}
				}
			}
		}
	}
}

// On multi-host (moldable) tasks the moves keep the loads exact, the
// string legal and the largest load from rising.
func TestLocalSearchMultiHost(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for trial := 0; trial < 20; trial++ {
		p := msEq2Problem(10+rng.Intn(20), 4+rng.Intn(12), rng)
		p.Base = make([]float64, p.Hosts)
		for h := range p.Base {
			p.Base[h] = 300 * rng.Float64()
		}
		c := NewRandom(p, rng)
		before := msMax(msLoads(p, c))
		l, x := msNewLocal(p)
		localSearch(p, c, l, x, math.Inf(1), rng)
		msMustLegal(t, p, c, "after local search")
		msCheckLists(t, p, c, l)
		want := msLoads(p, c)
		for h := range want {
			if math.Abs(want[h]-l.load[h]) > 1e-6*want[h] {
				t.Fatalf("trial %d: host %d load %g, recomputed %g", trial, h, l.load[h], want[h])
			}
		}
		if after := msMax(want); after > before*(1+1e-12) {
			t.Fatalf("trial %d: largest load rose from %g to %g", trial, before, after)
		}
	}
}

// crossGreedy keeps every task on which the parents agree where they have
// it, and puts every other task on one of its parents' hosts.
func TestCrossGreedy(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	p := FromETC(msETC(200, 8, rng))
	a, b := NewRandom(p, rng), NewRandom(p, rng)
	for j := 0; j < 100; j++ { // half the tasks agree
		copy(b.Map[j], a.Map[j])
	}
	pa, pb := a.Clone(), b.Clone()
	l, x := msNewLocal(p)
	crossGreedy(p, a, b, l, x, rng)
	for _, child := range []*Chromosome{a, b} {
		msMustLegal(t, p, child, "child")
		for j := range p.Tasks {
			h := firstHost(child.Map[j])
			if h != firstHost(pa.Map[j]) && h != firstHost(pb.Map[j]) {
				t.Fatalf("task %d on host %d, parents have %d and %d", j, h, firstHost(pa.Map[j]), firstHost(pb.Map[j]))
			}
		}
	}
}

// The ILS is never worse than its start, replays from its seed, and stops
// at its evaluation budget.
func TestILS(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	p := FromETC(msETC(128, 8, rng))
	start, err := MinMin(p)
	if err != nil {
		t.Fatal(err)
	}
	var s Schedule
	startCost := Evaluate(p, start, MS, &s)
	run := func() float64 {
		a, err := NewILS(p, start, ILSConfig{Cost: MS}, rand.New(rand.NewSource(1)))
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Run(context.Background(), 300); err != nil {
			t.Fatal(err)
		}
		if a.Evaluations() != 300 {
			t.Fatalf("%d evaluations, want 300", a.Evaluations())
		}
		c, cost := a.Best()
		msMustLegal(t, p, c, "ILS best")
		if got := Evaluate(p, c, MS, &s); got != cost {
			t.Fatalf("best reported at %g, decodes to %g", cost, got)
		}
		return cost
	}
	c1, c2 := run(), run()
	if c1 != c2 {
		t.Fatalf("same seed, costs %g and %g", c1, c2)
	}
	if c1 >= startCost {
		t.Fatalf("ILS %g did not improve on Min-min %g", c1, startCost)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a, _ := NewILS(p, start, ILSConfig{Cost: MS}, rand.New(rand.NewSource(1)))
	if err := a.Run(ctx, 10); err != context.Canceled {
		t.Fatalf("cancelled run returned %v", err)
	}
}

// The memetic GA keeps its population legal, never loses the seed's cost,
// renews its population on a stall (the cataclysm keeps the best), and
// improves on Min-min.
func TestMemeticGA(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	p := FromETC(msETC(128, 8, rng))
	seed, err := MinMin(p)
	if err != nil {
		t.Fatal(err)
	}
	var s Schedule
	seedCost := Evaluate(p, seed, MS, &s)
	cfg := Memetic(MS)
	cfg.Cataclysm = 3 // renew often, so that the test sees it
	g, err := New(p, cfg, rand.New(rand.NewSource(2)))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Seed(seed); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	renewed := false
	prev := g.BestCost()
	for gen := 0; gen < 200; gen++ {
		if err := g.Step(ctx); err != nil {
			t.Fatal(err)
		}
		if g.BestCost() > prev {
			t.Fatalf("generation %d: best rose from %g to %g", gen, prev, g.BestCost())
		}
		prev = g.BestCost()
		if !g.ready {
			renewed = true
		}
		for i, gn := range g.gs {
			if g.pop.Individuals[i].Evaluated {
				msMustLegal(t, p, &gn.Chromosome, "individual")
			}
		}
	}
	if !renewed {
		t.Fatal("no cataclysm in 200 generations with Cataclysm 3")
	}
	c, cost := g.Best()
	if got := Evaluate(p, c, MS, &s); got != cost {
		t.Fatalf("best reported at %g, decodes to %g", cost, got)
	}
	if cost >= seedCost {
		t.Fatalf("memetic GA %g did not improve on Min-min %g", cost, seedCost)
	}
}

// Every crossed child is evaluated again, even when no mutation follows
// (crossGreedy marks neither child; the GA must), so every individual's
// fitness is its string's cost.
func TestMemeticCrossoverReevaluates(t *testing.T) {
	rng := rand.New(rand.NewSource(17))
	p := FromETC(msETC(64, 8, rng))
	g, err := New(p, Config{Population: 8, CrossoverRate: 1, MutationRate: 1e-300, AlignRate: -1, LocalSearch: 1, Cost: MS}, rng)
	if err != nil {
		t.Fatal(err)
	}
	var s Schedule
	for gen := 0; gen < 20; gen++ {
		if err := g.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		for i, gn := range g.gs {
			if got, want := g.pop.Individuals[i].Fitness, Evaluate(p, &gn.Chromosome, MS, &s); got != want {
				t.Fatalf("generation %d, individual %d: fitness %g, string costs %g", gen, i, got, want)
			}
		}
	}
}

// The load-based cost equals Decode's makespan to the bit, with bases (and
// p.First), and is not used where a negative base makes Decode start later.
func TestLoadMakespanIsDecode(t *testing.T) {
	rng := rand.New(rand.NewSource(19))
	for trial := 0; trial < 50; trial++ {
		n, m := 1+rng.Intn(60), 1+rng.Intn(10)
		p := FromETC(msETC(n, m, rng))
		p.Base = make([]float64, m)
		for h := range p.Base {
			p.Base[h] = 1000*rng.Float64() - 300*float64(trial%2) // odd trials: some negative
		}
		if n > 2 {
			p.First = []int{n - 1, 0}
		}
		e := NewEvaluator(p, MS)
		var s Schedule
		for k := 0; k < 5; k++ {
			c := NewRandom(p, rng)
			d := c.Clone()
			if got, want := e.Evaluate(c), Evaluate(p, d, MS, &s); got != want {
				t.Fatalf("trial %d: Evaluator %v, Decode %v (bases %v)", trial, got, want, p.Base)
			}
			if !slices.Equal(c.Order, d.Order) {
				t.Fatalf("trial %d: orders differ after evaluation: %v, %v", trial, c.Order, d.Order)
			}
		}
	}
}

// A task placed where it cannot run (+Inf) is moved off by the descent, and
// an ILS started from such a string still searches and reports a best.
func TestLocalSearchLeavesInfiniteHost(t *testing.T) {
	inf := math.Inf(1)
	p := FromETC([][]float64{{inf, 1}, {2, 3}, {inf, 4}})
	c := &Chromosome{Order: []int{0, 1, 2}, Map: []Bits{msBits(2, 0), msBits(2, 0), msBits(2, 0)}}
	l, x := msNewLocal(p)
	localSearch(p, c, l, x, math.Inf(-1), rand.New(rand.NewSource(1)))
	var s Schedule
	if got := Evaluate(p, c, MS, &s); got != 5 {
		t.Fatalf("makespan %g after the descent, want 5 (tasks 0 and 2 on host 1)", got)
	}
	msCheckLists(t, p, c, l)
	start := &Chromosome{Order: []int{0, 1, 2}, Map: []Bits{msBits(2, 0), msBits(2, 0), msBits(2, 0)}}
	a, err := NewILS(p, start, ILSConfig{Cost: MS}, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Run(context.Background(), 20); err != nil {
		t.Fatal(err)
	}
	if b, cost := a.Best(); b == nil || cost != 5 {
		t.Fatalf("ILS best %v at %g, want a string at 5", b, cost)
	}
}

// BenchmarkLocalMove prices the moves of the critical host's tasks on a
// local optimum of a 512 × 16 ETC instance (so nothing is applied); ns/move
// is the cost of pricing one move.
func BenchmarkLocalMove(b *testing.B) {
	p, c, l, x, crit := msLocalOptimum(b)
	rng := rand.New(rand.NewSource(1))
	moves := len(l.on[crit]) * (p.Hosts - 1)
	b.ResetTimer()
	for b.Loop() {
		if l.bestMove(p, c, x, crit, rng) {
			b.Fatal("a move helped at a local optimum")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(moves), "ns/move")
}

// BenchmarkLocalSwap is BenchmarkLocalMove for swaps; ns/swap is the cost
// of pricing one swap.
func BenchmarkLocalSwap(b *testing.B) {
	p, c, l, x, crit := msLocalOptimum(b)
	rng := rand.New(rand.NewSource(1))
	swaps := len(l.on[crit]) * (len(p.Tasks) - len(l.on[crit]))
	b.ResetTimer()
	for b.Loop() {
		if l.bestSwap(p, c, x, crit, rng) {
			b.Fatal("a swap helped at a local optimum")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(swaps), "ns/swap")
}

func msLocalOptimum(b *testing.B) (*Problem, *Chromosome, *localScratch, *alignScratch, int) {
	rng := rand.New(rand.NewSource(1))
	p := FromETC(msETC(512, 16, rng))
	c, err := MinMin(p)
	if err != nil {
		b.Fatal(err)
	}
	l, x := msNewLocal(p)
	localSearch(p, c, l, x, math.Inf(1), rng)
	return p, c, l, x, l.critical()
}

// BenchmarkMemeticGeneration is one generation of the memetic GA
// (ga.Memetic: population 8, every offspring descended) on a 512 × 16 ETC
// instance, after 100 generations from Min-min.
func BenchmarkMemeticGeneration(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	p := FromETC(msETC(512, 16, rng))
	g, err := New(p, Memetic(MS), rng)
	if err != nil {
		b.Fatal(err)
	}
	seed, err := MinMin(p)
	if err != nil {
		b.Fatal(err)
	}
	if err := g.Seed(seed); err != nil {
		b.Fatal(err)
	}
	msBenchSteps(b, g, 100)
}
