package ga

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"

	"github.com/MaxHalford/eaopt"
)

// Defaults of Config. The population is the paper's. The paper gives no
// rates. These were chosen on a small grid (crossover 0.5..0.9, mutation
// 0.5..1, alignment 0.3..1, and the shares of mutateMoves) at 30,000
// evaluations on Fig. 3 instances (bench.Fig3Problem, 20 tasks on 16 nodes)
// of seeds 3, 13, 15, 41, 48 and 54, under MS and XMS, 10 runs each; seed 1,
// the benchmark's, was kept out of the grid. Alignment on every offspring
// scored best there; 0.7 of them keeps most of that gain while the GA's own
// host choices still reach the population, which matters on heterogeneous
// hosts, where the hosts free first are not always the fastest.
const (
	DefaultPopulation    = 60
	DefaultCrossoverRate = 0.9
	DefaultMutationRate  = 1
	DefaultAlignRate     = 0.7
)

// Config sets up a GA. Zero fields take the defaults above; a negative rate
// turns that operator off.
type Config struct {
	// Population is the number of individuals (at least 2).
	Population int
	// CrossoverRate is the probability that a pair of selected parents is
	// crossed (otherwise they pass on unchanged).
	CrossoverRate float64
	// MutationRate is the probability that an offspring is mutated (one or
	// more small moves, see mutateMoves).
	MutationRate float64
	// AlignRate is the probability that a new offspring gets the
	// Lamarckian alignment step (see align) before it is evaluated, at the
	// price of one more evaluation.
	AlignRate float64
	// LocalSearch is the probability that a new offspring is improved by
	// the local search (see localSearch) before it is evaluated: the
	// memetic step. Unlike the rates above, zero means never: the paper's
	// experiments compare optimisers at equal numbers of decodes, and a
	// descent's moves are priced from host loads, not decoded, so it would
	// be work they do not count. When a string's cost depends on its
	// mapping part alone (see mapOnly), a positive rate also replaces the
	// paper's crossover and mutation by crossGreedy and kick.
	LocalSearch float64
	// Cataclysm, if positive, is the number of generations without a
	// better best (the stall counter) after which the population is
	// renewed (see cataclysm): every individual but the best is replaced by
	// a copy of the best with a share of its tasks moved to random hosts,
	// then descended if LocalSearch is on. Zero means never.
	Cataclysm int
	// Cost is the cost minimised.
	Cost CostKind
	// TieBreak ranks schedules of equal cost by how early their tasks start
	// on average: the GA minimises cost·(1 + 10⁻⁹·mean start/w), so it
	// prefers the earlier starts only among schedules whose costs are equal
	// to nine digits, and its reported costs exceed the plain ones by that
	// factor at most. Makespan and XMS say nothing of the order of tasks
	// that do not change w, and on a real workload most orders tie; a
	// scheduler then wants the jobs started soonest. msched's policies set
	// it; the paper's experiments (Fig. 3, bench convergence) do not.
	TieBreak bool
	// Trace, if set, is told every improvement of the best cost.
	Trace TraceFunc
}

func (c *Config) defaults() error {
	if c.Population == 0 {
		c.Population = DefaultPopulation
	}
	if c.CrossoverRate == 0 {
		c.CrossoverRate = DefaultCrossoverRate
	}
	if c.MutationRate == 0 {
		c.MutationRate = DefaultMutationRate
	}
	if c.AlignRate == 0 {
		c.AlignRate = DefaultAlignRate
	}
	c.CrossoverRate = math.Max(c.CrossoverRate, 0)
	c.MutationRate = math.Max(c.MutationRate, 0)
	c.AlignRate = math.Max(c.AlignRate, 0)
	c.LocalSearch = math.Max(c.LocalSearch, 0)
	switch {
	case c.LocalSearch > 1 || math.IsNaN(c.LocalSearch):
		return fmt.Errorf("ga: local search rate %g, want [0, 1]", c.LocalSearch)
	case c.Cataclysm < 0:
		return fmt.Errorf("ga: cataclysm after %d generations, want 0 (never) or more", c.Cataclysm)
	case c.Population < 2:
		return fmt.Errorf("ga: population of %d, want at least 2", c.Population)
	case c.CrossoverRate > 1 || c.MutationRate > 1 || c.AlignRate > 1 ||
		math.IsNaN(c.CrossoverRate) || math.IsNaN(c.MutationRate) || math.IsNaN(c.AlignRate):
		return fmt.Errorf("ga: rates must lie in [0, 1], have crossover %g, mutation %g, alignment %g",
			c.CrossoverRate, c.MutationRate, c.AlignRate)
	case c.MutationRate == 0 && (c.CrossoverRate == 0 || c.Population < 3):
		// Offspring fill slots 1..N-1, so they need a pair to cross.
		return errors.New("ga: with these rates no new individual is ever made")
	}
	return nil
}

// GA is the MS paper's genetic algorithm with a live population: Update
// changes the problem between generations and keeps the population, which is
// what lets the real-time scheduler beat simulated annealing (SEEDS.md §1).
//
// A generation is the paper's: N−1 parents are chosen by stochastic remainder
// selection, consecutive pairs are crossed with probability CrossoverRate
// (the paper's splice and re-ordered mapping crossover, see crossSplice),
// each offspring is mutated with probability MutationRate, and only the
// offspring that changed are decoded. msched adds three things to it, each
// because the paper's GA alone lost to simulated annealing, and to the
// greedy list scheduler, at an equal budget of evaluations (Fig. 3 setting;
// see the benchmark `msched bench convergence`):
//
//   - Mutation is one or more small moves (see mutateMoves): the paper's swap
//     and bit flip, and also an insertion on the ordering part and a host
//     moved within a task's row. One swap and one flip per offspring were too
//     coarse and too rare to climb out of the plateaus of the makespan.
//   - Alignment, a Lamarckian step: with probability AlignRate an offspring
//     is, before it is evaluated, rewritten so that each task, at its place
//     in the string and with its host count, takes the hosts free first
//     (see align); what it learns is written back into its genes. Random
//     host sets leave tasks waiting for the last of their hosts, and fixing
//     that takes the coordinated change of many rows that neither crossover
//     nor mutation makes. Its pass is a decode and is counted as an
//     evaluation, so an aligned offspring costs two.
//   - Replacement is (μ+λ) with duplicate elimination (see survive): parents
//     and offspring compete, and the best N distinct individuals survive.
//     This replaces the paper's generational replacement (to which msched
//     had added elitism, since a scheduler that is asked for its best
//     schedule at any moment must never lose it; survive keeps that).
//
// The initial population is random; heuristic schedules enter only through
// Seed.
//
// The individuals are eaopt.Individuals holding *Genome; generations are
// driven here rather than by eaopt.GA.Minimize, which restarts the population
// and takes no context. Three populations are kept and rotated, and parents
// are copied into preallocated genomes, so that a generation does not
// allocate. A GA is not safe for concurrent use.
type GA struct {
	cfg Config
	rng *rand.Rand
	ev  *Evaluator

	pop   eaopt.Population  // the current population; Generations counts steps
	gs    []*Genome         // pop.Individuals[i].Genome, without the interface
	spare eaopt.Individuals // the offspring being bred
	sgs   []*Genome
	third eaopt.Individuals // the survivors are copied here; it becomes pop
	tgs   []*Genome

	ready    bool // every individual of pop is evaluated
	best     int  // index of the best evaluated individual, -1 if none
	bestCost float64

	cost, fit []float64
	choices   []int
	parent    []int
	align     []bool   // per offspring slot: gets the alignment step
	local     []bool   // per offspring slot: gets the local search
	stall     int      // generations since the best improved
	cand      []int    // survive: candidates (parents 0..N-1, offspring N+i)
	hash      []uint64 // survive: per candidate, once hashed (see survive)
	hashed    []bool   // survive: per candidate, hash is set
	keep      []int    // survive: the survivors

	tasks []*Task // the problem's tasks when last set, for Update's matching
	hosts int
}

var _ Optimizer = (*GA)(nil)

// New returns a GA over p with a random initial population; nothing is
// evaluated until the first Step, Run or Seed. Every random choice draws
// from rng, so the same seed and inputs give the same run.
func New(p *Problem, cfg Config, rng *rand.Rand) (*GA, error) {
	if rng == nil {
		return nil, errors.New("ga: nil random source")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	n := cfg.Population
	g := &GA{
		cfg: cfg, rng: rng, ev: NewEvaluator(p, cfg.Cost),
		best: -1, bestCost: math.Inf(1),
		cost: make([]float64, n), fit: make([]float64, n),
		choices: make([]int, n-1), parent: make([]int, n), align: make([]bool, n), local: make([]bool, n),
		cand: make([]int, 0, 2*n), hash: make([]uint64, 2*n), hashed: make([]bool, 2*n), keep: make([]int, 0, n),
	}
	g.ev.tie = cfg.TieBreak
	g.pop.RNG = rng
	g.allocate(n)
	for _, gn := range g.gs {
		gn.copyFrom(NewRandom(p, rng))
	}
	g.snapshot(p)
	return g, nil
}

// allocate makes both populations for the Evaluator's current problem; the
// individuals are unevaluated.
func (g *GA) allocate(n int) {
	g.pop.Individuals, g.gs = g.makeIndividuals(n)
	g.spare, g.sgs = g.makeIndividuals(n)
	g.third, g.tgs = g.makeIndividuals(n)
}

func (g *GA) makeIndividuals(n int) (eaopt.Individuals, []*Genome) {
	indis, gs := make(eaopt.Individuals, n), make([]*Genome, n)
	for i := range indis {
		gs[i] = g.ev.newGenome()
		// No eaopt.NewIndividual: its random ID string is not used here.
		indis[i] = eaopt.Individual{Genome: gs[i], Fitness: math.Inf(1)}
	}
	return indis, gs
}

func (g *GA) snapshot(p *Problem) {
	g.tasks = append(g.tasks[:0], p.Tasks...)
	g.hosts = p.Hosts
}

// Step runs one generation (the first call evaluates the initial population
// instead). It stops early, returning ctx.Err(), if ctx is done; offspring
// not evaluated by then are dropped for their parents, so the population
// stays evaluated.
func (g *GA) Step(ctx context.Context) error { return g.step(ctx, math.MaxInt) }

// Run steps until Evaluations reaches maxEvals, exactly: the last generation
// is cut short at the budget like a cancelled one.
func (g *GA) Run(ctx context.Context, maxEvals int) error {
	for g.ev.evals < maxEvals {
		if err := g.step(ctx, maxEvals); err != nil {
			return err
		}
	}
	return nil
}

// Best returns a copy of the best chromosome of the population and its cost
// (nil and +Inf before anything is evaluated). Since the best always
// survives, it is also the best found since the problem was last set.
func (g *GA) Best() (*Chromosome, float64) {
	if g.best < 0 {
		return nil, math.Inf(1)
	}
	return g.gs[g.best].Chromosome.Clone(), g.bestCost
}

// BestCost is the cost of Best without the copy.
func (g *GA) BestCost() float64 {
	if g.best < 0 {
		return math.Inf(1)
	}
	return g.bestCost
}

// Evaluations is the number of decodes made, including those of Seed and
// Update. Parents passed on unchanged are not decoded again; an aligned
// offspring counts two (see GA).
func (g *GA) Evaluations() int { return g.ev.evals }

// Generations is the number of generations bred so far.
func (g *GA) Generations() int { return int(g.pop.Generations) }

// Problem is the problem the population is evaluated against.
func (g *GA) Problem() *Problem { return g.ev.p }

func (g *GA) step(ctx context.Context, limit int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !g.ready {
		return g.evaluateInitial(ctx, limit)
	}
	done := ctx.Done()
	cur, nxt := g.pop.Individuals, g.spare
	n := len(cur)

	// Selected parents into slots 1..N-1 of the offspring; slot 0 is unused
	// (the parents compete with the offspring in survive).
	for i := range cur {
		g.cost[i] = cur[i].Fitness
	}
	remainderFitness(g.cost, g.fit)
	remainder(g.fit, g.choices, g.rng)
	for i, par := range g.choices {
		g.inherit(i+1, par)
	}

	// eaopt's Individual.Crossover marks only the receiver unevaluated (the
	// mate is passed by value) and crossGreedy marks neither, so both are
	// marked here.
	for i := 1; i+1 < n; i += 2 {
		if g.rng.Float64() < g.cfg.CrossoverRate {
			if g.mapOnly() {
				crossGreedy(g.ev.p, &g.sgs[i].Chromosome, &g.sgs[i+1].Chromosome, &g.ev.l, &g.ev.r, g.rng)
			} else {
				nxt[i].Crossover(nxt[i+1], g.rng)
			}
			nxt[i].Evaluated, nxt[i+1].Evaluated = false, false
		}
	}
	for i := 1; i < n; i++ {
		// Decided here for every slot, so that the draws do not depend on
		// where a cancellation falls.
		g.local[i] = g.cfg.LocalSearch > 0 && g.rng.Float64() < g.cfg.LocalSearch
		if g.rng.Float64() < g.cfg.MutationRate {
			if g.local[i] && g.mapOnly() {
				kick(g.ev.p, &g.sgs[i].Chromosome, DefaultKick, g.rng)
			} else {
				mutateMoves(g.ev.p, &g.sgs[i].Chromosome, g.rng)
			}
			nxt[i].Evaluated = false
		}
		g.align[i] = g.rng.Float64() < g.cfg.AlignRate
	}

	bestCost := g.bestCost
	stopped := false
	for i := 1; i < n; i++ {
		if nxt[i].Evaluated {
			continue
		}
		if !stopped {
			select {
			case <-done:
				stopped = true
			default:
				stopped = g.ev.evals >= limit
			}
		}
		if stopped {
			g.inherit(i, g.parent[i])
			continue
		}
		if g.align[i] && g.ev.evals+2 <= limit {
			align(g.ev.p, &g.sgs[i].Chromosome, &g.ev.r)
			g.ev.evals++ // align's list-scheduling pass is a decode
		}
		if g.local[i] {
			localSearch(g.ev.p, &g.sgs[i].Chromosome, &g.ev.l, &g.ev.r, math.Inf(-1), g.rng)
		}
		_ = nxt[i].Evaluate() // a Genome's Evaluate never fails
		g.improved(nxt[i].Fitness, bestCost)
		bestCost = math.Min(bestCost, nxt[i].Fitness)
	}
	before := g.bestCost
	g.survive()
	g.pop.Generations++
	if g.bestCost < before {
		g.stall = 0
	} else if g.stall++; g.cfg.Cataclysm > 0 && g.stall >= g.cfg.Cataclysm && !stopped {
		g.cataclysm()
	}
	if stopped {
		return ctx.Err()
	}
	return nil
}

// inherit makes slot i of the next population a copy of parent par of the
// current one, fitness included.
func (g *GA) inherit(i, par int) {
	g.parent[i] = par
	g.sgs[i].copyFrom(&g.gs[par].Chromosome)
	g.spare[i].Fitness, g.spare[i].Evaluated = g.pop.Individuals[par].Fitness, true
}

// improved tells the trace about cost c if it beats the best so far.
func (g *GA) improved(c, best float64) {
	if c < best && g.cfg.Trace != nil {
		g.cfg.Trace(g.ev.evals, c)
	}
}

// evaluateInitial evaluates the individuals of pop that are not yet, within
// the budget.
func (g *GA) evaluateInitial(ctx context.Context, limit int) error {
	done := ctx.Done()
	indis := g.pop.Individuals
	for i := range indis {
		if indis[i].Evaluated {
			continue
		}
		select {
		case <-done:
			return ctx.Err()
		default:
		}
		if g.ev.evals >= limit {
			return nil
		}
		_ = indis[i].Evaluate()
		g.consider(i)
	}
	g.ready = true
	return nil
}

// consider makes individual i the best if it beats the best so far.
func (g *GA) consider(i int) {
	if c := g.pop.Individuals[i].Fitness; g.best < 0 || c < g.bestCost {
		g.improved(c, g.bestCost)
		g.best, g.bestCost = i, c
	}
}

// Seed puts a copy of c (repaired if needed) into the population in place of
// its worst individual, and evaluates it at once, so that from then on the
// GA's best is never worse than c. A heuristic's schedule seeds the search
// this way. c must be a chromosome of the current problem. When the GA works
// on the mapping alone (mapOnly: the memetic setting on one-host tasks under
// MS), the copy is first descended by the local search, as every offspring
// is, which cannot raise its cost there: a seed that starts in a good basin
// but far from balanced (DualResponse's) would otherwise lose to any
// descended offspring before its own descent is ever tried.
func (g *GA) Seed(c *Chromosome) error {
	p := g.ev.p
	n := len(p.Tasks)
	if len(c.Order) != n || len(c.Map) != n {
		return fmt.Errorf("ga: seed has %d+%d genes for %d tasks", len(c.Order), len(c.Map), n)
	}
	seen := make([]bool, n)
	for _, j := range c.Order {
		if j < 0 || j >= n || seen[j] {
			return errors.New("ga: seed order is not a permutation of the tasks")
		}
		seen[j] = true
	}
	for j, b := range c.Map {
		if len(b) != p.Words() {
			return fmt.Errorf("ga: seed row %d has %d words, want %d", j, len(b), p.Words())
		}
	}
	indis := g.pop.Individuals
	// The worst is an unevaluated individual if there is one (its cost is
	// unknown, so it is lost at no known price), else the costliest; never
	// the best.
	worst := -1
	for i := range indis {
		if i == g.best {
			continue
		}
		if !indis[i].Evaluated {
			worst = i
			break
		}
		if worst < 0 || indis[i].Fitness > indis[worst].Fitness {
			worst = i
		}
	}
	g.gs[worst].copyFrom(c)
	Repair(p, &g.gs[worst].Chromosome, g.rng)
	if g.mapOnly() {
		localSearch(p, &g.gs[worst].Chromosome, &g.ev.l, &g.ev.r, math.Inf(-1), g.rng)
	}
	indis[worst].Evaluated = false // else eaopt keeps the old fitness
	_ = indis[worst].Evaluate()
	g.consider(worst)
	return nil
}

// Update replaces the problem between generations without restarting the
// population. Tasks of the new problem are matched to the old ones by
// pointer, else by ID. In every individual, tasks that left are taken out of
// the order and the map; tasks that arrived are put at a random position of
// the order with a random legal row; surviving tasks keep their rows when the
// host count is unchanged, and get a fresh random row when it changed (host
// indexes then no longer name the same hosts, so the memoised run times of
// the tasks are forgotten too). Every individual is then repaired and
// evaluated again: the best individual is still in the population, legal, and
// its schedule on the new problem is as good as the population can offer,
// though its cost will differ. Trace is told the new best.
func (g *GA) Update(p *Problem) error {
	if err := p.Validate(); err != nil {
		return err
	}
	oldOf := g.match(p)
	newOf := make([]int, len(g.tasks))
	for i := range newOf {
		newOf[i] = -1
	}
	for j, o := range oldOf {
		if o >= 0 {
			newOf[o] = j
		}
	}
	hostsChanged := p.Hosts != g.hosts
	if hostsChanged {
		for _, t := range p.Tasks {
			t.Forget()
		}
	}

	old, oldGs := g.pop.Individuals, g.gs
	g.ev.setProblem(p)
	g.allocate(len(old))
	order := make([]int, 0, len(p.Tasks))
	for i, og := range oldGs {
		order = order[:0]
		for _, o := range og.Order {
			if j := newOf[o]; j >= 0 {
				order = append(order, j)
			}
		}
		for j, o := range oldOf {
			if o < 0 {
				order = append(order, 0)
				k := g.rng.Intn(len(order))
				copy(order[k+1:], order[k:])
				order[k] = j
			}
		}
		c := &g.gs[i].Chromosome
		copy(c.Order, order)
		for j, t := range p.Tasks {
			if o := oldOf[j]; o >= 0 && !hostsChanged {
				copy(c.Map[j], og.Map[o])
			} else {
				freshRow(p, t, c.Map[j], g.rng)
			}
		}
		Repair(p, c, g.rng)
	}
	g.snapshot(p)
	g.best, g.bestCost, g.ready, g.stall = -1, math.Inf(1), true, 0
	for i := range g.pop.Individuals {
		_ = g.pop.Individuals[i].Evaluate()
		if c := g.pop.Individuals[i].Fitness; g.best < 0 || c < g.bestCost {
			g.best, g.bestCost = i, c
		}
	}
	if g.cfg.Trace != nil {
		g.cfg.Trace(g.ev.evals, g.bestCost)
	}
	return nil
}

// match returns, for each task of p, the index of the same task in the old
// problem, or -1 for an arrival: the same *Task first, else the first
// unmatched old task with the same ID.
func (g *GA) match(p *Problem) []int {
	byPtr := make(map[*Task]int, len(g.tasks))
	byID := make(map[string][]int, len(g.tasks))
	for i, t := range g.tasks {
		if _, dup := byPtr[t]; !dup {
			byPtr[t] = i
		}
		byID[t.ID] = append(byID[t.ID], i)
	}
	used := make([]bool, len(g.tasks))
	oldOf := make([]int, len(p.Tasks))
	for j, t := range p.Tasks {
		oldOf[j] = -1
		if i, ok := byPtr[t]; ok && !used[i] {
			oldOf[j], used[i] = i, true
		}
	}
	for j, t := range p.Tasks {
		if oldOf[j] >= 0 {
			continue
		}
		for _, i := range byID[t.ID] {
			if !used[i] {
				oldOf[j], used[i] = i, true
				break
			}
		}
	}
	return oldOf
}

// mapOnly reports whether the memetic operators replace the paper's
// crossover and mutation: with the local search on, every task on one host
// and the cost the plain makespan, a string's cost depends on its mapping
// part alone, so crossGreedy and kick, which leave the order part as it is,
// lose nothing. Under XMS or the tie-break on start times the order counts,
// and the paper's operators, which also move it, stay.
func (g *GA) mapOnly() bool {
	return g.cfg.LocalSearch > 0 && g.ev.oneHost && g.cfg.Cost == MS && !g.cfg.TieBreak
}

// cataclysmShare is the share of tasks a cataclysm moves to random hosts in
// each copy of the best (see Config.Cataclysm and docs/memetic.md).
const cataclysmShare = 0.1

// cataclysm renews the population around its best (slot 0, after survive):
// every other individual becomes a copy of the best with about
// cataclysmShare of its tasks moved to random hosts and, when the local
// search is on, descended again. They are evaluated by the next step, like
// an initial population, so a cancellation cannot leave one unevaluated and
// counted.
func (g *GA) cataclysm() {
	p := g.ev.p
	n := len(p.Tasks)
	moves := max(1, int(cataclysmShare*float64(n)+0.5))
	best := &g.gs[0].Chromosome
	for i := 1; i < len(g.gs); i++ {
		c := &g.gs[i].Chromosome
		copyChrom(c, best)
		kick(p, c, moves, g.rng)
		if g.cfg.LocalSearch > 0 {
			localSearch(p, c, &g.ev.l, &g.ev.r, math.Inf(-1), g.rng)
		}
		g.pop.Individuals[i].Evaluated = false
	}
	g.ready, g.stall = false, 0
}

// Memetic returns the GA's setting for problems whose tasks each run on one
// host (Braun's ETC problem; `msched bench etc`): a small population whose
// every offspring is descended by the local search, crossover by
// crossGreedy (half the pairs), mutation by a kick of DefaultKick host
// moves, no alignment (on one-host tasks it would replace the mapping by a
// list schedule in string order), and a cataclysm after 30 generations
// without progress. docs/memetic.md has the experiments that chose it.
func Memetic(cost CostKind) Config {
	return Config{Population: 8, CrossoverRate: 0.5, AlignRate: -1, LocalSearch: 1, Cataclysm: 30, Cost: cost}
}
