package workload

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
)

// Distributions shared by the generators. Each draws only from the
// *rand.Rand it is given.

// hyperExp draws from the two-stage hyperexponential with the given mean
// and coefficient of variation cv ≥ 1 and balanced means (each branch
// contributes half of the mean: p_i/λ_i equal), the standard fit used by
// both Gibbons (1997, §6.1) and Chiang & Vernon (2001, §4.2):
//
//	p1 = ½(1 + sqrt((cv²−1)/(cv²+1))), λ_i = 2·p_i/mean.
//
// cv = 1 gives the exponential.
func hyperExp(rng *rand.Rand, mean, cv float64) float64 {
	c2 := cv * cv
	p1 := 0.5 * (1 + math.Sqrt((c2-1)/(c2+1)))
	if rng.Float64() < p1 {
		return rng.ExpFloat64() * mean / (2 * p1)
	}
	return rng.ExpFloat64() * mean / (2 * (1 - p1))
}

// mixedErlang draws from the two-moment fit for 0 < cv < 1 (Tijms, "A First
// Course in Stochastic Models", §A): with k such that 1/k ≤ cv² ≤ 1/(k−1),
// Erlang(k−1, μ) with probability p and Erlang(k, μ) otherwise, where
//
//	p = (k·cv² − sqrt(k(1+cv²) − k²cv²)) / (1+cv²),  μ = (k − p)/mean.
func mixedErlang(rng *rand.Rand, mean, cv float64) float64 {
	c2 := cv * cv
	k := int(math.Ceil(1 / c2))
	kf := float64(k)
	p := (kf*c2 - math.Sqrt(kf*(1+c2)-kf*kf*c2)) / (1 + c2)
	p = max(0, p) // rounding at cv² = 1/k
	mu := (kf - p) / mean
	stages := k
	if rng.Float64() < p {
		stages = k - 1
	}
	s := 0.0
	for range stages {
		s += rng.ExpFloat64()
	}
	return s / mu
}

// byCV draws a positive value with the given mean and coefficient of
// variation, as Gibbons's workload does: Erlang-type below cv = 1,
// exponential at 1, hyperexponential above.
func byCV(rng *rand.Rand, mean, cv float64) float64 {
	switch {
	case cv <= 0:
		return mean
	case cv < 1:
		return mixedErlang(rng, mean, cv)
	default:
		return hyperExp(rng, mean, cv)
	}
}

// discrete is a finite distribution over values with weights, sampled by
// inverse CDF.
type discrete[T any] struct {
	values []T
	cum    []float64 // cumulative weights, normalised to end at 1
}

// weighted is one value of a discrete distribution and its weight.
type weighted[T any] struct {
	V T
	W float64
}

func newDiscrete[T any](items []weighted[T]) discrete[T] {
	d := discrete[T]{}
	total := 0.0
	for _, it := range items {
		if it.W < 0 || math.IsNaN(it.W) {
			panic(fmt.Sprintf("workload: negative weight %v", it.W))
		}
		total += it.W
	}
	if total <= 0 {
		panic("workload: discrete distribution with no weight")
	}
	c := 0.0
	for _, it := range items {
		if it.W == 0 {
			continue
		}
		c += it.W / total
		d.values = append(d.values, it.V)
		d.cum = append(d.cum, c)
	}
	d.cum[len(d.cum)-1] = 1
	return d
}

func (d discrete[T]) draw(rng *rand.Rand) T {
	u := rng.Float64()
	i := sort.SearchFloat64s(d.cum, u)
	if i < len(d.cum) && d.cum[i] == u {
		i++ // cum[i] is the upper end of value i's interval [cum[i-1], cum[i])
	}
	return d.values[min(i, len(d.values)-1)]
}

// logUniform draws from the log-uniform distribution on [lo, hi).
func logUniform(rng *rand.Rand, lo, hi float64) float64 {
	return lo * math.Exp(rng.Float64()*math.Log(hi/lo))
}
