package ga

import (
	"errors"
	"math"
	"math/rand"

	"github.com/MaxHalford/eaopt"
)

// remainderFitness writes the paper's fitness of each cost to f: the cost
// scaled to [0, 1] with the best at 1 and the worst at 0,
// f = (cost_max − cost)/(cost_max − cost_min). An infinite or NaN cost (a
// task that cannot run on its hosts) has fitness 0 and is left out of the
// scaling; when all costs are equal every individual has fitness 1, so
// selection is uniform.
func remainderFitness(cost, f []float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range cost {
		if finiteCost(c) {
			lo, hi = math.Min(lo, c), math.Max(hi, c)
		}
	}
	for i, c := range cost {
		switch {
		case !finiteCost(c):
			f[i] = 0
			if lo > hi { // nothing finite: uniform
				f[i] = 1
			}
		case hi > lo:
			f[i] = (hi - c) / (hi - lo)
		default:
			f[i] = 1
		}
	}
}

func finiteCost(c float64) bool { return !math.IsInf(c, 0) && !math.IsNaN(c) }

// remainder fills choices with population indexes by Goldberg's stochastic
// remainder selection without replacement (Genetic Algorithms, 1989, §4):
// with N = len(choices) slots, individual i is expected e_i = N·f_i/Σf times;
// it gets floor(e_i) copies, and the slots left are filled by Bernoulli trials
// on the fractional parts, visiting the population round-robin; a success
// uses that individual's fraction up. Like Goldberg's, the procedure is not
// exactly proportional: the fraction visited first in a round is favoured.
// The round starts at a random index so that this favour falls on no fixed
// position (the elite sits at 0). The choices are shuffled at the end so that
// crossover mates are random.
// f holds the fitnesses (see remainderFitness) and is overwritten.
func remainder(f []float64, choices []int, rng *rand.Rand) {
	n := len(choices)
	if n == 0 || len(f) == 0 {
		return
	}
	sum := 0.0
	for _, v := range f {
		sum += v
	}
	k := 0
	for i, v := range f {
		e := float64(n) * v / sum
		whole := math.Floor(e)
		f[i] = e - whole
		for c := 0; c < int(whole) && k < n; c++ {
			choices[k] = i
			k++
		}
	}
	for i := rng.Intn(len(f)); k < n; i = (i + 1) % len(f) {
		// Rounding can leave slots with no fraction to fill them; a full
		// round without any positive fraction hands them to the fittest
		// remaining fraction instead of looping for ever.
		if i == 0 && !anyPositive(f) {
			best := 0
			for j := range f {
				if f[j] > f[best] {
					best = j
				}
			}
			choices[k] = best
			k++
			continue
		}
		if f[i] > 0 && rng.Float64() < f[i] {
			choices[k] = i
			k++
			f[i]--
		}
	}
	rng.Shuffle(n, func(i, j int) { choices[i], choices[j] = choices[j], choices[i] })
}

func anyPositive(f []float64) bool {
	for _, v := range f {
		if v > 0 {
			return true
		}
	}
	return false
}

// SelStochasticRemainder is the paper's selection as an eaopt.Selector, for
// use with eaopt's own models. It reads the individuals' Fitness as a cost
// (lower is better) and evaluates none: they must be evaluated already.
// Like eaopt's selectors it returns clones, which allocates; the GA type
// selects by index instead.
type SelStochasticRemainder struct{}

var _ eaopt.Selector = SelStochasticRemainder{}

// Apply selects n individuals from indis.
func (SelStochasticRemainder) Apply(n uint, indis eaopt.Individuals, rng *rand.Rand) (eaopt.Individuals, []int, error) {
	if len(indis) == 0 {
		return nil, nil, errors.New("ga: selection from an empty population")
	}
	cost := make([]float64, len(indis))
	for i, ind := range indis {
		if !ind.Evaluated {
			return nil, nil, errors.New("ga: selection needs evaluated individuals")
		}
		cost[i] = ind.Fitness
	}
	f := make([]float64, len(indis))
	remainderFitness(cost, f)
	idx := make([]int, n)
	remainder(f, idx, rng)
	out := make(eaopt.Individuals, n)
	for i, j := range idx {
		out[i] = indis[j].Clone(rng)
	}
	return out, idx, nil
}

// Validate has nothing to check.
func (SelStochasticRemainder) Validate() error { return nil }
