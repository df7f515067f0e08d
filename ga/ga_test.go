package ga

import (
	"context"
	"errors"
	"math"
	"math/rand"
	"slices"
	"strconv"
	"testing"

	"msched/workload"
)

func TestNew_RejectsBadConfig(t *testing.T) {
	p := msEq2Problem(5, 4, rand.New(rand.NewSource(1)))
	rng := rand.New(rand.NewSource(1))
	cases := []struct {
		name string
		cfg  Config
		rng  *rand.Rand
	}{
		{"population of one", Config{Population: 1}, rng},
		{"crossover above one", Config{CrossoverRate: 1.5}, rng},
		{"mutation NaN", Config{MutationRate: math.NaN()}, rng},
		{"alignment above one", Config{AlignRate: 2}, rng},
		{"no operator", Config{CrossoverRate: -1, MutationRate: -1}, rng},
		{"two individuals cannot cross", Config{Population: 2, MutationRate: -1}, rng},
		{"no random source", Config{}, nil},
	}
	for _, tc := range cases {
		if _, err := New(p, tc.cfg, tc.rng); err == nil {
			t.Errorf("%s: New accepted it", tc.name)
		}
	}
	if _, err := New(&Problem{Hosts: 0}, Config{}, rng); err == nil {
		t.Error("New accepted a problem without hosts")
	}
}

// msCheckPopulation fails unless every individual is legal and evaluated
// with its fitness equal to a fresh evaluation on p: a stale fitness (the
// eaopt mate fault) would show here.
func msCheckPopulation(t *testing.T, g *GA, p *Problem) {
	t.Helper()
	var s Schedule
	best := math.Inf(1)
	for i, ind := range g.pop.Individuals {
		c := &g.gs[i].Chromosome
		msMustLegal(t, p, c, "individual "+strconv.Itoa(i))
		if !ind.Evaluated {
			t.Fatalf("individual %d not evaluated", i)
		}
		if want := Evaluate(p, c, g.cfg.Cost, &s); ind.Fitness != want {
			t.Fatalf("individual %d: fitness %v, fresh evaluation %v", i, ind.Fitness, want)
		}
		best = math.Min(best, ind.Fitness)
	}
	c, cost := g.Best()
	msMustLegal(t, p, c, "best")
	if cost != best || Evaluate(p, c, g.cfg.Cost, &s) != cost {
		t.Fatalf("Best cost %v, population best %v, fresh %v", cost, best, Evaluate(p, c, g.cfg.Cost, &s))
	}
}

func TestGA_ImprovesMarkedlyOnRandom(t *testing.T) {
	const budget = 6000
	for _, k := range []CostKind{MS, XMS} {
		for seed := int64(0); seed < 3; seed++ {
			p := msEq2Problem(20, 16, rand.New(rand.NewSource(50+seed)))
			g, err := New(p, Config{Cost: k}, rand.New(rand.NewSource(seed)))
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Run(context.Background(), DefaultPopulation); err != nil {
				t.Fatal(err)
			}
			_, initial := g.Best()
			if err := g.Run(context.Background(), budget); err != nil {
				t.Fatal(err)
			}
			_, got := g.Best()
			// Random search at the same budget.
			r, rnd := rand.New(rand.NewSource(seed)), math.Inf(1)
			var s Schedule
			for i := 0; i < budget; i++ {
				rnd = math.Min(rnd, Evaluate(p, NewRandom(p, r), k, &s))
			}
			t.Logf("%v seed %d: initial %.0f, random search %.0f, GA %.0f", k, seed, initial, rnd, got)
			if got > 0.8*rnd || got > 0.7*initial {
				t.Errorf("%v seed %d: GA %.0f, want at most 80%% of random search %.0f and 70%% of the initial best %.0f",
					k, seed, got, rnd, initial)
			}
			msCheckPopulation(t, g, p)
		}
	}
}

func TestGA_SameSeedSameRun(t *testing.T) {
	run := func() (*Chromosome, float64, int, int) {
		p := msEq2Problem(12, 8, rand.New(rand.NewSource(3)))
		g, err := New(p, Config{Cost: XMSContinuous}, rand.New(rand.NewSource(77)))
		if err != nil {
			t.Fatal(err)
		}
		g.Run(context.Background(), 2000)
		q := &Problem{Hosts: p.Hosts, Tasks: append(p.Tasks[2:9:9], msEq2Task("new", 300, 2, 1, 8))}
		if err := g.Update(q); err != nil {
			t.Fatal(err)
		}
		g.Run(context.Background(), 4000)
		c, cost := g.Best()
		return c, cost, g.Evaluations(), g.Generations()
	}
	c1, cost1, e1, g1 := run()
	c2, cost2, e2, g2 := run()
	if cost1 != cost2 || e1 != e2 || g1 != g2 || !slices.Equal(c1.Order, c2.Order) {
		t.Fatalf("runs differ: %v/%v/%d/%d vs %v/%v/%d/%d", cost1, c1.Order, e1, g1, cost2, c2.Order, e2, g2)
	}
	for j := range c1.Map {
		if !c1.Map[j].Equal(c2.Map[j]) {
			t.Fatalf("row %d differs", j)
		}
	}
}

func TestGA_RunBudgetIsExact(t *testing.T) {
	p := msEq2Problem(10, 8, rand.New(rand.NewSource(1)))
	g, _ := New(p, Config{}, rand.New(rand.NewSource(1)))
	if c, cost := g.Best(); c != nil || !math.IsInf(cost, 1) {
		t.Fatalf("Best before any evaluation = %v, %v", c, cost)
	}
	for _, budget := range []int{25, 60, 61, 1000, 1037, 1037} {
		if err := g.Run(context.Background(), budget); err != nil {
			t.Fatal(err)
		}
		if g.Evaluations() != budget {
			t.Fatalf("Run(%d) made %d evaluations", budget, g.Evaluations())
		}
		if c, _ := g.Best(); c == nil {
			t.Fatalf("no best after %d evaluations", budget)
		}
	}
	msCheckPopulation(t, g, p)
}

func TestGA_ElitismAndTrace(t *testing.T) {
	p := msEq2Problem(20, 16, rand.New(rand.NewSource(2)))
	type point struct {
		evals int
		cost  float64
	}
	var trace []point
	g, _ := New(p, Config{Cost: XMS, Trace: func(e int, c float64) { trace = append(trace, point{e, c}) }},
		rand.New(rand.NewSource(2)))
	prev := math.Inf(1)
	for i := 0; i < 300; i++ {
		if err := g.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		_, cost := g.Best()
		if cost > prev {
			t.Fatalf("generation %d: best cost rose from %v to %v", g.Generations(), prev, cost)
		}
		prev = cost
	}
	if g.Generations() != 299 { // the first step evaluates the initial population
		t.Fatalf("Generations = %d, want 299", g.Generations())
	}
	if len(trace) < 2 {
		t.Fatalf("trace has %d points", len(trace))
	}
	for i := 1; i < len(trace); i++ {
		if trace[i].evals < trace[i-1].evals || trace[i].cost >= trace[i-1].cost {
			t.Fatalf("trace not improving at %d: %v then %v", i, trace[i-1], trace[i])
		}
	}
	if last := trace[len(trace)-1]; last.cost != prev || last.evals > g.Evaluations() {
		t.Fatalf("last trace point %v, best %v after %d evaluations", last, prev, g.Evaluations())
	}
	msCheckPopulation(t, g, p)
}

func TestGA_CancelMidGenerationKeepsPopulationEvaluated(t *testing.T) {
	p := msEq2Problem(20, 16, rand.New(rand.NewSource(4)))
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	g, _ := New(p, Config{Trace: func(int, float64) {
		if calls++; calls == 10 {
			cancel()
		}
	}}, rand.New(rand.NewSource(4)))
	err := g.Run(ctx, 1_000_000)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	msCheckPopulation(t, g, p)
	before := g.Evaluations()
	if err := g.Run(ctx, 1_000_000); !errors.Is(err, context.Canceled) || g.Evaluations() != before {
		t.Fatalf("Run on a done context = %v after %d evaluations", err, g.Evaluations()-before)
	}
}

func TestGA_SeedIsNeverLost(t *testing.T) {
	p := msEq2Problem(20, 16, rand.New(rand.NewSource(6)))
	long, _ := New(p, Config{Cost: XMS}, rand.New(rand.NewSource(1)))
	long.Run(context.Background(), 30000)
	seed, seedCost := long.Best()

	for _, when := range []int{0, 600} {
		g, _ := New(p, Config{Cost: XMS}, rand.New(rand.NewSource(2)))
		g.Run(context.Background(), when)
		if err := g.Seed(seed); err != nil {
			t.Fatal(err)
		}
		if _, c := g.Best(); c > seedCost {
			t.Fatalf("seeded after %d evaluations: best %v, seed %v", when, c, seedCost)
		}
		g.Run(context.Background(), 3000)
		if _, c := g.Best(); c > seedCost {
			t.Fatalf("best %v after the run, worse than the seed %v", c, seedCost)
		}
		msCheckPopulation(t, g, p)
	}

	g, _ := New(p, Config{}, rand.New(rand.NewSource(3)))
	bad := seed.Clone()
	bad.Order[0] = bad.Order[1]
	if g.Seed(bad) == nil {
		t.Error("Seed accepted an order that is not a permutation")
	}
	if g.Seed(&Chromosome{Order: seed.Order[:3], Map: seed.Map[:3]}) == nil {
		t.Error("Seed accepted a chromosome of another problem")
	}
	broken := seed.Clone()
	broken.Map[4].Reset()
	if err := g.Seed(broken); err != nil {
		t.Fatal(err)
	}
	g.Run(context.Background(), 200)
	msCheckPopulation(t, g, p) // the empty row was repaired
}

func TestGA_GenerationDoesNotAllocate(t *testing.T) {
	p := msEq2Problem(20, 16, rand.New(rand.NewSource(8)))
	g, _ := New(p, Config{Cost: XMS}, rand.New(rand.NewSource(8)))
	ctx := context.Background()
	for i := 0; i < 500; i++ {
		g.Step(ctx)
	}
	// The run-time memo still grows now and then; less than one
	// allocation a generation rounds to 0.
	if n := testing.AllocsPerRun(100, func() { g.Step(ctx) }); n != 0 {
		t.Fatalf("a generation allocates %v times", n)
	}
}

// With TieBreak the GA prefers, among schedules of equal cost, the one whose
// tasks start earliest on average: on one host every order has the same
// makespan, and the earliest mean start is shortest-first.
func TestGA_TieBreakStartsSoonest(t *testing.T) {
	durations := []float64{5, 1, 4, 2, 3}
	p := &Problem{Hosts: 1}
	for i, d := range durations {
		d := d
		p.Tasks = append(p.Tasks, &Task{ID: string(rune('A' + i)), Min: 1, Max: 1,
			Runtime: func([]int) float64 { return d }})
	}
	for _, k := range []CostKind{MS, XMS} {
		g, err := New(p, Config{Cost: k, TieBreak: true}, rand.New(rand.NewSource(1)))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 30; i++ {
			if err := g.Step(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		best, cost := g.Best()
		var got []float64
		for _, j := range best.Order {
			got = append(got, durations[j])
		}
		if !slices.IsSorted(got) {
			t.Errorf("%v: best order runs %v, want shortest first", k, got)
		}
		if cost < 15 || cost > 15*(1+1e-9) {
			t.Errorf("%v: cost %v, want the makespan 15 within the tie-breaker's 1e-9", k, cost)
		}
	}
}

// TestGA_MemeticSeedIsDescended: under the memetic setting (one-host tasks,
// MS) a seed enters the population descended, so the best is at once below
// the seed's own cost when the seed is not a local optimum; under the
// default setting the seed enters as it is.
func TestGA_MemeticSeedIsDescended(t *testing.T) {
	etc, err := workload.GenerateETC("u_c_hihi", 64, 8, rand.New(rand.NewSource(3)))
	if err != nil {
		t.Fatal(err)
	}
	p := FromETC(etc)
	// Every task on the fastest host: far from a local optimum.
	seed := &Chromosome{Order: make([]int, len(p.Tasks)), Map: make([]Bits, len(p.Tasks))}
	for j := range seed.Order {
		seed.Order[j] = j
		seed.Map[j] = singleHost(p.Hosts, 0)
	}
	var s Schedule
	seedCost := Evaluate(p, seed, MS, &s)

	g, err := New(p, Memetic(MS), rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Seed(seed); err != nil {
		t.Fatal(err)
	}
	if c := g.BestCost(); !(c < seedCost/2) {
		t.Errorf("memetic: best %g after seeding a string of cost %g; its descent should halve it", c, seedCost)
	}
	if got := Evaluate(p, seed, MS, &s); got != seedCost {
		t.Errorf("the caller's seed changed: cost %g, was %g", got, seedCost)
	}

	cfg := Memetic(MS)
	cfg.LocalSearch = 0
	g, err = New(p, cfg, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	// Some individual, the seed's slot, holds the seed's own cost.
	if err := g.Seed(seed); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ind := range g.pop.Individuals {
		found = found || ind.Evaluated && ind.Fitness == seedCost
	}
	if !found {
		t.Error("without the local search the seed did not enter as it is")
	}
}
