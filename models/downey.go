package models

// newDowney builds the "downey" kind: Downey's (1997) speedup model, "A Model
// for Speedup of Parallel Programs" (UCB CSD-97-933), as used by SCOJO-P and
// the Cirne-Berman moldable-job model.
//
//	t = T1 / S(i) / s_min
//
// T1 is the run time on one idle speed-1 host, A ≥ 1 the job's average
// parallelism (its maximum speedup) and σ ≥ 0 the coefficient of variance in
// parallelism (how soon the speedup curve bends towards A). S(n) is, for
// low variance (σ ≤ 1):
//
//	S(n) = A·n / (A + σ/2·(n−1))          1 ≤ n ≤ A
//	S(n) = A·n / (σ·(A−½) + n·(1−σ/2))    A ≤ n ≤ 2A−1
//	S(n) = A                              n ≥ 2A−1
//
// and for high variance (σ ≥ 1):
//
//	S(n) = n·A·(σ+1) / (σ·(n+A−1) + A)     1 ≤ n ≤ A + Aσ − σ
//	S(n) = A                              n ≥ A + Aσ − σ
//
// The branches agree at their boundaries and at σ = 1. s_min, the slowest
// effective host speed, scales the result as for the other kinds.
//
// Parameters: T1 > 0 (seconds), A ≥ 1, sigma ≥ 0.
func newDowney(spec Spec, hw *Hardware) (Model, error) {
	return newFormula(spec, hw, []param{
		{"T1", "> 0", positive},
		{"A", ">= 1", atLeastOne},
		{"sigma", ">= 0", nonNegative},
	}, func(p []float64, i int, sMin float64) float64 {
		return p[0] / DowneySpeedup(float64(i), p[1], p[2]) / sMin
	})
}

// DowneySpeedup is Downey's speedup S(n) for average parallelism a ≥ 1 and
// variance coefficient sigma ≥ 0 (see newDowney for the formula), n ≥ 1.
func DowneySpeedup(n, a, sigma float64) float64 {
	if sigma <= 1 {
		switch {
		case n <= a:
			return a * n / (a + sigma/2*(n-1))
		case n < 2*a-1:
			return a * n / (sigma*(a-0.5) + n*(1-sigma/2))
		default:
			return a
		}
	}
	if n < a+a*sigma-sigma {
		return n * a * (sigma + 1) / (sigma*(n+a-1) + a)
	}
	return a
}
