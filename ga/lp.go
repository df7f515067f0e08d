package ga

import (
	"context"
	"fmt"
	"math"
)

// LPResult is what LPBound found: a proven lower bound on the makespan, and
// the makespan of a fractional assignment that shows how far that bound can
// be below the LP optimum.
type LPResult struct {
	Bound      float64 // proven lower bound: D(w) at the best w found (the LP optimum when Gap is 0)
	Primal     float64 // makespan of the best fractional assignment found: an upper bound on the LP optimum
	Iterations int     // pricing rounds: best responses a(w) computed after the first, at equal weights
	// Weights are the host weights w at which Bound was found (they sum to
	// 1): the LP's dual, whose best response (DualResponse) guides a search.
	Weights []float64
}

// Gap returns (Primal-Bound)/Primal: how far, relative to Primal, Bound may
// lie below the LP optimum. It is 0 when the two are equal (also when both
// are 0).
func (r LPResult) Gap() float64 {
	if r.Primal == r.Bound {
		return 0
	}
	return (r.Primal - r.Bound) / r.Primal
}

// LPBound returns the LP relaxation lower bound of the makespan of p, whose
// tasks must all run on one host (R||Cmax, with the hosts' base): the
// optimum of
//
//	minimise C  subject to  Σ_h x_th = 1 for every task t,
//	                        base_h + Σ_t e_th·x_th ≤ C for every host h,
//	                        x_th ≥ 0,
//
// where x_th is the fraction of task t run on host h, for the hosts it may
// use (Allowed, and a finite run time e_th = its time on h alone). Splitting
// tasks can only help, so the optimum is a lower bound on every schedule;
// it dominates LowerBound's work term (to rounding), which is D below at
// equal weights.
//
// The bound is computed on the LP's dual, max over weights w ≥ 0, Σ_h w_h = 1
// of D(w) = Σ_h w_h·base_h + Σ_t min_h w_h·e_th: for any such w, D(w) is a
// lower bound (weak duality: weigh the host constraints by w), and D(w) is
// the least w-weighted load Σ_h w_h·L_h(a) over the integral assignments a,
// reached by the best response a(w) that puts every task on its argmin_h
// w_h·e_th. D is concave and piecewise linear, and its maximum is the LP
// optimum. LPBound maximises it by Dantzig–Wolfe column generation
// (Kelley's cutting planes on D): the columns are the load vectors of
// integral assignments, and the master LP "minimise C subject to
// Σ_k λ_k·L_kh ≤ C for every h, Σ_k λ_k = 1, λ ≥ 0" over the columns so far
// is solved by a small revised simplex (m+1 rows) kept warm from one round
// to the next. A convex combination of assignments is a fractional
// assignment, so the master's optimum is an upper bound (Primal), and its
// dual weights w are where D is queried next, stabilised in-out fashion
// (Ben-Ameur and Neto 2007): the query point is 0.7 of the way from the
// master's w to the best w so far, and the master's w itself when that
// point yields no column that cuts it. A query at the master's w either
// cuts it or shows the master optimal, and there are finitely many columns,
// so this closes the gap exactly, not just in the limit. It stops when Gap
// is at most 1e-10 or no column cuts the master's w. On Braun's 512 tasks ×
// 16 hosts it takes 100–170 rounds and 1.5–3 ms, and Gap is the rounding
// allowance below, about 2.4e-13 (pure Kelley, querying the master's w
// only, takes about twice the rounds). gonum's dense simplex on the
// 8,192-variable primal takes 2 to 30 s from a good starting basis, and
// about a minute without.
//
// Bound is D at the best w found, less a rounding allowance of about
// 4(n+m)·2⁻⁵³ of its size, so that float64 summation cannot lift it above
// the exact D(w); Primal is computed from the master's weights in the
// problem's own units, not from the master's (scaled) objective, so neither
// rests on the simplex being accurate: its errors can only slow
// convergence. Should the rounds run out (a cap far beyond what instances of
// Braun's size need), the result is still valid and Gap says how good.
//
// It returns an error if p is invalid, if some task can use more than one
// host (p.MaxHosts > 1), if some task has no finite run time on any host it
// may use, or if a host's base is not finite. When ctx ends it returns what
// it has, a valid but looser bound, with ctx.Err().
func LPBound(ctx context.Context, p *Problem) (LPResult, error) {
	in, err := newLPInstance(p)
	if err != nil {
		return LPResult{}, err
	}
	return in.solve(ctx)
}

const (
	lpGapTol    = 1e-10 // stop when Primal-Bound is at most this much of Primal
	lpCutTol    = 1e-11 // a column must cut the master's w by this much (scaled units)
	lpPriceTol  = 1e-12 // reduced cost below which a master column enters (scaled units)
	lpAlpha     = 0.7   // in-out: weight of the best w in the query point
	lpMaxRounds = 20000 // pricing rounds before giving up on closing the gap
)

// lpInstance is a one-host problem as the LP sees it: each task's finite run
// times on the hosts it may use, in compressed rows.
type lpInstance struct {
	n, m  int
	base  []float64
	start []int // task t's entries are host[start[t]:start[t+1]], time[...]
	host  []int
	time  []float64
}

func newLPInstance(p *Problem) (*lpInstance, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	in := &lpInstance{n: len(p.Tasks), m: p.Hosts, base: make([]float64, p.Hosts), start: make([]int, 1, len(p.Tasks)+1)}
	for h := range in.base {
		b := p.base(h)
		if math.IsNaN(b) || math.IsInf(b, 0) {
			return nil, fmt.Errorf("ga: LPBound: host %d has base %g", h, b)
		}
		in.base[h] = b
	}
	for _, t := range p.Tasks {
		if k := p.MaxHosts(t); k > 1 {
			return nil, fmt.Errorf("ga: LPBound: task %q can use %d hosts; the LP bound is for one-host tasks only", t.ID, k)
		}
		for _, h := range allowedHosts(p, t) {
			if d := t.Time(singleHost(in.m, h)); !math.IsInf(d, 0) && !math.IsNaN(d) {
				in.host = append(in.host, h)
				in.time = append(in.time, d)
			}
		}
		if len(in.host) == in.start[len(in.start)-1] {
			return nil, fmt.Errorf("ga: LPBound: task %q has no finite run time on any host it may use", t.ID)
		}
		in.start = append(in.start, len(in.host))
	}
	return in, nil
}

// respond returns D(w) = Σ_h w_h·base_h + Σ_t min_h w_h·e_th and the sum of
// the absolute values of its terms (for the rounding allowance), and sets
// load to the host loads, base included, of the best response a(w): every
// task on the host of its minimum, ties to the lowest.
func (in *lpInstance) respond(w, load []float64) (d, abs float64) {
	copy(load, in.base)
	for h, b := range in.base {
		d += w[h] * b
		abs += math.Abs(w[h] * b)
	}
	for t := 0; t < in.n; t++ {
		lo, hi := in.start[t], in.start[t+1]
		best, at := math.Inf(1), lo
		for i := lo; i < hi; i++ {
			if v := w[in.host[i]] * in.time[i]; v < best {
				best, at = v, i
			}
		}
		d += best
		abs += best
		load[in.host[at]] += in.time[at]
	}
	return d, abs
}

// bound is D(w)/Σw less the rounding allowance: a proven lower bound.
func (in *lpInstance) bound(w []float64, d, abs float64) float64 {
	sum := 0.0
	for _, v := range w {
		sum += v
	}
	allow := float64(4*(in.n+in.m+4)) * 0x1p-53
	return (d - abs*allow) / sum
}

// lpNormalise clips w at 0 and scales it to sum 1; false if nothing is left.
func lpNormalise(w []float64) bool {
	sum := 0.0
	for h, v := range w {
		if !(v > 0) {
			w[h] = 0
		}
		sum += w[h]
	}
	if !(sum > 0) || math.IsInf(sum, 1) {
		return false
	}
	for h := range w {
		w[h] /= sum
	}
	return true
}

// solve runs the column generation from the best response to equal weights:
// every task on its fastest host. (Seeding Min-min's assignment as well was
// tried, and saved nothing.)
func (in *lpInstance) solve(ctx context.Context) (LPResult, error) {
	m := in.m
	res := LPResult{Bound: math.Inf(-1), Primal: math.Inf(1)}
	wIn := make([]float64, m) // the best w so far: the in-out centre
	for h := range wIn {
		wIn[h] = 1 / float64(m)
	}
	res.Weights = wIn // kept up to date in place
	load := make([]float64, m)
	dIn, abs := in.respond(wIn, load)
	res.Bound = in.bound(wIn, dIn, abs)

	// The master works on loads shifted so that none is negative and scaled
	// so that the first column's largest is 1.
	shift := 0.0
	for _, b := range in.base {
		shift = math.Min(shift, b)
	}
	scale, span := 0.0, math.Inf(-1)
	for _, v := range load {
		scale = math.Max(scale, v-shift)
		span = math.Max(span, v)
	}
	if !(scale > 0) {
		scale = 1
	}
	ms := newLPMaster(m)
	var orig [][]float64 // the columns in the problem's units
	add := func(l []float64) {
		col := make([]float64, m)
		for h, v := range l {
			col[h] = (v - shift) / scale
		}
		ms.add(col)
		orig = append(orig, append([]float64(nil), l...))
	}
	add(load)
	res.Primal = span
	ms.reset(0)

	done := func() bool { return res.Primal-res.Bound <= lpGapTol*math.Abs(res.Primal) }
	wOut := make([]float64, m)
	wSep := make([]float64, m)
	// price queries D at w, keeps w as the centre if it is the best so far,
	// and adds the best response's column if it cuts the master's optimum z
	// at wOut. It reports whether it added a column.
	price := func(w []float64, z float64) bool {
		res.Iterations++
		d, abs := in.respond(w, load)
		if d >= dIn {
			dIn = d
			copy(wIn, w)
			res.Bound = math.Max(res.Bound, in.bound(w, d, abs))
		}
		cut := 0.0
		for h, v := range load {
			cut += wOut[h] * (v - shift) / scale
		}
		if cut < z-lpCutTol {
			add(load)
			return true
		}
		return false
	}
	for !done() && res.Iterations < lpMaxRounds {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		z := ms.solve(wOut)
		res.Primal = math.Min(res.Primal, ms.primal(orig))
		if done() || !lpNormalise(wOut) {
			break
		}
		for h := range wSep {
			wSep[h] = lpAlpha*wIn[h] + (1-lpAlpha)*wOut[h]
		}
		lpNormalise(wSep)
		if price(wSep, z) {
			continue
		}
		// The in-out point found no column that cuts the master's w (but
		// moved the centre towards it): query that w itself, which either
		// cuts it or shows that no column can, the master being optimal.
		if !price(wOut, z) {
			break
		}
	}
	return res, nil
}

// lpMaster is the Dantzig–Wolfe master LP in standard form, rows 0..m-1 the
// hosts and row m the convexity row:
//
//	minimise C  subject to  Σ_k λ_k·L_kh − C + s_h = 0 for every host h,
//	                        Σ_k λ_k = 1,  C, s, λ ≥ 0,
//
// solved by a revised simplex with an explicit basis inverse. Variable 0 is
// C, 1+h is host h's slack s_h and 1+m+k is column k's weight λ_k. The basis
// stays primal feasible when columns are added, so each round starts where
// the last ended.
type lpMaster struct {
	m, r  int
	cols  [][]float64
	basis []int       // the basic variable of each row
	pos   []int       // each variable's row in the basis, or -1
	inv   []float64   // r×r basis inverse, row-major
	x     []float64   // basic variables' values
	y     []float64   // simplex multipliers
	a, al []float64   // scratch: a column and its image under inv
	bm    [][]float64 // scratch for refactor
	since int         // pivots since inv was last computed afresh
}

func newLPMaster(m int) *lpMaster {
	r := m + 1
	ms := &lpMaster{m: m, r: r, basis: make([]int, r), pos: make([]int, 1+m), inv: make([]float64, r*r),
		x: make([]float64, r), y: make([]float64, r), a: make([]float64, r), al: make([]float64, r), bm: make([][]float64, r)}
	for i := range ms.bm {
		ms.bm[i] = make([]float64, 2*r)
	}
	return ms
}

func (ms *lpMaster) add(col []float64) {
	ms.cols = append(ms.cols, col)
	ms.pos = append(ms.pos, -1)
}

// column sets ms.a to variable j's column.
func (ms *lpMaster) column(j int) {
	a := ms.a
	switch {
	case j == 0:
		for h := 0; h < ms.m; h++ {
			a[h] = -1
		}
		a[ms.m] = 0
	case j <= ms.m:
		clear(a)
		a[j-1] = 1
	default:
		copy(a, ms.cols[j-1-ms.m])
		a[ms.m] = 1
	}
}

// reset starts from the basis of column k alone: λ_k = 1, C its makespan,
// the slack of every other host basic.
func (ms *lpMaster) reset(k int) {
	for j := range ms.pos {
		ms.pos[j] = -1
	}
	col := ms.cols[k]
	top := 0
	for h, v := range col {
		if v > col[top] {
			top = h
		}
	}
	ms.basis[0], ms.basis[1] = 0, 1+ms.m+k
	i := 2
	for h := 0; h < ms.m; h++ {
		if h != top {
			ms.basis[i] = 1 + h
			i++
		}
	}
	for i, j := range ms.basis {
		ms.pos[j] = i
	}
	ms.refactor()
}

// refactor recomputes the basis inverse (Gauss–Jordan with partial
// pivoting) and the basic values x = inv·e_m. It reports false if the basis
// is singular or infeasible beyond rounding.
func (ms *lpMaster) refactor() bool {
	r := ms.r
	ms.since = 0
	for i := range ms.bm {
		clear(ms.bm[i])
		ms.bm[i][r+i] = 1
	}
	for i, j := range ms.basis {
		ms.column(j)
		for row := 0; row < r; row++ {
			ms.bm[row][i] = ms.a[row]
		}
	}
	for c := 0; c < r; c++ {
		p := c
		for row := c + 1; row < r; row++ {
			if math.Abs(ms.bm[row][c]) > math.Abs(ms.bm[p][c]) {
				p = row
			}
		}
		if math.Abs(ms.bm[p][c]) < 1e-12 {
			return false
		}
		ms.bm[c], ms.bm[p] = ms.bm[p], ms.bm[c]
		pr := ms.bm[c]
		f := 1 / pr[c]
		for k := range pr {
			pr[k] *= f
		}
		for row := 0; row < r; row++ {
			if row == c || ms.bm[row][c] == 0 {
				continue
			}
			g := ms.bm[row][c]
			for k, v := range pr {
				ms.bm[row][k] -= g * v
			}
		}
	}
	for i := 0; i < r; i++ {
		copy(ms.inv[i*r:(i+1)*r], ms.bm[i][r:])
		ms.x[i] = ms.inv[i*r+ms.m]
		if ms.x[i] < -1e-9 {
			return false
		}
		ms.x[i] = math.Max(ms.x[i], 0)
	}
	return true
}

// solve optimises the master from the current basis, writes the dual
// weights −y_h of the host rows to w, and returns the objective C (scaled
// units). If the pivot budget runs out the basis is feasible but perhaps not
// optimal; the caller's bounds stay valid either way.
func (ms *lpMaster) solve(w []float64) float64 {
	r, m := ms.r, ms.m
	nvar := 1 + m + len(ms.cols)
	degenerate := 0
	for pivots := 0; pivots < 50*r+10*len(ms.cols); pivots++ {
		if ms.since >= max(64, 2*r) && !ms.refactor() {
			ms.reset(ms.cheapest())
		}
		// y = c_B·inv: only C costs anything.
		clear(ms.y)
		if i := ms.pos[0]; i >= 0 {
			copy(ms.y, ms.inv[i*r:(i+1)*r])
		}
		// Pricing: Dantzig's rule, Bland's after a run of degenerate pivots.
		bland := degenerate > 2*r
		enter, best := -1, -lpPriceTol
		for j := 0; j < nvar; j++ {
			if ms.pos[j] >= 0 {
				continue
			}
			var d float64
			switch {
			case j == 0:
				d = 1
				for h := 0; h < m; h++ {
					d += ms.y[h]
				}
			case j <= m:
				d = -ms.y[j-1]
			default:
				d = -ms.y[m]
				for h, v := range ms.cols[j-1-m] {
					d -= ms.y[h] * v
				}
			}
			if d < best {
				enter, best = j, d
				if bland {
					break
				}
			}
		}
		if enter < 0 {
			break
		}
		ms.column(enter)
		for i := 0; i < r; i++ {
			s := 0.0
			row := ms.inv[i*r : (i+1)*r]
			for k, v := range ms.a {
				s += row[k] * v
			}
			ms.al[i] = s
		}
		// Ratio test, Harris's two passes: the largest pivot among the rows
		// whose ratio is within a rounding tolerance of the least.
		const pivTol, feasTol = 1e-9, 1e-12
		bound := math.Inf(1)
		for i, a := range ms.al {
			if a > pivTol {
				bound = math.Min(bound, (ms.x[i]+feasTol)/a)
			}
		}
		leave := -1
		for i, a := range ms.al {
			if a > pivTol && ms.x[i]/a <= bound {
				if leave < 0 || (bland && ms.basis[i] < ms.basis[leave]) || (!bland && a > ms.al[leave]) {
					leave = i
				}
			}
		}
		if leave < 0 {
			break // unbounded: impossible, C bounds the objective below
		}
		theta := math.Max(ms.x[leave]/ms.al[leave], 0)
		if theta == 0 {
			degenerate++
		} else {
			degenerate = 0
		}
		for i, a := range ms.al {
			ms.x[i] = math.Max(ms.x[i]-theta*a, 0)
		}
		ms.x[leave] = theta
		pr := ms.inv[leave*r : (leave+1)*r]
		f := 1 / ms.al[leave]
		for k := range pr {
			pr[k] *= f
		}
		for i, a := range ms.al {
			if i == leave || a == 0 {
				continue
			}
			row := ms.inv[i*r : (i+1)*r]
			for k, v := range pr {
				row[k] -= a * v
			}
		}
		ms.pos[ms.basis[leave]] = -1
		ms.basis[leave] = enter
		ms.pos[enter] = leave
		ms.since++
	}
	clear(ms.y)
	if i := ms.pos[0]; i >= 0 {
		copy(ms.y, ms.inv[i*r:(i+1)*r])
	}
	for h := range w {
		w[h] = -ms.y[h]
	}
	if i := ms.pos[0]; i >= 0 {
		return ms.x[i]
	}
	return 0
}

// cheapest returns the column of least makespan.
func (ms *lpMaster) cheapest() int {
	best, bestSpan := 0, math.Inf(1)
	for k, col := range ms.cols {
		span := 0.0
		for _, v := range col {
			span = math.Max(span, v)
		}
		if span < bestSpan {
			best, bestSpan = k, span
		}
	}
	return best
}

// primal returns the makespan, in the problem's units, of the fractional
// assignment the master's weights λ make of the columns orig.
func (ms *lpMaster) primal(orig [][]float64) float64 {
	load := make([]float64, ms.m)
	sum := 0.0
	for i, j := range ms.basis {
		if k := j - 1 - ms.m; k >= 0 && ms.x[i] > 0 {
			sum += ms.x[i]
			for h, v := range orig[k] {
				load[h] += ms.x[i] * v
			}
		}
	}
	if !(sum > 0) {
		return math.Inf(1)
	}
	span := math.Inf(-1)
	for _, v := range load {
		span = math.Max(span, v/sum)
	}
	return span
}
