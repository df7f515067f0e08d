package profiler

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// Fit is T(p) = A/p + B + C·p, fitted by weighted least squares to a
// category's processor bins (Sevcik's execution-time function with a
// constant φ, thesis Eq. 4.1), with the covariance of (A, B, C) and the
// number of runs behind it.
type Fit struct {
	A, B, C float64
	cov     *mat.SymDense
	N       float64 // runs
}

// At is T(p).
func (f *Fit) At(p float64) float64 { return f.A/p + f.B + f.C*p }

// SE is the standard error of T(p): √(x₀ᵀ (XᵀV⁻¹X)⁻¹ x₀), x₀ = (1/p, 1, p).
func (f *Fit) SE(p float64) float64 {
	x0 := mat.NewVecDense(3, []float64{1 / p, 1, p})
	return math.Sqrt(math.Max(mat.Inner(x0, f.cov, x0), 0))
}

// DF is the degrees of freedom of the fit's t quantile: runs minus the
// three coefficients, at least 1. (The thesis uses the number of runs; a
// fit from 3 bin means has spent three of them.)
func (f *Fit) DF() float64 { return math.Max(f.N-3, 1) }

// minFitBins is how many processor bins with data a fit needs: three
// coefficients.
const minFitBins = 3

// zeroSpread is the relative standard deviation given to a bin whose runs
// show no spread at all when no other bin has any either: the fit then goes
// (almost) exactly through such bins while the system stays solvable.
const zeroSpread = 1e-6

// FitBins fits T(p) to bins (index ProcBin; empty bins have N = 0). Each
// bin is one point (mean processor count, mean run time) with weight
// 1/variance of the bin mean = n/s². A bin with n < 2 or s² = 0 has no
// usable variance of its own: it is given the pooled within-bin variance
// of the category, Σ(nᵢ−1)sᵢ² / Σ(nᵢ−1), so its weight is n/s²_pooled; if
// the pooled variance is 0 too (every run in every bin identical) the bin
// gets s = 10⁻⁶ × its mean. With no bin of two runs there is no measure of
// spread at all, and no fit. ok is false with fewer than three bins or a
// singular system.
func FitBins(bins []Stats) (f *Fit, ok bool) {
	var used []Stats
	var pooledSS, pooledDF, n float64
	for _, b := range bins {
		if b.N <= 0 {
			continue
		}
		used = append(used, b)
		n += b.N
		if b.N >= 2 {
			pooledSS += (b.N - 1) * b.Var()
			pooledDF += b.N - 1
		}
	}
	if len(used) < minFitBins || pooledDF == 0 {
		return nil, false
	}
	pooled := pooledSS / pooledDF
	a := mat.NewSymDense(3, nil)
	r := mat.NewVecDense(3, nil)
	for _, b := range used {
		v := b.Var()
		if b.N < 2 || v == 0 {
			v = pooled
		}
		if v == 0 {
			v = math.Pow(zeroSpread*b.Mean(), 2)
		}
		w := b.N / v // 1 / variance of the bin mean
		if !(w > 0) || math.IsInf(w, 0) {
			return nil, false
		}
		p := b.MeanP()
		x := [3]float64{1 / p, 1, p}
		for i := range 3 {
			r.SetVec(i, r.AtVec(i)+w*x[i]*b.Mean())
			for j := i; j < 3; j++ {
				a.SetSym(i, j, a.At(i, j)+w*x[i]*x[j])
			}
		}
	}
	// Equilibrate (scale A to a unit diagonal) before factorising: 1/p and
	// p span orders of magnitude and the weights more, and the scaling
	// takes that out of the condition number.
	var d [3]float64
	for i := range 3 {
		if !(a.At(i, i) > 0) {
			return nil, false
		}
		d[i] = 1 / math.Sqrt(a.At(i, i))
	}
	for i := range 3 {
		r.SetVec(i, r.AtVec(i)*d[i])
		for j := i; j < 3; j++ {
			a.SetSym(i, j, a.At(i, j)*d[i]*d[j])
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(a) || ch.Cond() > maxCondition {
		return nil, false
	}
	var coef mat.VecDense
	if err := ch.SolveVecTo(&coef, r); err != nil {
		return nil, false
	}
	cov := mat.NewSymDense(3, nil)
	if err := ch.InverseTo(cov); err != nil {
		return nil, false
	}
	for i := range 3 {
		coef.SetVec(i, coef.AtVec(i)*d[i])
		for j := i; j < 3; j++ {
			cov.SetSym(i, j, cov.At(i, j)*d[i]*d[j])
		}
	}
	for i := range 3 {
		if c := coef.AtVec(i); math.IsNaN(c) || math.IsInf(c, 0) {
			return nil, false
		}
	}
	return &Fit{A: coef.AtVec(0), B: coef.AtVec(1), C: coef.AtVec(2), cov: cov, N: n}, true
}

// maxCondition is the largest condition number of XᵀV⁻¹X accepted: a
// worse-conditioned system keeps fewer than about 4 significant digits of
// the coefficients in float64 (gonum itself only objects beyond 10¹⁶).
const maxCondition = 1e12
