package ga

import (
	"cmp"
	"math"
	"math/bits"
	"math/rand"
	"slices"
)

// Local search (msched's addition, issue 14): a descent on the mapping part
// of a chromosome under the load model, used by the memetic GA on its
// offspring and by the iterated local search (ILS) baseline.
//
// The load model: a task j on host set S_j runs t_j = Time(S_j), and host
// h's load is its base plus the run times of the tasks whose sets hold it.
// When every task runs on one host the decoded makespan is exactly the
// largest load, whatever the order (Decode runs each host's tasks back to
// back from its base), so the model is the makespan and a move's cost is
// known from two loads; with multi-host tasks the largest load is a lower
// bound on the makespan (a task also waits for the last of its hosts), and
// the caller decodes to learn the true cost.
//
// The moves aim at the critical host c, the one with the largest load L_c:
//   - move: a task on c leaves it for another allowed host h (for a
//     multi-host task, h takes c's place in its set, and the task's new run
//     time changes the load of its other hosts too);
//   - swap: a one-host task on c and a one-host task on h trade hosts.
//
// A move is taken only if every load it changes ends below L_c, so each
// step lowers the vector of loads sorted in decreasing order,
// lexicographically: the makespan never rises, and when several hosts share
// it, their number falls. The search is steepest descent: of all moves of
// the critical host it takes the one leaving the smallest largest changed
// load, and tries swaps (when asked, see localSearch) only when no move
// helps. It ends in a local optimum: no move (or swap) of the critical host
// helps. A step costs O(|tasks on c|·m) for moves and up to
// O(|tasks on c|·n) for swaps, each candidate priced from loads in about a
// nanosecond (BenchmarkLocalMove, BenchmarkLocalSwap).

// localScratch is the load model of one chromosome, kept between steps.
type localScratch struct {
	base []float64 // per host
	load []float64 // per host
	run  []float64 // per task: its run time on its current set
	on   [][]int32 // per host: the tasks whose sets hold it
	one  []int32   // per task: its host if it runs on one, else -1
	row  Bits      // a candidate set
	// sorted: every list of on is in longerFirst order (see sort).
	sorted bool

	diff         []int32 // crossGreedy: the tasks the parents place apart
	hostA, hostB []int32 // crossGreedy: each parent's host per task
}

func (l *localScratch) resize(n, m, w int) {
	l.load = make([]float64, m)
	l.base = make([]float64, m)
	l.run = make([]float64, n)
	l.on = make([][]int32, m)
	l.one = make([]int32, n)
	l.row = make(Bits, w)
}

// localEps is the relative margin by which a step must lower the critical
// load, so that float rounding cannot make the descent cycle.
const localEps = 1e-12

// below is the value every load a step changes must end under, for a
// critical load lc: lc less the margin, or any finite value when lc is +Inf
// (a task placed where it cannot run).
func below(lc float64) float64 {
	if math.IsInf(lc, 1) {
		return lc
	}
	return lc - localEps*math.Abs(lc)
}

// build computes the load model of c.
func (l *localScratch) build(p *Problem, c *Chromosome, x *alignScratch) {
	for h := range l.load {
		l.base[h] = p.base(h)
		l.load[h] = l.base[h]
		l.on[h] = l.on[h][:0]
	}
	for j, b := range c.Map {
		var r float64
		if b.Count() == 1 {
			h := firstHost(b)
			l.one[j] = int32(h)
			r = x.timeOn(p.Tasks[j], j, h)
		} else {
			l.one[j] = -1
			r = p.Tasks[j].Time(b)
		}
		l.run[j] = r
		for i, w := range b {
			for ; w != 0; w &= w - 1 {
				h := i*64 + bits.TrailingZeros64(w)
				l.load[h] += r
				l.on[h] = append(l.on[h], int32(j))
			}
		}
	}
	l.sorted = false
}

// sort puts the lists on in longerFirst order, which swaps need and moves
// do not; moveTask keeps them so from then on.
func (l *localScratch) sort() {
	if l.sorted {
		return
	}
	for _, on := range l.on {
		slices.SortFunc(on, l.longerFirst)
	}
	l.sorted = true
}

// longerFirst orders tasks by decreasing run time, then index: the order of
// the lists on, which lets a swap scan stop at the first task too short to
// make room.
func (l *localScratch) longerFirst(a, b int32) int {
	if c := cmp.Compare(l.run[b], l.run[a]); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

func firstHost(b Bits) int {
	for i, w := range b {
		if w != 0 {
			return i*64 + bits.TrailingZeros64(w)
		}
	}
	return -1
}

// critical returns the host of largest load (the lowest index on a tie).
func (l *localScratch) critical() int {
	c := 0
	for h, v := range l.load {
		if v > l.load[c] {
			c = h
		}
	}
	return c
}

// localSearch improves c's mapping part in place by steepest descent on the
// critical host (see the comment above) and returns the number of steps
// taken. c must be legal. It descends with moves alone first; swaps, whose
// scan prices up to |tasks on c|·n candidates against moves' |tasks on c|·m,
// are tried only when that local optimum's largest load is below polish
// (+Inf: always; -Inf: never). The GA and the ILS pass -Inf: at an equal
// time on ETC instances, descents by moves alone ended lower than descents
// that also swapped, on every string or only on strings about to become the
// best (docs/memetic.md). Ties between equally good steps are broken at
// random, so that repeated searches explore different local optima.
func localSearch(p *Problem, c *Chromosome, l *localScratch, x *alignScratch, polish float64, rng *rand.Rand) int {
	l.build(p, c, x)
	steps := 0
	for {
		crit := l.critical()
		if l.bestMove(p, c, x, crit, rng) {
			steps++
			continue
		}
		if !(l.load[crit] < polish) || !l.bestSwap(p, c, x, crit, rng) {
			return steps
		}
		steps++
	}
}

// bestMove takes the best move of a task off host crit, if one helps.
func (l *localScratch) bestMove(p *Problem, c *Chromosome, x *alignScratch, crit int, rng *rand.Rand) bool {
	lc := l.load[crit]
	limit := below(lc)
	best := pick{val: math.Inf(1)}
	bestJ, bestH := -1, -1
	var bestRun float64
	for _, j32 := range l.on[crit] {
		j := int(j32)
		t := p.Tasks[j]
		rj := l.run[j]
		if l.one[j] >= 0 {
			// One-host task: two loads change; the larger is at least
			// crit's new load.
			newC := lc - rj
			if newC >= limit || newC > best.val {
				continue
			}
			times := x.timesOf(t, j)
			for h, r := range times {
				if h == crit || t.Allowed != nil && !t.Allowed.Has(h) {
					continue
				}
				v := l.load[h] + r
				if v < newC {
					v = newC
				}
				if v < limit && best.offer(v, rng) {
					bestJ, bestH, bestRun = j, h, r
				}
			}
			continue
		}
		// Multi-host task: h takes crit's place in its set.
		b := c.Map[j]
		for h := range l.load {
			if h == crit || b.Has(h) || t.Allowed != nil && !t.Allowed.Has(h) {
				continue
			}
			copy(l.row, b)
			l.row.Clear(crit)
			l.row.Set(h)
			r := t.Time(l.row)
			v := math.Max(lc-rj, l.load[h]+r)
			for i, w := range b {
				for ; w != 0; w &= w - 1 {
					if o := i*64 + bits.TrailingZeros64(w); o != crit {
						v = math.Max(v, l.load[o]+r-rj)
					}
				}
			}
			if v < limit && best.offer(v, rng) {
				bestJ, bestH, bestRun = j, h, r
			}
		}
	}
	if bestJ < 0 {
		return false
	}
	l.moveTask(c, bestJ, crit, bestH, bestRun)
	return true
}

// pick keeps the least value offered, choosing among equal ones uniformly
// at random (reservoir sampling), so that repeated descents from one string
// can reach different local optima.
type pick struct {
	val  float64
	ties int
}

// offer reports whether a candidate of value v replaces the one kept.
func (p *pick) offer(v float64, rng *rand.Rand) bool {
	switch {
	case v > p.val:
		return false
	case v < p.val:
		p.val, p.ties = v, 1
		return true
	}
	p.ties++
	return rng.Intn(p.ties) == 0
}

// moveTask gives task j host h in place of host from, with run time r on
// its new set.
func (l *localScratch) moveTask(c *Chromosome, j, from, h int, r float64) {
	b := c.Map[j]
	rj := l.run[j]
	for i, w := range b {
		for ; w != 0; w &= w - 1 {
			if o := i*64 + bits.TrailingZeros64(w); o != from {
				l.load[o] += r - rj
			}
		}
	}
	l.load[from] -= rj
	l.load[h] += r
	l.on[from] = removeTask(l.on[from], j)
	b.Clear(from)
	b.Set(h)
	l.run[j] = r
	if l.one[j] >= 0 {
		l.one[j] = int32(h)
	}
	if !l.sorted {
		l.on[h] = append(l.on[h], int32(j))
	} else {
		l.on[h] = l.insert(l.on[h], j)
	}
	if math.IsInf(rj, 0) {
		// Inf − Inf is NaN: count the hosts the task left or kept anew.
		l.recount(from)
		for i, w := range b {
			for ; w != 0; w &= w - 1 {
				l.recount(i*64 + bits.TrailingZeros64(w))
			}
		}
	}
	if !l.sorted {
		return
	}
	if r != rj && l.one[j] < 0 {
		// The task's other hosts keep it, at its new run time.
		for i, w := range b {
			for ; w != 0; w &= w - 1 {
				if o := i*64 + bits.TrailingZeros64(w); o != h {
					l.on[o] = l.insert(removeTask(l.on[o], j), j)
				}
			}
		}
	}
}

// recount computes host h's load from its base and its tasks.
func (l *localScratch) recount(h int) {
	l.load[h] = l.base[h]
	for _, j := range l.on[h] {
		l.load[h] += l.run[j]
	}
}

// removeTask takes task j out of list s, keeping the order of the rest.
func removeTask(s []int32, j int) []int32 {
	i := slices.Index(s, int32(j))
	return slices.Delete(s, i, i+1)
}

// insert puts task j into list s at its place by longerFirst.
func (l *localScratch) insert(s []int32, j int) []int32 {
	i, _ := slices.BinarySearchFunc(s, int32(j), l.longerFirst)
	return slices.Insert(s, i, int32(j))
}

// bestSwap takes the best swap of a one-host task on crit with a one-host
// task on another host, if one helps.
func (l *localScratch) bestSwap(p *Problem, c *Chromosome, x *alignScratch, crit int, rng *rand.Rand) bool {
	l.sort()
	lc := l.load[crit]
	limit := below(lc)
	best := pick{val: math.Inf(1)}
	bestJ, bestK := -1, -1
	for _, j32 := range l.on[crit] {
		j := int(j32)
		if l.one[j] < 0 {
			continue
		}
		tj := p.Tasks[j]
		baseC := lc - l.run[j]
		for h, jh := range x.timesOf(tj, j) {
			if h == crit || tj.Allowed != nil && !tj.Allowed.Has(h) {
				continue
			}
			baseH := l.load[h] + jh
			need := baseH - limit // task k must be longer than this to make room
			for _, k32 := range l.on[h] {
				k := int(k32)
				if l.run[k] <= need {
					break // the rest are shorter still
				}
				if l.one[k] < 0 {
					continue
				}
				tk := p.Tasks[k]
				if tk.Allowed != nil && !tk.Allowed.Has(crit) {
					continue
				}
				v := baseC + x.timesOf(tk, k)[crit]
				if w := baseH - l.run[k]; w > v {
					v = w
				}
				if v < limit && best.offer(v, rng) {
					bestJ, bestK = j, k
				}
			}
		}
	}
	if bestJ < 0 {
		return false
	}
	h := int(l.one[bestK])
	l.moveTask(c, bestJ, crit, h, x.timeOn(p.Tasks[bestJ], bestJ, h))
	l.moveTask(c, bestK, h, crit, x.timeOn(p.Tasks[bestK], bestK, crit))
	return true
}

// crossGreedy is the memetic GA's crossover on problems whose tasks each
// run on one host: a and b are replaced by two children that keep every
// task on which the parents agree where both have it, and place the tasks
// on which they differ, in a random order for each child, on whichever of
// the parents' two hosts ends it first given the loads placed so far (a
// Min-min-like completion, restricted to the parents' choices). The order
// parts are left as they are: a one-host task's order does not change the
// makespan.
func crossGreedy(p *Problem, a, b *Chromosome, l *localScratch, x *alignScratch, rng *rand.Rand) {
	n := len(p.Tasks)
	if cap(l.diff) < n {
		l.diff = make([]int32, 0, n)
		l.hostA = make([]int32, n)
		l.hostB = make([]int32, n)
	}
	diff := l.diff[:0]
	for j := range n {
		ha, hb := firstHost(a.Map[j]), firstHost(b.Map[j])
		l.hostA[j], l.hostB[j] = int32(ha), int32(hb)
		if ha != hb {
			diff = append(diff, int32(j))
		}
	}
	l.diff = diff
	if len(diff) == 0 {
		return
	}
	for _, c := range []*Chromosome{a, b} {
		for h := range l.load {
			l.load[h] = p.base(h)
		}
		for j := range n {
			if l.hostA[j] == l.hostB[j] {
				l.load[l.hostA[j]] += x.timeOn(p.Tasks[j], j, int(l.hostA[j]))
			}
		}
		rng.Shuffle(len(diff), func(i, k int) { diff[i], diff[k] = diff[k], diff[i] })
		for _, j32 := range diff {
			j := int(j32)
			ha, hb := int(l.hostA[j]), int(l.hostB[j])
			ea, eb := l.load[ha]+x.timeOn(p.Tasks[j], j, ha), l.load[hb]+x.timeOn(p.Tasks[j], j, hb)
			h, e := ha, ea
			if eb < ea || eb == ea && rng.Intn(2) == 0 {
				h, e = hb, eb
			}
			l.load[h] = e
			c.Map[j].Reset()
			c.Map[j].Set(h)
		}
	}
}
