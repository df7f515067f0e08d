package ga

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
)

// alignScratch is the space align works in; it is reused so that the GA's
// alignment step does not allocate.
type alignScratch struct {
	free   []float64 // per host: when it is free in the schedule built so far
	byFree []int     // the hosts by free time, then index
	merged []int     // scratch for re-sorting byFree
	chosen []int     // the hosts given to a task
	row    Bits      // the task's row before alignment
	one    Bits      // a one-host set
	// oneTime[j][h] is task j's run time on host h alone, NaN until asked;
	// a task's row is made when it is first aligned on one host, so that
	// only one-host tasks pay for it.
	oneTime [][]float64
	full    []bool // per task: its oneTime row is complete (see timesOf)
}

func (x *alignScratch) resize(n, m, w int) {
	x.oneTime = make([][]float64, n)
	x.full = make([]bool, n)
	x.free = make([]float64, m)
	x.byFree = make([]int, m)
	x.merged = make([]int, m)
	x.chosen = make([]int, 0, m)
	x.row = make(Bits, w)
	x.one = make(Bits, w)
}

// align is the GA's Lamarckian step (msched's addition, see GA): it rewrites
// the mapping part of the legal chromosome c and keeps its ordering part and
// every task's host count. It list-schedules the tasks in string order
// exactly as Decode does, and gives each task, of the hosts it may use, the
// count it has that are free first, so that it starts as early as that count
// allows in the schedule built so far (ties: the hosts the task already had,
// then the lower index, so that tasks stack on the same host groups). A
// one-host task gets the host on which it ends first, which on heterogeneous
// hosts is not always the one free first. The result is legal.
//
// It is a local step, not an optimum: giving an earlier task the hosts that
// are free first can delay a later one, so the aligned chromosome can cost
// more than c. Its pass over the schedule is a decode, and the GA counts it
// as an evaluation. It takes O(n·m) time, as Decode does.
func align(p *Problem, c *Chromosome, x *alignScratch) {
	p.Lead(c)
	m := p.Hosts
	free, order := x.free[:m], x.byFree[:m]
	for h := range free {
		free[h] = p.base(h)
		order[h] = h
	}
	if p.Base != nil {
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(free[a], free[b]) })
	}
	for _, j := range c.Order {
		t, b := p.Tasks[j], c.Map[j]
		k := b.Count()
		if k == 0 {
			continue // not legal; Decode places it, align leaves it be
		}
		copy(x.row, b)
		b.Reset()
		if k == 1 {
			// Hosts in order of free time: none free after the best end
			// so far can end first, so the scan stops there.
			best, bestEnd := -1, math.Inf(1)
			for _, h := range order {
				if free[h] > bestEnd {
					break
				}
				if t.Allowed != nil && !t.Allowed.Has(h) {
					continue
				}
				end := free[h] + x.timeOn(t, j, h)
				if best < 0 || end < bestEnd || end == bestEnd && x.row.Has(h) && !x.row.Has(best) ||
					end == bestEnd && x.row.Has(h) == x.row.Has(best) && h < best {
					best, bestEnd = h, end
				}
			}
			b.Set(best)
		} else {
			// The k-th allowed host by free time fixes when the task can
			// start: take every allowed host free before that, then those
			// free just then, the task's own first.
			at, seen := 0.0, 0
			for _, h := range order {
				if t.Allowed == nil || t.Allowed.Has(h) {
					if seen++; seen == k {
						at = free[h]
						break
					}
				}
			}
			n := 0
			for pass := 0; pass < 2 && n < k; pass++ {
				for _, h := range order {
					f := free[h]
					if f > at || n == k {
						break
					}
					if t.Allowed != nil && !t.Allowed.Has(h) || b.Has(h) {
						continue
					}
					if f < at || pass == 1 || x.row.Has(h) {
						b.Set(h)
						n++
					}
				}
			}
		}
		start := 0.0
		for i, w := range b {
			for ; w != 0; w &= w - 1 {
				if f := free[i*64+bits.TrailingZeros64(w)]; f > start {
					start = f
				}
			}
		}
		end := start + t.Time(b)
		// The task's hosts are now all free at end; merge them, in index
		// order, back into the others, which stay sorted by (free, index).
		x.chosen = b.Hosts(x.chosen[:0])
		out, q := x.merged[:0], 0
		for _, h := range order {
			if b.Has(h) {
				continue
			}
			for q < len(x.chosen) && (end < free[h] || end == free[h] && x.chosen[q] < h) {
				out = append(out, x.chosen[q])
				q++
			}
			out = append(out, h)
		}
		out = append(out, x.chosen[q:]...)
		for _, h := range x.chosen {
			free[h] = end
		}
		x.merged, x.byFree, order = order, out, out
	}
}

// timeOn is task t's (index j) run time on host h alone.
func (x *alignScratch) timeOn(t *Task, j, h int) float64 {
	row := x.oneTime[j]
	if row == nil {
		row = make([]float64, len(x.free))
		for i := range row {
			row[i] = math.NaN()
		}
		x.oneTime[j] = row
	}
	if v := row[h]; v == v {
		return v
	}
	x.one.Reset()
	x.one.Set(h)
	row[h] = t.Time(x.one)
	return row[h]
}

// timesOf is task t's (index j) run times on each host alone, all asked at
// once: the local search scans whole rows. A disallowed host's entry is
// whatever Runtime says; callers check Allowed.
func (x *alignScratch) timesOf(t *Task, j int) []float64 {
	row := x.oneTime[j]
	if row == nil || !x.full[j] {
		for h := range x.free {
			x.timeOn(t, j, h)
		}
		x.full[j] = true
		row = x.oneTime[j]
	}
	return row
}

// Align returns a copy of c whose mapping part gives every task, in c's
// order and with c's host counts, the hosts that are free first in the
// schedule built so far (see align). A scheduler dispatching c's schedule
// aligns it first, so that no task waits for a host while another it may
// use is free.
func Align(p *Problem, c *Chromosome) *Chromosome {
	d := c.Clone()
	var x alignScratch
	x.resize(len(p.Tasks), p.Hosts, p.Words())
	align(p, d, &x)
	return d
}
