package ga

import (
	"context"
	"errors"
	"math"
	"math/rand"
)

// ILSConfig configures ILS.
type ILSConfig struct {
	Cost CostKind // what to minimise
	// Kick is the number of random host moves of a perturbation; zero
	// means DefaultKick.
	Kick  int
	Trace TraceFunc // told every improvement; may be nil
}

// DefaultKick is the perturbation of the ILS and the memetic GA's mutation
// on one-host tasks: this many tasks moved to random hosts before a descent.
// Of 1, 2, 4 and 8, 4 was best for the ILS on generated ETC instances of all
// twelve classes (512 × 16, instance seed 99, which the acceptance runs do
// not use), 2 s each: mean makespan over the LP bound 1.0433, 1.0223,
// 1.0157 and 1.0230 (docs/memetic.md).
const DefaultKick = 4

// ILS is the iterated local search baseline of `msched bench etc`: from a
// start (Min-min there), it descends with localSearch; then, until the
// budget is spent, it perturbs the current string by Kick random host moves,
// descends again, and keeps the result if it costs no more than the current
// one (so it drifts across plateaus of equal makespan). One iteration is one
// evaluation (the decode of the descended string); the descent's moves are
// priced from loads and not counted.
type ILS struct {
	p        *Problem
	cfg      ILSConfig
	rng      *rand.Rand
	cur, can *Chromosome
	curCost  float64
	best     *Chromosome
	bestCost float64
	ev       *Evaluator // decodes, counts, and holds the search's scratch
}

var _ Optimizer = (*ILS)(nil)

// NewILS returns an ILS of p from a copy of start (repaired if needed).
func NewILS(p *Problem, start *Chromosome, cfg ILSConfig, rng *rand.Rand) (*ILS, error) {
	if rng == nil {
		return nil, errors.New("ga: nil random source")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if len(start.Order) != len(p.Tasks) || len(start.Map) != len(p.Tasks) {
		return nil, errors.New("ga: ILS start is not a chromosome of the problem")
	}
	if cfg.Kick <= 0 {
		cfg.Kick = DefaultKick
	}
	a := &ILS{p: p, cfg: cfg, rng: rng, cur: start.Clone(), curCost: math.Inf(1), bestCost: math.Inf(1)}
	Repair(p, a.cur, rng)
	a.can = a.cur.Clone()
	a.best = a.cur.Clone()
	a.ev = NewEvaluator(p, cfg.Cost)
	return a, nil
}

// Run iterates until maxEvals evaluations or ctx is done.
func (a *ILS) Run(ctx context.Context, maxEvals int) error {
	done := ctx.Done()
	for a.ev.evals < maxEvals {
		select {
		case <-done:
			return ctx.Err()
		default:
		}
		copyChrom(a.can, a.cur)
		if a.ev.evals > 0 {
			kick(a.p, a.can, a.cfg.Kick, a.rng)
		}
		localSearch(a.p, a.can, &a.ev.l, &a.ev.r, math.Inf(-1), a.rng)
		c := a.ev.Evaluate(a.can)
		if c <= a.curCost {
			a.cur, a.can, a.curCost = a.can, a.cur, c
		}
		if c < a.bestCost || a.ev.evals == 1 {
			a.bestCost = c
			copyChrom(a.best, a.cur)
			if a.cfg.Trace != nil {
				a.cfg.Trace(a.ev.evals, c)
			}
		}
	}
	return nil
}

// Best returns a copy of the best string found and its cost.
func (a *ILS) Best() (*Chromosome, float64) {
	if a.ev.evals == 0 {
		return nil, math.Inf(1)
	}
	return a.best.Clone(), a.bestCost
}

// Evaluations is the number of descents made.
func (a *ILS) Evaluations() int { return a.ev.evals }

// copyChrom overwrites dst with src; both are of one problem.
func copyChrom(dst, src *Chromosome) {
	copy(dst.Order, src.Order)
	for j, b := range src.Map {
		copy(dst.Map[j], b)
	}
}

// kick is the perturbation of the local searches: k tasks drawn at random,
// each with one host moved (see hostMove).
func kick(p *Problem, c *Chromosome, k int, rng *rand.Rand) {
	for range k {
		j := rng.Intn(len(p.Tasks))
		hostMove(p, p.Tasks[j], c.Map[j], rng)
	}
}
