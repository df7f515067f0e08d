package ga

import (
	"context"
	"math"
	"math/rand"
)

// RandomConfig configures RandomSearch.
type RandomConfig struct {
	Cost  CostKind  // what to minimise
	Trace TraceFunc // told every improvement; may be nil
}

// RandomSearch is the paper's random-search baseline (Fig. 3): every sample
// is a uniformly random ordering part and, for every task, its peak-speedup
// host count (PeakHosts) on hosts drawn uniformly from those it may use. It
// keeps the best sample. It shows how large the search space is: the GA and
// SA must beat it by a wide margin at the same number of evaluations.
type RandomSearch struct {
	p       *Problem
	cfg     RandomConfig
	rng     *rand.Rand
	peak    []int   // per task: its peak-speedup count
	allowed [][]int // per task: its allowed hosts, shuffled in place
	cand    *Chromosome
	best    *Chromosome
	cost    float64
	evals   int
	s       Schedule
}

// NewRandomSearch prepares a random search of p. The peak-speedup counts are
// computed once, here, since they depend on the task alone.
func NewRandomSearch(p *Problem, cfg RandomConfig, rng *rand.Rand) (*RandomSearch, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	n := len(p.Tasks)
	r := &RandomSearch{
		p: p, cfg: cfg, rng: rng,
		peak:    make([]int, n),
		allowed: make([][]int, n),
		cand:    &Chromosome{Order: make([]int, n), Map: make([]Bits, n)},
		cost:    math.Inf(1),
	}
	for j, t := range p.Tasks {
		r.peak[j] = PeakHosts(p, t)
		r.allowed[j] = allowedHosts(p, t)
		r.cand.Order[j] = j
		r.cand.Map[j] = NewBits(p.Hosts)
	}
	return r, nil
}

// sample fills r.cand with a fresh random string. Shuffling the previous
// permutation (and the previous host lists) in place is as uniform as
// shuffling the identity, and allocates nothing.
func (r *RandomSearch) sample() {
	o := r.cand.Order
	for i := len(o) - 1; i > 0; i-- {
		k := r.rng.Intn(i + 1)
		o[i], o[k] = o[k], o[i]
	}
	for j, hs := range r.allowed {
		b := r.cand.Map[j]
		b.Reset()
		for i := 0; i < r.peak[j]; i++ {
			k := i + r.rng.Intn(len(hs)-i)
			hs[i], hs[k] = hs[k], hs[i]
			b.Set(hs[i])
		}
	}
}

// Run draws samples until Evaluations reaches maxEvals or ctx is done.
func (r *RandomSearch) Run(ctx context.Context, maxEvals int) error {
	for r.evals < maxEvals {
		if r.evals%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		r.sample()
		c := Evaluate(r.p, r.cand, r.cfg.Cost, &r.s)
		r.evals++
		if r.best == nil || c < r.cost {
			r.best, r.cost = r.cand.Clone(), c
			if r.cfg.Trace != nil {
				r.cfg.Trace(r.evals, c)
			}
		}
	}
	return nil
}

// Best returns a copy of the best sample so far and its cost (nil and +Inf
// before the first evaluation).
func (r *RandomSearch) Best() (*Chromosome, float64) {
	if r.best == nil {
		return nil, math.Inf(1)
	}
	return r.best.Clone(), r.cost
}

// Evaluations is the number of samples evaluated so far.
func (r *RandomSearch) Evaluations() int { return r.evals }
