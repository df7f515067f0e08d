package ga

import (
	"context"
	"errors"
	"math"
	"math/rand"
)

// SAConfig configures simulated annealing. Zero values choose automatically.
type SAConfig struct {
	Cost CostKind // what to minimise

	// T0 is the initial temperature in cost units. 0: set it from a short
	// random walk (see SA), so that the average uphill move of a random
	// string is accepted with probability saAccept0.
	T0 float64

	// Cooling is the geometric factor applied to the temperature after every
	// Steps moves, in (0, 1). 0: chosen at the first Run so that the
	// temperature falls by saFinalRatio over that Run's budget.
	Cooling float64

	// Steps is the number of moves at each temperature (Numerical Recipes'
	// nover, there 100 per city). 0: 100·n, but at most a 1/100th of the
	// first Run's budget, so that a small budget still sees a hundred
	// temperatures.
	Steps int

	// Start is the initial string (copied and repaired); nil: NewRandom.
	Start *Chromosome

	Trace TraceFunc // told every improvement; may be nil
}

// Tuning. The values below were chosen on 16 random instances of the
// paper's test model (20 tasks of Eq. 2 on 16 hosts) at 2,000, 20,000 and
// 100,000 evaluations, under both MS and XMS, against the lower bound;
// neighbouring values were within noise for MS, while hotter starts were
// clearly worse for XMS, whose cost jumps by whole multiples of w.
const (
	// saAccept0 is the probability with which the automatic T0 accepts the
	// average uphill move of the T0 walk.
	saAccept0 = 0.1
	// saFinalRatio is how far the automatic schedule cools: the last
	// temperature is T0/1000, where even small uphill moves near the
	// optimum are refused and the search ends as a descent.
	saFinalRatio = 1e-3
	// saWalk is the longest random walk used to set T0 automatically.
	saWalk = 100
	// Move mix: saOrderMoves of the moves rearrange the ordering part, the
	// rest the mapping part. Of the mapping moves, saRowMoves are the
	// paper's transport or reversal of mapping rows between tasks along the
	// order (which lets a task take a whole host set that suits it at once);
	// the rest change one task's row by one host, flipping a bit (changing
	// its host count) with probability saFlipMoves, else moving a host.
	saOrderMoves = 0.3
	saRowMoves   = 0.2
	saFlipMoves  = 0.6
)

// SA is simulated annealing on the paper's two-part string, after the
// travelling-salesman routine anneal of Numerical Recipes in C (§10.9), as the
// MS paper describes it (§2.3): path transport or reversal, accepted by the
// Metropolis rule, separately for the ordering and mapping parts.
//
// Moves. On the ordering part, as in anneal: path reversal (a segment of the
// order is reversed) or path transport (a segment is cut out and inserted
// elsewhere), with equal probability. Anneal draws segments uniformly; here
// their lengths favour short segments (a length is uniform on [1, u] with u
// itself uniform), because late in the schedule the useful moves on a
// schedule are small. On the mapping part: with probability saRowMoves the
// same transport or reversal is applied to the mapping rows along the order,
// so tasks exchange host sets (rows that do not fit their new task are
// repaired); otherwise one task's row changes by one host, either moving a
// host (same count) or flipping one host bit within [Min, MaxHosts]. For
// one-host tasks that last move is "move the task to another machine", the
// move Braun et al.'s SA makes.
//
// Acceptance is Metropolis: a move that raises the cost by Δ > 0 is kept with
// probability exp(-Δ/T). Cooling is geometric, T ← Cooling·T after every
// Steps moves. NR's early exit after 10·n successes at one temperature is not
// used, because the schedule is tied to the evaluation budget instead, so
// that SA spends exactly as many evaluations as the optimiser it is compared
// with and ends its schedule cold; a later Run with a larger budget continues
// cooling from where the last one stopped.
//
// Every proposed move costs one evaluation (decode and cost), as do the
// initial string and the T0 walk.
type SA struct {
	p   *Problem
	cfg SAConfig
	rng *rand.Rand

	cur, best         *Chromosome
	curCost, bestCost float64
	evals             int
	t0, temp, cooling float64
	steps, step       int
	planned           bool
	s                 Schedule

	allowed  [][]int // per task: allowed hosts
	mappable []int   // tasks whose row can change (more allowed hosts than Min)

	// undo log of the move being tried
	oldOrder   []int
	orderSaved bool
	saved      []savedRow
	buf        []uint64
	perm, tmp  []int
	refs       []Bits // per task: its row before a row move
}

type savedRow struct {
	task int
	ref  Bits
	off  int
}

// NewSA prepares simulated annealing of p. It does not evaluate anything
// until Run.
func NewSA(p *Problem, cfg SAConfig, rng *rand.Rand) (*SA, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if cfg.T0 < 0 || math.IsNaN(cfg.T0) || math.IsInf(cfg.T0, 0) {
		return nil, errors.New("ga: SA initial temperature must be finite and ≥ 0")
	}
	if cfg.Cooling < 0 || cfg.Cooling >= 1 || math.IsNaN(cfg.Cooling) {
		return nil, errors.New("ga: SA cooling factor must be in (0, 1), or 0 for automatic")
	}
	if cfg.Steps < 0 {
		return nil, errors.New("ga: SA steps per temperature must be ≥ 0")
	}
	n := len(p.Tasks)
	a := &SA{
		p: p, cfg: cfg, rng: rng,
		allowed:  make([][]int, n),
		oldOrder: make([]int, n),
		perm:     make([]int, n),
		tmp:      make([]int, n),
		refs:     make([]Bits, n),
		curCost:  math.Inf(1), bestCost: math.Inf(1),
	}
	for j, t := range p.Tasks {
		a.allowed[j] = allowedHosts(p, t)
		if len(a.allowed[j]) > t.Min {
			a.mappable = append(a.mappable, j)
		}
	}
	if cfg.Start != nil {
		if len(cfg.Start.Order) != n || len(cfg.Start.Map) != n {
			return nil, errors.New("ga: SA start string does not match the problem")
		}
	}
	return a, nil
}

// Best returns a copy of the best string so far and its cost (nil and +Inf
// before Run).
func (a *SA) Best() (*Chromosome, float64) {
	if a.best == nil {
		return nil, math.Inf(1)
	}
	return a.best.Clone(), a.bestCost
}

// Evaluations is the number of evaluations made so far.
func (a *SA) Evaluations() int { return a.evals }

// Temperature is the current temperature (0 before the first Run).
func (a *SA) Temperature() float64 { return a.temp }

func (a *SA) evaluate() float64 {
	a.evals++
	return Evaluate(a.p, a.cur, a.cfg.Cost, &a.s)
}

// Run anneals until Evaluations reaches maxEvals or ctx is done.
func (a *SA) Run(ctx context.Context, maxEvals int) error {
	if a.evals >= maxEvals {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if a.cur == nil {
		if a.cfg.Start != nil {
			a.cur = a.cfg.Start.Clone()
			Repair(a.p, a.cur, a.rng)
		} else {
			a.cur = NewRandom(a.p, a.rng)
		}
		a.best = a.cur.Clone()
		a.curCost = a.evaluate()
		a.improved()
	}
	if !a.planned {
		a.plan(maxEvals)
	}
	for a.evals < maxEvals {
		if a.evals%32 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		a.propose()
		c := a.evaluate()
		if d := c - a.curCost; d <= 0 || a.rng.Float64() < math.Exp(-d/a.temp) {
			a.curCost = c
			a.improved()
		} else {
			a.undo()
		}
		if a.step++; a.step >= a.steps {
			a.step = 0
			a.temp *= a.cooling
		}
	}
	return nil
}

// improved records the current string as the best if it is better.
func (a *SA) improved() {
	if a.curCost < a.bestCost {
		a.bestCost = a.curCost
		copy(a.best.Order, a.cur.Order)
		for j, b := range a.cur.Map {
			if len(a.best.Map[j]) != len(b) {
				a.best.Map[j] = b.Clone()
			} else {
				copy(a.best.Map[j], b)
			}
		}
		if a.cfg.Trace != nil {
			a.cfg.Trace(a.evals, a.bestCost)
		}
	}
}

// plan fixes the schedule at the first Run, from its budget: T0 by a random
// walk if not given (every step of the walk is accepted, and its uphill
// steps measure the spread of costs), then steps per temperature and the
// cooling factor.
func (a *SA) plan(maxEvals int) {
	a.planned = true
	a.temp = a.cfg.T0
	if a.temp == 0 {
		walk := min(saWalk, (maxEvals-a.evals)/10)
		up, nup := 0.0, 0
		for i := 0; i < walk; i++ {
			a.propose()
			c := a.evaluate()
			if d := c - a.curCost; d > 0 && !math.IsInf(d, 0) {
				up += d
				nup++
			}
			a.curCost = c
			a.improved()
		}
		switch {
		case nup > 0:
			a.temp = up / float64(nup) / -math.Log(saAccept0)
		case a.curCost > 0 && !math.IsInf(a.curCost, 0):
			a.temp = a.curCost * 1e-3
		default:
			a.temp = 1
		}
	}
	a.t0 = a.temp
	left := max(1, maxEvals-a.evals)
	a.steps = a.cfg.Steps
	if a.steps == 0 {
		a.steps = max(1, min(100*len(a.p.Tasks), left/100))
	}
	a.cooling = a.cfg.Cooling
	if a.cooling == 0 {
		levels := max(1, left/a.steps)
		a.cooling = math.Pow(saFinalRatio, 1/float64(levels))
	}
}

// propose applies a random move to a.cur, logging what it needs to undo.
func (a *SA) propose() {
	a.orderSaved = false
	a.saved = a.saved[:0]
	a.buf = a.buf[:0]
	n := len(a.p.Tasks)
	canOrder, canMap := n >= 2, len(a.mappable) > 0
	switch {
	case canOrder && (!canMap || a.rng.Float64() < saOrderMoves):
		a.pathMove(false)
	case canMap && n >= 2 && a.rng.Float64() < saRowMoves:
		a.pathMove(true)
	case canMap:
		a.hostMove(a.mappable[a.rng.Intn(len(a.mappable))])
	}
}

// segLen draws a segment length in [lo, hi], favouring short ones: uniform
// on [lo, lo+u] with u uniform on [0, hi-lo].
func (a *SA) segLen(lo, hi int) int {
	return lo + a.rng.Intn(1+a.rng.Intn(hi-lo+1))
}

// pathMove is NR's reversal or transport of a segment, on the ordering part
// or (rows) on the mapping rows along the order. It writes the position
// permutation into a.perm (new position k takes old position perm[k]).
func (a *SA) pathMove(rows bool) {
	n := len(a.p.Tasks)
	for k := range a.perm {
		a.perm[k] = k
	}
	if a.rng.Intn(2) == 0 {
		l := a.segLen(2, n)
		i := a.rng.Intn(n - l + 1)
		for t := 0; t < l; t++ {
			a.perm[i+t] = i + l - 1 - t
		}
	} else {
		l := a.segLen(1, n-1)
		i := a.rng.Intn(n - l + 1)
		pos := a.rng.Intn(n - l) // insertion point among the n-l others
		if pos >= i {
			pos++
		}
		rest := a.tmp[:0]
		for k := 0; k < n; k++ {
			if k < i || k >= i+l {
				rest = append(rest, k)
			}
		}
		k := 0
		for _, r := range rest[:pos] {
			a.perm[k] = r
			k++
		}
		for t := 0; t < l; t++ {
			a.perm[k] = i + t
			k++
		}
		for _, r := range rest[pos:] {
			a.perm[k] = r
			k++
		}
	}
	o := a.cur.Order
	if !rows {
		copy(a.oldOrder, o)
		a.orderSaved = true
		for k, from := range a.perm {
			o[k] = a.oldOrder[from]
		}
		return
	}
	// Rows: the task at position k takes the row of the task at position
	// perm[k]. Log every row that moves (reference and content) first.
	for k, from := range a.perm {
		if from != k {
			a.saveRow(o[k])
		}
	}
	for _, sr := range a.saved {
		a.refs[sr.task] = sr.ref
	}
	for k, from := range a.perm {
		if from != k {
			a.cur.Map[o[k]] = a.refs[o[from]]
		}
	}
	// A row that does not fit its new task is repaired: hosts it may not
	// use are dropped, then hosts removed or added at random into
	// [Min, MaxHosts].
	for _, sr := range a.saved {
		repairRow(a.p, a.p.Tasks[sr.task], a.cur.Map[sr.task], a.rng)
	}
}

// hostMove changes task j's row by one host: a bit flip within
// [Min, MaxHosts] (half the time, when one is possible), else a host moved to
// a host the task does not use (or, if it uses every host it may, dropped).
func (a *SA) hostMove(j int) {
	t, b := a.p.Tasks[j], a.cur.Map[j]
	a.saveRow(j)
	c, hi := b.Count(), a.p.MaxHosts(t)
	if hi > t.Min && a.rng.Float64() < saFlipMoves {
		h := a.allowed[j][a.rng.Intn(len(a.allowed[j]))]
		if flipWithin(b, h, c, t.Min, hi) {
			return
		}
	}
	drop := b.Nth(a.rng.Intn(c))
	if c == len(a.allowed[j]) { // every allowed host in use: shrink (c > Min, j is mappable)
		b.Clear(drop)
		return
	}
	b.Set(nthFree(a.p, t, b, a.rng.Intn(len(a.allowed[j])-c)))
	b.Clear(drop)
}

// saveRow logs task j's row (reference and content) for undo.
func (a *SA) saveRow(j int) {
	b := a.cur.Map[j]
	a.saved = append(a.saved, savedRow{task: j, ref: b, off: len(a.buf)})
	a.buf = append(a.buf, b...)
}

// undo restores the string before the last move.
func (a *SA) undo() {
	if a.orderSaved {
		copy(a.cur.Order, a.oldOrder)
	}
	for i := len(a.saved) - 1; i >= 0; i-- {
		sr := a.saved[i]
		a.cur.Map[sr.task] = sr.ref
		copy(sr.ref, a.buf[sr.off:sr.off+len(sr.ref)])
	}
}
