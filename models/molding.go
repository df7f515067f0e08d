package models

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Molding is the speedup curve of a rigid job made moldable: its requested
// size is its N_opt, its run time there the one it had, and on n hosts it
// runs Factor(n) times that, for n in Min..Max.
type Molding interface {
	NOpt() int
	Min() int
	Max() int
	// Factor is T(n)/T(N_opt).
	Factor(n int) float64
}

// NOpt is N_opt, the job's requested size.
func (e Efficiency) NOpt() int { return e.opt() }

// DowneyCurve is Downey's speedup curve (DowneySpeedup) for a job whose
// requested size is its processor working set, the N minimising
// T(N)/E(N), that is N/S(N)² (SEEDS.md §3: SCOJO-P takes the requested
// size as N_opt = N_PWS). Given the variance coefficient σ, the average
// parallelism A is the one that puts the working set at N_opt (Downey's
// curve has one minimum of N/S(N)²; A follows in closed form, see A):
//
//	σ ≥ 1:  N_PWS = A − 1 + A/σ
//	σ ≤ 1:  N_PWS = max(A, σ·(2A−1)/(2−σ))
//
// So the curve is tied to the size the user asked for, rather than drawn
// apart from it (the paper's objection to Cirne and Berman's random A: it
// made N_opt far larger than the jobs' sizes). Min is the efficiency
// model's, ⌈N_opt/2⌉, and Max is where the speedup stops growing (2A−1 for
// 0 < σ ≤ 1, A + Aσ − σ above, A for σ = 0, where S(n) = min(n, A)), at most
// the machine: beyond it a job runs no faster. For 0 < σ ≤ 2/3 that is
// 2·N_opt − 1; for σ ≥ 1, σ·N_opt (rounded up).
type DowneyCurve struct {
	Opt     int     // N_opt, at least 1
	Sigma   float64 // σ ≥ 0
	Machine int     // the bound on Max; 0: none
}

// NOpt is N_opt.
func (d DowneyCurve) NOpt() int { return max(d.Opt, 1) }

// sigma is σ, at least 0.
func (d DowneyCurve) sigma() float64 { return math.Max(d.Sigma, 0) }

// A is the average parallelism that makes N_opt the working set.
func (d DowneyCurve) A() float64 {
	n, s := float64(d.NOpt()), d.sigma()
	if s >= 1 {
		return s * (n + 1) / (s + 1)
	}
	if s*(2*n-1)/(2-s) <= n {
		return n // the working set is at A itself
	}
	return (n*(2-s)/s + 1) / 2
}

// Min is ⌈N_opt/2⌉, at least 1.
func (d DowneyCurve) Min() int { return max((d.NOpt()+1)/2, 1) }

// Max is the least size at which the speedup has stopped growing (the
// point where it does, rounded up: every size below it is slower), at most
// the machine, at least N_opt.
func (d DowneyCurve) Max() int {
	a, s := d.A(), d.sigma()
	top := 2*a - 1
	switch {
	case s == 0: // S(n) = min(n, A)
		top = a
	case s > 1:
		top = a + a*s - s
	}
	top = math.Min(top, 1<<30)
	if d.Machine > 0 {
		top = math.Min(top, float64(d.Machine))
	}
	return max(int(math.Ceil(top-1e-9)), d.NOpt())
}

// Factor is S(N_opt)/S(n).
func (d DowneyCurve) Factor(n int) float64 {
	if n <= 0 {
		return math.Inf(1)
	}
	a, s := d.A(), d.sigma()
	return DowneySpeedup(float64(d.NOpt()), a, s) / DowneySpeedup(float64(n), a, s)
}

// MoldCurve names the curve rigid jobs get when made moldable: SCOJO-P's
// efficiency model (the zero value) or Downey's with variance Sigma.
type MoldCurve struct {
	Downey bool
	Sigma  float64
}

// DefaultDowneySigma is σ when "downey" gives none: a program of low
// variance in parallelism, whose curve is close to the efficiency
// model's (T(N_min) ≈ 1.8·T_opt, T(N_max) ≈ 0.8·T_opt, against 1.625 and
// 0.8125).
const DefaultDowneySigma = 0.5

// MaxDowneySigma bounds σ: far beyond the variances Downey measured (a
// few), and the curve's arithmetic stays finite.
const MaxDowneySigma = 100

// ParseMoldCurve reads "efficiency", "downey" or "downey:σ".
func ParseMoldCurve(s string) (MoldCurve, error) {
	kind, arg, hasArg := strings.Cut(strings.TrimSpace(s), ":")
	switch {
	case kind == "efficiency" && !hasArg:
		return MoldCurve{}, nil
	case kind == "downey":
		c := MoldCurve{Downey: true, Sigma: DefaultDowneySigma}
		if hasArg {
			v, err := strconv.ParseFloat(arg, 64)
			if err != nil || !(v >= 0 && v <= MaxDowneySigma) {
				return c, fmt.Errorf("models: speedup %q: σ must be a number from 0 to %d", s, MaxDowneySigma)
			}
			c.Sigma = v
		}
		return c, nil
	}
	return MoldCurve{}, fmt.Errorf("models: speedup %q: want efficiency, downey or downey:σ (σ from 0 to %d, default %g)", s, MaxDowneySigma, DefaultDowneySigma)
}

// String is the form ParseMoldCurve reads.
func (c MoldCurve) String() string {
	if !c.Downey {
		return "efficiency"
	}
	return "downey:" + strconv.FormatFloat(c.Sigma, 'g', -1, 64)
}

// For is the curve of a job of requested size opt on a machine of machine
// hosts.
func (c MoldCurve) For(opt, machine int) Molding {
	if c.Downey {
		return DowneyCurve{Opt: opt, Sigma: c.Sigma, Machine: machine}
	}
	return Efficiency{Opt: opt, Machine: machine}
}
