package ga

import (
	"math/rand"

	"github.com/MaxHalford/eaopt"
)

// Evaluator binds chromosomes to one problem and one cost, counts every
// decode it makes, and owns the scratch space that decoding and crossover
// reuse, so that neither allocates. Genomes made by the same Evaluator share
// that scratch space: evaluate and breed them from one goroutine only (with
// eaopt, ParallelEval must stay false).
type Evaluator struct {
	p     *Problem
	kind  CostKind
	tie   bool // Config.TieBreak
	evals int
	s     Schedule
	x     crossScratch
	r     alignScratch
	l     localScratch
	// oneHost: every task runs on one host, so that the order part does
	// not change the makespan; fast: moreover no base is negative (or NaN),
	// so that under MS a string's cost is its largest host load, as
	// loadMakespan computes it (Decode starts no task before 0).
	oneHost, fast bool
	load          []float64
}

// NewEvaluator returns an Evaluator for p under cost k.
func NewEvaluator(p *Problem, k CostKind) *Evaluator {
	e := &Evaluator{kind: k}
	e.setProblem(p)
	return e
}

// setProblem rebinds e (and so every genome made from it) to p.
func (e *Evaluator) setProblem(p *Problem) {
	e.p = p
	e.x.resize(len(p.Tasks), p.Words())
	e.r.resize(len(p.Tasks), p.Hosts, p.Words())
	e.l.resize(len(p.Tasks), p.Hosts, p.Words())
	e.load = make([]float64, p.Hosts)
	e.oneHost = true
	for _, t := range p.Tasks {
		if p.MaxHosts(t) != 1 {
			e.oneHost = false
		}
	}
	e.fast = e.oneHost
	for h := 0; h < p.Hosts; h++ {
		if !(p.base(h) >= 0) {
			e.fast = false
		}
	}
}

// Problem is the problem genomes are evaluated against.
func (e *Evaluator) Problem() *Problem { return e.p }

// Cost is the cost genomes are evaluated under.
func (e *Evaluator) Cost() CostKind { return e.kind }

// Evaluations is the number of decodes made so far.
func (e *Evaluator) Evaluations() int { return e.evals }

// Evaluate decodes c and returns its cost, counting one evaluation.
func (e *Evaluator) Evaluate(c *Chromosome) float64 {
	e.evals++
	if e.kind == MS && !e.tie && e.fast {
		if w, ok := e.loadMakespan(c); ok {
			return w
		}
	}
	cost := Evaluate(e.p, c, e.kind, &e.s)
	if e.tie {
		cost *= 1 + tieWeight*e.s.meanStartFraction()
	}
	return cost
}

// loadMakespan is c's makespan when every row holds one host (ok false
// otherwise): each host runs its tasks back to back from its base, as
// Decode would, so the makespan is the largest load. It reads the run times
// from the dense rows the local search uses, where Decode asks each task's
// memo.
func (e *Evaluator) loadMakespan(c *Chromosome) (float64, bool) {
	p := e.p
	for _, b := range c.Map {
		if b.Count() != 1 {
			return 0, false
		}
	}
	p.Lead(c)
	for h := range e.load {
		e.load[h] = p.base(h)
	}
	// In string order, so that the sums are Decode's to the last bit.
	for _, j := range c.Order {
		h := firstHost(c.Map[j])
		e.load[h] += e.r.timeOn(p.Tasks[j], j, h)
	}
	w := 0.0
	for _, v := range e.load {
		w = max(w, v)
	}
	return w, true
}

// tieWeight scales Config.TieBreak's term: far below any difference of
// cost that means something, far above float rounding of a sum of starts.
const tieWeight = 1e-9

// Genome returns a genome over c (not copied) for use with eaopt.
func (e *Evaluator) Genome(c *Chromosome) *Genome {
	return &Genome{Chromosome: *c, e: e}
}

// newGenome returns a genome whose rows share one backing array, so that
// copying a whole chromosome is two copies and no allocation.
func (e *Evaluator) newGenome() *Genome {
	n, w := len(e.p.Tasks), e.p.Words()
	g := &Genome{e: e}
	g.Order = make([]int, n)
	g.Map = make([]Bits, n)
	store := make([]uint64, n*w)
	for j := range g.Map {
		g.Map[j] = Bits(store[j*w : (j+1)*w : (j+1)*w])
	}
	return g
}

// Genome is a chromosome bound to an Evaluator; it implements eaopt.Genome
// with the paper's operators (see operators.go). Its fitness for eaopt is the
// cost, which eaopt minimises.
type Genome struct {
	Chromosome
	e *Evaluator
}

var _ eaopt.Genome = (*Genome)(nil)

// Evaluate decodes the genome and returns its cost.
func (g *Genome) Evaluate() (float64, error) { return g.e.Evaluate(&g.Chromosome), nil }

// Mutate applies the paper's mutation (see mutateSwapFlip).
func (g *Genome) Mutate(rng *rand.Rand) { mutateSwapFlip(g.e.p, &g.Chromosome, rng) }

// Crossover replaces g and mate, which must be a *Genome of the same
// Evaluator, by their two offspring (see crossSplice). The caller must mark
// both individuals unevaluated: eaopt's Individual.Crossover forgets the mate.
func (g *Genome) Crossover(mate eaopt.Genome, rng *rand.Rand) {
	m := mate.(*Genome)
	crossSplice(g.e.p, &g.Chromosome, &m.Chromosome, &g.e.x, rng)
}

// Clone returns a deep copy bound to the same Evaluator.
func (g *Genome) Clone() eaopt.Genome {
	return &Genome{Chromosome: *g.Chromosome.Clone(), e: g.e}
}

// copyFrom overwrites g's chromosome with src's without allocating; both
// must be sized for the same problem.
func (g *Genome) copyFrom(src *Chromosome) { copyChrom(&g.Chromosome, src) }
