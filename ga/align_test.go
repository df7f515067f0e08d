package ga

import (
	"math"
	"math/rand"
	"slices"
	"testing"
)

// msAlignRef is align written the obvious way: every task sorts the hosts
// it may use by (free time, not in its row, index), or for one host by (end,
// not in its row, index), and takes the first ones.
func msAlignRef(p *Problem, c *Chromosome) {
	free := make([]float64, p.Hosts)
	for h := range free {
		free[h] = p.base(h)
	}
	for _, j := range c.Order {
		t, b := p.Tasks[j], c.Map[j]
		k := b.Count()
		if k == 0 {
			continue
		}
		row := b.Clone()
		key := func(h int) float64 {
			if k == 1 {
				return free[h] + t.Time(singleHost(p.Hosts, h))
			}
			return free[h]
		}
		hosts := allowedHosts(p, t)
		slices.SortStableFunc(hosts, func(a, d int) int {
			switch ka, kd := key(a), key(d); {
			case ka != kd:
				return map[bool]int{true: -1, false: 1}[ka < kd]
			case row.Has(a) != row.Has(d):
				return map[bool]int{true: -1, false: 1}[row.Has(a)]
			}
			return a - d
		})
		b.Reset()
		start := 0.0
		for _, h := range hosts[:k] {
			b.Set(h)
			start = math.Max(start, free[h])
		}
		end := start + t.Time(b)
		for _, h := range hosts[:k] {
			free[h] = end
		}
	}
}

func TestAlign_MatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for trial := 0; trial < 400; trial++ {
		m := 1 + rng.Intn(80)
		p := msConstrainedProblem(1+rng.Intn(15), m, rng)
		if rng.Intn(2) == 0 {
			p.Base = make([]float64, m)
			for h := range p.Base {
				p.Base[h] = float64(rng.Intn(4)) * 50 // ties on purpose
			}
		}
		if rng.Intn(3) == 0 { // heterogeneous one-host tasks
			for _, tk := range p.Tasks {
				tk.Min, tk.Max = 1, 1
				speed := rng.Float64() + 0.5
				tk.Runtime = func(h []int) float64 { return speed * float64(1+h[0]%5) }
			}
		}
		c := NewRandom(p, rng)
		want, got := c.Clone(), c.Clone()
		msAlignRef(p, want)
		var x alignScratch
		x.resize(len(p.Tasks), p.Hosts, p.Words())
		align(p, got, &x)
		msMustLegal(t, p, got, "aligned")
		if !slices.Equal(got.Order, c.Order) {
			t.Fatalf("trial %d: order changed", trial)
		}
		for j := range got.Map {
			if got.Map[j].Count() != c.Map[j].Count() {
				t.Fatalf("trial %d: task %d has %d hosts, had %d", trial, j, got.Map[j].Count(), c.Map[j].Count())
			}
			if !got.Map[j].Equal(want.Map[j]) {
				t.Fatalf("trial %d: task %d row %v, reference %v", trial, j, got.Map[j].Hosts(nil), want.Map[j].Hosts(nil))
			}
		}
	}
}

func TestAlign_HandChecked(t *testing.T) {
	// Four hosts; base 0, 0, 3, 1. As given, A{2,3} runs 3..7, B{0,2}
	// 7..8 and C{1} 0..2: makespan 8. Aligned, A (2 hosts, 4 s) takes the
	// hosts free at 0, {0,1}, and runs 0..4. B (2 hosts, 1 s) can start when
	// its 2nd host is free, at 3 (hosts 3 at 1, then 2 at 3); it takes
	// {2,3} and runs 3..4. C (1 host, 2 s) then ends at 6 on any host and
	// keeps its own, 1. Makespan 6.
	p := &Problem{Hosts: 4, Base: []float64{0, 0, 3, 1}, Tasks: []*Task{
		msFixedTask("A", 4, 4, nil), msFixedTask("B", 1, 4, nil), msFixedTask("C", 2, 4, nil),
	}}
	c := &Chromosome{Order: []int{0, 1, 2}, Map: []Bits{msBits(4, 2, 3), msBits(4, 0, 2), msBits(4, 1)}}
	var x alignScratch
	x.resize(3, 4, 1)
	align(p, c, &x)
	for j, want := range []Bits{msBits(4, 0, 1), msBits(4, 2, 3), msBits(4, 1)} {
		if !c.Map[j].Equal(want) {
			t.Errorf("task %s: hosts %v, want %v", p.Tasks[j].ID, c.Map[j].Hosts(nil), want.Hosts(nil))
		}
	}
	var s Schedule
	if got := Evaluate(p, c, MS, &s); got != 6 {
		t.Errorf("aligned makespan %v, want 6", got)
	}
}

func TestAlign_DoesNotAllocate(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	p := msEq2Problem(20, 16, rng)
	c := NewRandom(p, rng)
	var x alignScratch
	x.resize(len(p.Tasks), p.Hosts, p.Words())
	align(p, c.Clone(), &x) // warm the run-time memo
	if n := testing.AllocsPerRun(100, func() { align(p, c, &x) }); n != 0 {
		t.Fatalf("align allocates %v times", n)
	}
}
