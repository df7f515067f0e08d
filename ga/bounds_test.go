package ga

import (
	"context"
	"math/rand"
	"testing"
)

func TestLowerBound_MoldableWithBase(t *testing.T) {
	p := &Problem{Hosts: 2, Base: []float64{3, 0}, Tasks: []*Task{
		blCountTask("A", 1, 2, 0, 4, 3),
		blCountTask("B", 2, 2, 0, 0, 5),
	}}
	// span: max base 3; A: min(smallest base 0 + 4, second base 3 + 3) = 4;
	//       B: second base 3 + 5 = 8 -> 8.
	// work: (Σ base 3 + A min(1·4, 2·3) = 4 + B 2·5 = 10) / 2 = 8.5.
	if got := LowerBound(p); got != 8.5 {
		t.Errorf("lower bound %g, want 8.5", got)
	}
	// Without base: span max(min(4,3), 5) = 5; work (4 + 10)/2 = 7.
	p.Base = nil
	if got := LowerBound(p); got != 7 {
		t.Errorf("lower bound without base %g, want 7", got)
	}
}

func TestLowerBound_OneHostHeterogeneous(t *testing.T) {
	p := FromETC([][]float64{{5, 1, 2}, {4, 4, 1}})
	// Without base: span max(min 1, min 1) = 1; work (1 + 1)/3 -> 1.
	if got := LowerBound(p); got != 1 {
		t.Errorf("lower bound %g, want 1", got)
	}
	// T0 may not use host 1, host 2 is busy until 6.
	// span: max(base 6, T0 min(0+5, 6+2) = 5, T1 min(0+4, 0+4, 6+1) = 4) = 6.
	// work: (6 + T0 min(5, 2) + T1 1)/3 = 3. Bound 6.
	p.Tasks[0].Allowed = msBits(3, 0, 2)
	p.Base = []float64{0, 0, 6}
	if got := LowerBound(p); got != 6 {
		t.Errorf("lower bound %g, want 6", got)
	}
	// Work-bound case: four 3-s tasks on 2 hosts, 6 s of work each host.
	q := FromETC([][]float64{{3, 3}, {3, 3}, {3, 3}, {3, 3}})
	if got := LowerBound(q); got != 6 {
		t.Errorf("lower bound %g, want 6", got)
	}
}

// TestLowerBound_BelowExhaustiveOptimum checks the bound against the true
// optimum of tiny instances, found by decoding every order and every legal
// mapping (the decoder's no-hole list schedules include an optimal schedule
// when every order is tried).
func TestLowerBound_BelowExhaustiveOptimum(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		p := blEq2(3, 3, seed%2 == 0, seed%3 == 0, rand.New(rand.NewSource(seed)))
		best := blExhaustive(p)
		if lb := LowerBound(p); lb > best*(1+1e-12) {
			t.Errorf("seed %d: lower bound %g above optimum %g", seed, lb, best)
		}
	}
}

// blExhaustive returns the best makespan over all orders and legal
// mappings of a problem with at most a handful of tasks and hosts.
func blExhaustive(p *Problem) float64 {
	n, m := len(p.Tasks), p.Hosts
	var rows [][]Bits
	for _, t := range p.Tasks {
		var r []Bits
		for set := 1; set < 1<<m; set++ {
			b := Bits{uint64(set)}
			if k := b.Count(); k < t.Min || k > p.MaxHosts(t) {
				continue
			}
			if t.Allowed != nil && b[0]&^t.Allowed[0] != 0 {
				continue
			}
			r = append(r, b)
		}
		rows = append(rows, r)
	}
	best := -1.0
	c := &Chromosome{Order: make([]int, n), Map: make([]Bits, n)}
	var s Schedule
	var perms func(k int, used int)
	var maps func(j int)
	maps = func(j int) {
		if j == n {
			Decode(p, c, &s)
			if best < 0 || s.Makespan < best {
				best = s.Makespan
			}
			return
		}
		for _, b := range rows[j] {
			c.Map[j] = b
			maps(j + 1)
		}
	}
	perms = func(k int, used int) {
		if k == n {
			maps(0)
			return
		}
		for j := 0; j < n; j++ {
			if used&(1<<j) == 0 {
				c.Order[k] = j
				perms(k+1, used|1<<j)
			}
		}
	}
	perms(0, 0)
	return best
}

// TestLowerBound_BelowOptimisers: whatever SA and random search find stays
// above the bound.
func TestLowerBound_BelowOptimisers(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		p := blEq2(12, 8, seed%2 == 0, true, rand.New(rand.NewSource(seed)))
		lb := LowerBound(p)
		a, _ := NewSA(p, SAConfig{}, rand.New(rand.NewSource(seed)))
		r, _ := NewRandomSearch(p, RandomConfig{}, rand.New(rand.NewSource(seed)))
		for _, o := range []Optimizer{a, r} {
			if err := o.Run(context.Background(), 3000); err != nil {
				t.Fatal(err)
			}
			if _, c := o.Best(); c < lb {
				t.Errorf("seed %d: %T found %g below lower bound %g", seed, o, c, lb)
			}
		}
	}
}
