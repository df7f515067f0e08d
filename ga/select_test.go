package ga

import (
	"math"
	"math/rand"
	"testing"

	"github.com/MaxHalford/eaopt"
)

func TestRemainderFitness_Table(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name       string
		cost, want []float64
	}{
		{"scaled best 1 worst 0", []float64{10, 20, 30, 40}, []float64{1, 2.0 / 3, 1.0 / 3, 0}},
		{"order does not matter", []float64{40, 10, 25}, []float64{0, 1, 0.5}},
		{"all equal is uniform", []float64{7, 7, 7}, []float64{1, 1, 1}},
		{"infinite cost has fitness 0", []float64{5, inf, 15}, []float64{1, 0, 0}},
		{"all infinite is uniform", []float64{inf, inf}, []float64{1, 1}},
		{"NaN has fitness 0", []float64{math.NaN(), 1, 3}, []float64{0, 1, 0}},
	}
	for _, tc := range cases {
		f := make([]float64, len(tc.cost))
		remainderFitness(tc.cost, f)
		for i := range f {
			if math.Abs(f[i]-tc.want[i]) > 1e-12 {
				t.Errorf("%s: f = %v, want %v", tc.name, f, tc.want)
				break
			}
		}
	}
}

func TestRemainder_Counts(t *testing.T) {
	// mean is the mean number of copies under Goldberg's procedure, which
	// is not exactly e_i: with one slot left after the whole copies, the
	// round of trials starting at a uniform random index favours the
	// fraction visited first. For fractions q_a, q_b visited in turn the
	// first wins with q_a/D and the second with (1-q_a)q_b/D, where
	// D = 1 - Π(1-q).
	cases := []struct {
		name   string
		cost   []float64
		slots  int
		expect []float64 // e_i = N·f_i/Σf, worked by hand
		mean   []float64
	}{
		// f = 1, 2/3, 1/3, 0; Σf = 2; e = 4·f/2 = 2, 4/3, 2/3, 0.
		// One slot left, fractions 1/3 (index 1) and 2/3 (index 2),
		// D = 7/9. Index 1 is visited first from starts 0, 1, 3 and wins
		// with 3/7, else it wins with 1/7: (3·3/7+1/7)/4 = 5/14.
		{"four", []float64{10, 20, 30, 40}, 4, []float64{2, 4.0 / 3, 2.0 / 3, 0},
			[]float64{2, 1 + 5.0/14, 9.0 / 14, 0}},
		// f = 1, 1/2, 0; Σf = 3/2; e = 6·f/1.5 = 4, 2, 0: no fractions.
		{"whole", []float64{0, 5, 10}, 6, []float64{4, 2, 0}, []float64{4, 2, 0}},
		// f = 1, 0.9, 0.1, 0; Σf = 2; e = 5·f/2 = 2.5, 2.25, 0.25, 0.
		// One slot left, fractions .5, .25, .25, D = 1-.5·.75·.75 = .71875.
		// Index 0 wins from starts 0..3 with .5, .28125, .375, .5 (over D),
		// index 1 with .125, .25, .09375, .125.
		{"odd slots", []float64{0, 1, 9, 10}, 5, []float64{2.5, 2.25, 0.25, 0},
			[]float64{2 + 1.65625/4/.71875, 2 + .59375/4/.71875, 1 - (1.65625+.59375)/4/.71875, 0}},
		// All equal: e = 3·1/4 = 0.75 each, every slot a Bernoulli trial;
		// by symmetry the mean is e.
		{"equal", []float64{3, 3, 3, 3}, 3, []float64{0.75, 0.75, 0.75, 0.75}, []float64{0.75, 0.75, 0.75, 0.75}},
	}
	const trials = 8000
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(1))
			n := len(tc.cost)
			f := make([]float64, n)
			choices := make([]int, tc.slots)
			sum := make([]float64, n)
			for trial := 0; trial < trials; trial++ {
				remainderFitness(tc.cost, f)
				remainder(f, choices, rng)
				got := make([]int, n)
				for _, c := range choices {
					got[c]++
				}
				for i, e := range tc.expect {
					// Stochastic remainder guarantees floor(e_i) copies and
					// at most one more.
					if float64(got[i]) < math.Floor(e) || float64(got[i]) > math.Ceil(e) {
						t.Fatalf("trial %d: counts %v, want each within floor/ceil of %v", trial, got, tc.expect)
					}
					sum[i] += float64(got[i])
				}
			}
			for i, want := range tc.mean {
				if mean := sum[i] / trials; math.Abs(mean-want) > 0.025 {
					t.Errorf("individual %d: mean copies %.3f, want %.3f", i, mean, want)
				}
			}
		})
	}
}

func TestRemainder_ShufflesTheChoices(t *testing.T) {
	// With e = 2, 2 for two individuals the multiset is fixed; the order
	// must vary, or crossover would always mate an individual with itself.
	rng := rand.New(rand.NewSource(4))
	f := []float64{1, 1}
	choices := make([]int, 4)
	orders := map[[4]int]bool{}
	for i := 0; i < 100; i++ {
		f[0], f[1] = 1, 1
		remainder(f, choices, rng)
		orders[[4]int(choices)] = true
	}
	if len(orders) < 4 {
		t.Fatalf("only %d distinct orders of the choices", len(orders))
	}
}

func TestSelStochasticRemainder_WithEaopt(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	indis := eaopt.Individuals{
		{Fitness: 10, Evaluated: true}, {Fitness: 20, Evaluated: true},
		{Fitness: 30, Evaluated: true}, {Fitness: 40, Evaluated: true},
	}
	sel := SelStochasticRemainder{}
	if err := sel.Validate(); err != nil {
		t.Fatal(err)
	}
	got, idx, err := sel.Apply(4, indis, rng)
	if err != nil {
		t.Fatal(err)
	}
	count := make([]int, 4)
	for i, j := range idx {
		if got[i].Fitness != indis[j].Fitness {
			t.Fatalf("selected %d has fitness %v, individual %d has %v", i, got[i].Fitness, j, indis[j].Fitness)
		}
		count[j]++
	}
	if count[0] != 2 || count[3] != 0 || count[1]+count[2] != 2 {
		t.Fatalf("counts %v, want 2, 1..2, 0..1, 0", count)
	}
	indis[2].Evaluated = false
	if _, _, err := sel.Apply(4, indis, rng); err == nil {
		t.Fatal("selection from an unevaluated population did not fail")
	}
}
