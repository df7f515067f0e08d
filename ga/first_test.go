package ga

import (
	"context"
	"math/rand"
	"slices"
	"testing"
)

func TestLead_MovesFirstToFrontKeepingTheRest(t *testing.T) {
	p := msEq2Problem(5, 4, rand.New(rand.NewSource(1)))
	p.First = []int{4, 1}
	c := &Chromosome{Order: []int{3, 0, 4, 1, 2}}
	p.Lead(c)
	if want := []int{4, 1, 3, 0, 2}; !slices.Equal(c.Order, want) {
		t.Fatalf("order %v, want %v", c.Order, want)
	}
	p.Lead(c) // already led: unchanged
	if want := []int{4, 1, 3, 0, 2}; !slices.Equal(c.Order, want) {
		t.Fatalf("second Lead: order %v, want %v", c.Order, want)
	}
}

func TestValidate_RejectsBadFirst(t *testing.T) {
	for _, first := range [][]int{{5}, {-1}, {2, 2}} {
		p := msEq2Problem(5, 4, rand.New(rand.NewSource(1)))
		p.First = first
		if err := p.Validate(); err == nil {
			t.Errorf("First %v accepted for 5 tasks", first)
		}
	}
}

// The GA keeps the First task in front of every string it evaluates, before
// and after an Update, so its best schedule places that task before any other
// on its hosts, even when it is the last to arrive and the widest.
func TestGA_SchedulesFirstTaskFirst(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	p := msEq2Problem(12, 8, rng)
	p.Base = []float64{0, 5, 0, 9, 2, 0, 0, 7}
	lead := len(p.Tasks) - 1
	p.First = []int{lead}
	g, err := New(p, Config{Cost: XMS, TieBreak: true}, rng)
	if err != nil {
		t.Fatal(err)
	}
	check := func(p *Problem, lead int) {
		t.Helper()
		for i := range g.gs {
			if o := g.gs[i].Order; o[0] != lead {
				t.Fatalf("individual %d leads with task %d, want %d", i, o[0], lead)
			}
		}
		best, _ := g.Best()
		c := Align(p, best)
		// Leading the string is the whole promise: Decode places tasks in
		// string order, so no later task takes a host of the first before
		// it ends.
		if c.Order[0] != lead {
			t.Fatalf("aligned best leads with %d, want %d", c.Order[0], lead)
		}
	}
	for i := 0; i < 30; i++ {
		if err := g.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	check(p, lead)
	// A new problem: the first two tasks gone, another leads, at once.
	q := &Problem{Hosts: p.Hosts, Base: p.Base, Tasks: p.Tasks[2:], First: []int{3}}
	if err := g.Update(q); err != nil {
		t.Fatal(err)
	}
	check(q, 3)
	for i := 0; i < 30; i++ {
		if err := g.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	check(q, 3)
}
