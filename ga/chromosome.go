package ga

import (
	"math/bits"
	"math/rand"
)

// Chromosome is the two-part solution string of SEEDS.md §1. Order is the
// ordering part, a permutation of task indexes. Map is the mapping part; it
// is indexed by task, not by position, so a task's row of host bits stays
// attached to the task through every re-ordering, which is the property the
// paper's re-ordering step before mapping crossover exists to keep.
type Chromosome struct {
	Order []int
	Map   []Bits
}

// Clone returns a deep copy.
func (c *Chromosome) Clone() *Chromosome {
	d := &Chromosome{Order: append([]int(nil), c.Order...), Map: make([]Bits, len(c.Map))}
	for i, b := range c.Map {
		d.Map[i] = b.Clone()
	}
	return d
}

// NewRandom returns a random legal chromosome for p: a random order and, for
// each task, a host count drawn uniformly from its range on random allowed
// hosts.
func NewRandom(p *Problem, rng *rand.Rand) *Chromosome {
	n := len(p.Tasks)
	c := &Chromosome{Order: rng.Perm(n), Map: make([]Bits, n)}
	for j, t := range p.Tasks {
		c.Map[j] = NewBits(p.Hosts)
		freshRow(p, t, c.Map[j], rng)
	}
	return c
}

// freshRow fills b with a random legal row for t: a host count uniform in
// t's range on random allowed hosts.
func freshRow(p *Problem, t *Task, b Bits, rng *rand.Rand) {
	b.Reset()
	hi := p.MaxHosts(t)
	k := t.Min
	if hi > t.Min {
		k += rng.Intn(hi - t.Min + 1)
	}
	fillRandom(p, t, b, k, rng)
}

// Repair makes c legal for p: every host bit outside a task's allowed set
// (or beyond the last host) is cleared, and hosts are dropped or added at
// random until the task's host count lies in [Min, Max]. A task with no host
// gets one at random, as the paper's decoder does. Order is not touched.
func Repair(p *Problem, c *Chromosome, rng *rand.Rand) {
	for j, t := range p.Tasks {
		repairRow(p, t, c.Map[j], rng)
	}
}

// repairRow makes one mapping row legal for task t (see Repair).
func repairRow(p *Problem, t *Task, b Bits, rng *rand.Rand) {
	if t.Allowed != nil {
		for i := range b {
			b[i] &= t.Allowed[i]
		}
	}
	// Bits past the last host would make the decoder index a host that
	// does not exist; only a foreign or corrupted row can carry them.
	if r := p.Hosts & 63; r != 0 && len(b) > 0 {
		b[len(b)-1] &= 1<<uint(r) - 1
	}
	n := b.Count()
	hi := p.MaxHosts(t)
	for n > hi {
		b.Clear(b.Nth(rng.Intn(n)))
		n--
	}
	if n < t.Min {
		fillRandom(p, t, b, t.Min, rng)
	}
}

// fillRandom adds random allowed hosts to b until it holds k hosts (or no
// allowed host is left). It draws from the free allowed hosts word by word
// instead of listing them, because the GA repairs rows on its hot path and
// must not allocate there.
func fillRandom(p *Problem, t *Task, b Bits, k int, rng *rand.Rand) {
	for n := b.Count(); n < k; n++ {
		free := freeCount(p, t, b)
		if free == 0 {
			return
		}
		b.Set(nthFree(p, t, b, rng.Intn(free)))
	}
}

// freeCount is the number of hosts task t may use that b does not hold.
func freeCount(p *Problem, t *Task, b Bits) int {
	n := 0
	for i := range b {
		n += bits.OnesCount64(freeWord(p, t, b, i))
	}
	return n
}

// freeWord is word i of the hosts task t may use that b does not hold yet.
func freeWord(p *Problem, t *Task, b Bits, i int) uint64 {
	w := ^b[i]
	if t.Allowed != nil {
		w &= t.Allowed[i]
	}
	switch hi := p.Hosts - i*64; {
	case hi <= 0:
		return 0
	case hi < 64:
		w &= 1<<uint(hi) - 1
	}
	return w
}

// Legal reports whether c is a legal solution of p: Order a permutation of
// the tasks and each mapping row inside the task's allowed set and range.
func Legal(p *Problem, c *Chromosome) bool {
	n := len(p.Tasks)
	if len(c.Order) != n || len(c.Map) != n {
		return false
	}
	seen := make([]bool, n)
	for _, j := range c.Order {
		if j < 0 || j >= n || seen[j] {
			return false
		}
		seen[j] = true
	}
	for j, t := range p.Tasks {
		b := c.Map[j]
		if len(b) != p.Words() {
			return false
		}
		if t.Allowed != nil {
			for i := range b {
				if b[i]&^t.Allowed[i] != 0 {
					return false
				}
			}
		}
		if r := p.Hosts & 63; r != 0 && b[len(b)-1]>>uint(r) != 0 {
			return false
		}
		if k := b.Count(); k < t.Min || k > t.Max {
			return false
		}
	}
	return true
}
