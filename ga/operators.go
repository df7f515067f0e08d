package ga

import (
	"math/bits"
	"math/rand"
)

// crossScratch is the space crossover builds its two children in before
// writing them over the parents; it is reused so that breeding does not
// allocate.
type crossScratch struct {
	orderA, orderB []int
	seen           []bool
	rowsA, rowsB   []uint64 // n rows of w words, indexed by task
	w              int
}

func (x *crossScratch) resize(n, w int) {
	x.orderA, x.orderB = make([]int, n), make([]int, n)
	x.seen = make([]bool, n)
	x.rowsA, x.rowsB = make([]uint64, n*w), make([]uint64, n*w)
	x.w = w
}

// crossSplice is the paper's crossover: a and b are replaced by their two
// children.
//
// Ordering part: both strings are spliced at one random point c in 1..n-1;
// child A is a's first c tasks followed by the remaining tasks in b's order,
// child B is b's first c tasks followed by the rest in a's order, so both are
// permutations without a repair step.
//
// Mapping part: each parent's rows are laid out in the child's new task order
// (the paper's re-ordering, which makes a task keep its own row) and the two
// n×m bit strings are cut at one random bit: child A takes the bits before the
// cut from a and the rest from b, child B the bits before the cut from b and
// the rest from a, each in its own order. Only the row holding the cut mixes
// two parents; it is repaired. Every other row is a parent's row moved whole,
// so it stays legal if the parents were (the GA keeps every individual
// legal).
func crossSplice(p *Problem, a, b *Chromosome, x *crossScratch, rng *rand.Rand) {
	n, m := len(a.Order), p.Hosts
	if n == 0 {
		return
	}
	c := n
	if n > 1 {
		c = 1 + rng.Intn(n-1)
	}
	splice(a.Order, b.Order, c, x.orderA, x.seen)
	splice(b.Order, a.Order, c, x.orderB, x.seen)

	cut := 0
	if n*m > 1 {
		cut = 1 + rng.Intn(n*m-1)
	}
	rowCut, hostCut := cut/m, cut%m
	crossRows(a, b, x.orderA, x.rowsA, x.w, rowCut, hostCut)
	crossRows(b, a, x.orderB, x.rowsB, x.w, rowCut, hostCut)

	copy(a.Order, x.orderA)
	copy(b.Order, x.orderB)
	w := x.w
	for j := 0; j < n; j++ {
		copy(a.Map[j], x.rowsA[j*w:(j+1)*w])
		copy(b.Map[j], x.rowsB[j*w:(j+1)*w])
	}
	if rowCut < n {
		j := x.orderA[rowCut]
		repairRow(p, p.Tasks[j], a.Map[j], rng)
		j = x.orderB[rowCut]
		repairRow(p, p.Tasks[j], b.Map[j], rng)
	}
}

// splice writes head[:c] followed by the tasks of tail not in that head, in
// tail's order, to dst.
func splice(head, tail []int, c int, dst []int, seen []bool) {
	for i := range seen {
		seen[i] = false
	}
	k := copy(dst, head[:c])
	for _, j := range head[:c] {
		seen[j] = true
	}
	for _, j := range tail {
		if !seen[j] {
			dst[k] = j
			k++
		}
	}
}

// crossRows writes the mapping of one child, whose order is order, into rows:
// positions before rowCut take first's row of their task, positions after it
// take second's, and the row at rowCut takes hosts below hostCut from first
// and the rest from second.
func crossRows(first, second *Chromosome, order []int, rows []uint64, w, rowCut, hostCut int) {
	for k, j := range order {
		dst := rows[j*w : (j+1)*w]
		switch {
		case k < rowCut:
			copy(dst, first.Map[j])
		case k > rowCut:
			copy(dst, second.Map[j])
		default:
			for i := range dst {
				low := hostsBelow(hostCut - i*64)
				dst[i] = first.Map[j][i]&low | second.Map[j][i]&^low
			}
		}
	}
}

// hostsBelow has the lowest k bits set (none for k <= 0, all for k >= 64).
func hostsBelow(k int) uint64 {
	switch {
	case k <= 0:
		return 0
	case k >= 64:
		return ^uint64(0)
	}
	return 1<<uint(k) - 1
}

// mutateSwapFlip is the paper's mutation: two positions of the ordering part are
// swapped and one bit of the mapping part is flipped, then that row is
// repaired. The flipped bit is drawn among the hosts the task may use: a
// disallowed bit would only be cleared again by repair, wasting the mutation.
func mutateSwapFlip(p *Problem, c *Chromosome, rng *rand.Rand) {
	n := len(c.Order)
	if n == 0 {
		return
	}
	if n > 1 {
		i := rng.Intn(n)
		k := rng.Intn(n - 1)
		if k >= i {
			k++
		}
		c.Order[i], c.Order[k] = c.Order[k], c.Order[i]
	}
	j := rng.Intn(n)
	t := p.Tasks[j]
	h := -1
	if t.Allowed == nil {
		h = rng.Intn(p.Hosts)
	} else if k := t.Allowed.Count(); k > 0 {
		h = t.Allowed.Nth(rng.Intn(k))
	}
	if h >= 0 {
		c.Map[j].Flip(h)
	}
	repairRow(p, t, c.Map[j], rng)
}

// The GA's mutation (msched's addition, see GA; the paper's swap and flip
// is mutateSwapFlip, which Genome.Mutate still applies for eaopt's models).
// The shares were set with the rates on the grid described at
// DefaultPopulation; their neighbours (more order moves, fewer further
// moves) were within noise.
const (
	// mutOrder is the share of moves made on the ordering part.
	mutOrder = 0.3
	// mutInsert is the share of order moves that are insertions (a task
	// cut out and put back elsewhere, the transport of SA's path moves)
	// rather than the paper's swap.
	mutInsert = 0.5
	// mutFlip is the share of mapping moves that flip one host bit within
	// [Min, MaxHosts] (the paper's flip, as ±1 host), the rest move one of
	// the task's hosts to a host it does not use (same count).
	mutFlip = 0.5
	// mutMore is the probability of each further move after the first, so
	// that the number of moves is geometric with mean 1/(1-mutMore).
	mutMore = 0.5
)

// mutateMoves is the GA's mutation: one or more small moves (see mutOrder
// and the rest), each leaving the chromosome legal.
func mutateMoves(p *Problem, c *Chromosome, rng *rand.Rand) {
	for {
		mutateMove(p, c, rng)
		if rng.Float64() >= mutMore {
			return
		}
	}
}

// mutateMove makes one small move: a swap or insertion on the ordering part,
// or one task's row changed by one host.
func mutateMove(p *Problem, c *Chromosome, rng *rand.Rand) {
	n := len(c.Order)
	if n == 0 {
		return
	}
	if n > 1 && rng.Float64() < mutOrder {
		i := rng.Intn(n)
		k := rng.Intn(n - 1)
		if k >= i {
			k++
		}
		if rng.Float64() < mutInsert {
			insertAt(c.Order, i, k)
		} else {
			c.Order[i], c.Order[k] = c.Order[k], c.Order[i]
		}
		return
	}
	j := rng.Intn(n)
	hostMove(p, p.Tasks[j], c.Map[j], rng)
}

// insertAt moves the element at position i of s to position k, shifting
// those between.
func insertAt(s []int, i, k int) {
	v := s[i]
	if i < k {
		copy(s[i:k], s[i+1:k+1])
	} else {
		copy(s[k+1:i+1], s[k:i])
	}
	s[k] = v
}

// hostMove changes legal row b of task t by one host: with probability
// mutFlip (when the range allows) one allowed host bit is flipped without
// leaving [Min, MaxHosts], else one of its hosts is moved to an allowed host
// it does not hold (or, if it holds them all, dropped when it may be).
func hostMove(p *Problem, t *Task, b Bits, rng *rand.Rand) {
	c, hi := b.Count(), p.MaxHosts(t)
	if hi > t.Min && rng.Float64() < mutFlip {
		h := rng.Intn(p.Hosts)
		if t.Allowed != nil {
			h = t.Allowed.Nth(rng.Intn(t.Allowed.Count()))
		}
		if flipWithin(b, h, c, t.Min, hi) {
			return
		}
	}
	if c == 0 {
		return
	}
	drop := b.Nth(rng.Intn(c))
	free := freeCount(p, t, b)
	if free == 0 {
		if c > t.Min {
			b.Clear(drop)
		}
		return
	}
	b.Set(nthFree(p, t, b, rng.Intn(free)))
	b.Clear(drop)
}

// flipWithin flips host h of row b, which holds c hosts, if the count
// stays within [lo, hi], and reports whether it did.
func flipWithin(b Bits, h, c, lo, hi int) bool {
	switch {
	case b.Has(h) && c > lo:
		b.Clear(h)
	case !b.Has(h) && c < hi:
		b.Set(h)
	default:
		return false
	}
	return true
}

// nthFree is the r-th (0-based) host task t may use that b does not hold.
func nthFree(p *Problem, t *Task, b Bits, r int) int {
	for i := range b {
		w := freeWord(p, t, b, i)
		if c := bits.OnesCount64(w); r >= c {
			r -= c
			continue
		}
		for ; r > 0; r-- {
			w &= w - 1
		}
		return i*64 + bits.TrailingZeros64(w)
	}
	return -1
}
