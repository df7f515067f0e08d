package profiler

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/stat/distuv"
)

// Stats are the sufficient statistics of a set of run times: how many, their
// sum and sum of squares, and the sum of their processor counts (the
// thesis's RunEntry: numEntries, timeTotal, timeSquared, procTotal). They add
// up, so any union of cells is the sum of its cells.
type Stats struct {
	N, SumT, SumT2, SumP float64
}

// Add counts one run of t seconds on p processors.
func (s *Stats) Add(t float64, p int) {
	s.N++
	s.SumT += t
	s.SumT2 += t * t
	s.SumP += float64(p)
}

// Merge adds o into s.
func (s *Stats) Merge(o Stats) {
	s.N += o.N
	s.SumT += o.SumT
	s.SumT2 += o.SumT2
	s.SumP += o.SumP
}

// Mean is the mean run time (NaN when empty).
func (s Stats) Mean() float64 { return s.SumT / s.N }

// MeanP is the mean processor count (NaN when empty).
func (s Stats) MeanP() float64 { return s.SumP / s.N }

// Var is the sample variance (n−1 in the denominator), 0 for n < 2. Sums
// of squares lose digits when the spread is tiny beside the mean; a
// negative result of that cancellation is clamped to 0.
func (s Stats) Var() float64 {
	if s.N < 2 {
		return 0
	}
	v := (s.SumT2 - s.SumT*s.SumT/s.N) / (s.N - 1)
	if v < 0 || v < 1e-12*s.Mean()*s.Mean() {
		return 0
	}
	return v
}

// Interval is the mean and the half-width of its Student-t confidence
// interval at level (e.g. 0.95): t(n−1, (1+level)/2)·s/√n. With n < 2 the
// half-width is unknown and ok is false.
func (s Stats) Interval(level float64) (mean, half float64, ok bool) {
	if s.N < 2 {
		return s.Mean(), 0, false
	}
	return s.Mean(), tQuantile(s.N-1, level) * math.Sqrt(s.Var()/s.N), true
}

// tQuantile is the two-sided Student-t quantile t(df, (1+level)/2). The
// inverse incomplete beta behind it costs tens of microseconds, and the
// scheduler asks for the same few (df, level) pairs on every cycle for
// every waiting job, so answers are memoised.
func tQuantile(df, level float64) float64 {
	k := [2]float64{df, level}
	if q, ok := tCache.Load(k); ok {
		return q.(float64)
	}
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile((1 + level) / 2)
	if tCacheSize.Add(1) <= tCacheMax {
		tCache.Store(k, q)
	}
	return q
}

var (
	tCache     sync.Map // [2]float64{df, level} → quantile
	tCacheSize atomic.Int64
)

// tCacheMax bounds the memo: degrees of freedom grow with history, one
// entry per distinct count.
const tCacheMax = 1 << 16

// ProcBin is the thesis's processor category ⌈log2 p⌉: 0 for one
// processor, 1 for two, 2 for 3–4, 3 for 5–8, 4 for 9–16, …
func ProcBin(p int) int {
	if p <= 1 {
		return 0
	}
	return bits.Len(uint(p - 1))
}

// TimeBinsPerOctave is how finely run times are binned for conditioning on
// attained time: four bins per doubling, so a bin's edges are a factor
// 2^¼ ≈ 1.19 apart, which bounds the error of the approximation described
// in the package comment; 4 bins per octave cost about 80 bins from 1 s to
// a year, of which a category fills only the ones its runs fall in.
const TimeBinsPerOctave = 4

// TimeBin is the run-time bin of t seconds: 0 below one second, else
// 1 + ⌊4·log2 t⌋.
func TimeBin(t float64) int {
	if !(t >= 1) {
		return 0
	}
	b := 1 + int(math.Floor(TimeBinsPerOctave*math.Log2(t)))
	return min(b, maxTimeBin)
}

// maxTimeBin keeps a bin index in one byte of a storage key (2^63 s).
const maxTimeBin = 253
