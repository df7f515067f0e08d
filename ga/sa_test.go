package ga

import (
	"context"
	"math"
	"math/rand"
	"slices"
	"testing"
)

// TestSA_MovesStayLegalAndUndoExactly drives the move generator directly on
// a constrained problem (allowed sets, Min > 1, bases): every move leaves a
// legal string and undo restores the previous one bit for bit.
func TestSA_MovesStayLegalAndUndoExactly(t *testing.T) {
	p := blEq2(15, 70, true, true, rand.New(rand.NewSource(4))) // two words per row
	a, err := NewSA(p, SAConfig{}, rand.New(rand.NewSource(4)))
	if err != nil {
		t.Fatal(err)
	}
	a.cur = NewRandom(p, a.rng)
	kinds := 0
	for i := 0; i < 5000; i++ {
		before := a.cur.Clone()
		a.propose()
		if !Legal(p, a.cur) {
			t.Fatalf("move %d left an illegal string", i)
		}
		if a.orderSaved {
			kinds |= 1
		}
		if len(a.saved) == 1 {
			kinds |= 2
		}
		if len(a.saved) > 1 {
			kinds |= 4
		}
		if i%2 == 0 { // keep half the moves, undo the others
			continue
		}
		a.undo()
		if !slices.Equal(before.Order, a.cur.Order) {
			t.Fatalf("move %d: undo left order %v, want %v", i, a.cur.Order, before.Order)
		}
		for j := range before.Map {
			if !before.Map[j].Equal(a.cur.Map[j]) {
				t.Fatalf("move %d: undo left task %d on %v, want %v", i, j, a.cur.Map[j].Hosts(nil), before.Map[j].Hosts(nil))
			}
		}
	}
	if kinds != 7 {
		t.Errorf("not every kind of move was tried (mask %b)", kinds)
	}
}

// TestSA_CurrentCostIsTheCurrentString: after a run full of rejected moves,
// the string SA stands on still has the cost it believes (undo is exact).
func TestSA_CurrentCostIsTheCurrentString(t *testing.T) {
	for _, k := range []CostKind{MS, XMS, XMSContinuous} {
		p := blEq2(12, 10, true, true, rand.New(rand.NewSource(6)))
		a, _ := NewSA(p, SAConfig{Cost: k}, rand.New(rand.NewSource(6)))
		if err := a.Run(context.Background(), 4000); err != nil {
			t.Fatal(err)
		}
		var s Schedule
		if got := Evaluate(p, a.cur, k, &s); got != a.curCost {
			t.Errorf("%v: current string costs %g, SA believes %g", k, got, a.curCost)
		}
		// The automatic schedule ends its budget at T0·saFinalRatio (within
		// one cooling step).
		if lo, hi := a.t0*saFinalRatio*a.cooling, a.t0*saFinalRatio/a.cooling; a.Temperature() < lo || a.Temperature() > hi {
			t.Errorf("%v: final temperature %g, want about %g (T0 %g)", k, a.Temperature(), a.t0*saFinalRatio, a.t0)
		}
	}
}

func TestSA_ConfigAndStart(t *testing.T) {
	p := blEq2(8, 6, false, false, rand.New(rand.NewSource(7)))
	for _, cfg := range []SAConfig{{T0: -1}, {Cooling: 1}, {Cooling: -0.5}, {Steps: -2}, {Start: &Chromosome{}}} {
		if _, err := NewSA(p, cfg, rand.New(rand.NewSource(1))); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	// A given start is where SA begins: with a fixed, very cold schedule
	// it can only improve on Greedy's string.
	g, _ := Greedy(p)
	var s Schedule
	gc := Evaluate(p, g, MS, &s)
	a, err := NewSA(p, SAConfig{Start: g, T0: 1e-9, Cooling: 0.5, Steps: 10}, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Run(context.Background(), 2000); err != nil {
		t.Fatal(err)
	}
	if _, c := a.Best(); c > gc {
		t.Errorf("SA from Greedy's string (%g) ended worse: %g", gc, c)
	}
	if a.Temperature() != 1e-9*math.Pow(0.5, 1999/10) {
		t.Errorf("temperature %g after 1999 moves of 10 per level", a.Temperature())
	}
}
