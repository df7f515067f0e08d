package ga

import (
	"context"
	"math/rand"
	"testing"
)

func TestGA_SurvivorsAreSortedAndDistinct(t *testing.T) {
	p := msEq2Problem(20, 16, rand.New(rand.NewSource(21)))
	for _, k := range []CostKind{MS, XMS} {
		g, err := New(p, Config{Cost: k}, rand.New(rand.NewSource(21)))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 80; i++ {
			if err := g.Step(context.Background()); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				continue // the initial population is as drawn
			}
			indis := g.pop.Individuals
			if g.best != 0 || g.bestCost != indis[0].Fitness {
				t.Fatalf("generation %d: best at %d, cost %v", g.Generations(), g.best, g.bestCost)
			}
			for a := range indis {
				if a > 0 && indis[a].Fitness < indis[a-1].Fitness {
					t.Fatalf("generation %d: survivors not sorted at %d", g.Generations(), a)
				}
				for b := 0; b < a; b++ {
					if sameChrom(&g.gs[a].Chromosome, &g.gs[b].Chromosome) {
						t.Fatalf("generation %d: individuals %d and %d are the same", g.Generations(), b, a)
					}
				}
			}
		}
		msCheckPopulation(t, g, p)
	}
}

func TestGA_SurviveKeepsDuplicatesOnlyWhenShort(t *testing.T) {
	// One task, one host: every string is the same, so the population can
	// only be duplicates; it must stay full and evaluated.
	p := &Problem{Hosts: 1, Tasks: []*Task{msFixedTask("T", 5, 1, nil)}}
	g, err := New(p, Config{Population: 6}, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := g.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(g.pop.Individuals) != 6 {
		t.Fatalf("population of %d", len(g.pop.Individuals))
	}
	msCheckPopulation(t, g, p)
}

func TestGA_AlignmentCountsTwoEvaluations(t *testing.T) {
	p := msEq2Problem(12, 8, rand.New(rand.NewSource(7)))
	for _, tc := range []struct {
		align float64
		per   int
	}{{1, 2}, {-1, 1}} {
		// Every offspring is mutated and none crossed: N−1 new ones a
		// generation.
		g, _ := New(p, Config{Population: 10, CrossoverRate: -1, MutationRate: 1, AlignRate: tc.align}, rand.New(rand.NewSource(7)))
		g.Step(context.Background())
		before := g.Evaluations()
		g.Step(context.Background())
		if got, want := g.Evaluations()-before, 9*tc.per; got != want {
			t.Errorf("alignment %v: a generation made %d evaluations, want %d", tc.align, got, want)
		}
		msCheckPopulation(t, g, p)
	}
}

func TestChromHash_SeesEveryGene(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	p := msEq2Problem(6, 70, rng)
	c := NewRandom(p, rng)
	h := chromHash(c)
	for j := range c.Map {
		d := c.Clone()
		d.Map[j].Flip(69)
		if chromHash(d) == h || sameChrom(c, d) {
			t.Errorf("row %d: a flipped host is not seen", j)
		}
	}
	d := c.Clone()
	d.Order[0], d.Order[5] = d.Order[5], d.Order[0]
	if chromHash(d) == h || sameChrom(c, d) {
		t.Error("a swap is not seen")
	}
	if !sameChrom(c, c.Clone()) {
		t.Error("a clone differs")
	}
}
