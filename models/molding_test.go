package models

import (
	"math"
	"testing"
)

var testSigmas = []float64{0, 0.2, 0.5, 2.0 / 3, 0.7, 0.8, 0.95, 1, 1.2, 1.5, 2, 3, 5, MaxDowneySigma}

// A puts the working set (the integer n minimising n·T(n)², ties to the
// smaller, as the policies look for it) at the requested size, for every
// σ: low and high variance, and both cases of low variance (the working set
// at A, or beyond it).
func TestDowneyCurve_OptIsTheWorkingSet(t *testing.T) {
	for _, s := range testSigmas {
		for opt := 1; opt <= 200; opt++ {
			d := DowneyCurve{Opt: opt, Sigma: s}
			if a := d.A(); a < 1 {
				t.Fatalf("σ %g, N_opt %d: A = %g < 1", s, opt, a)
			}
			best, at := math.Inf(1), 0
			for n := 1; n <= 6*opt+2; n++ {
				if w := float64(n) * d.Factor(n) * d.Factor(n); w < best*(1-1e-12) {
					best, at = w, n
				}
			}
			if at != opt {
				t.Errorf("σ %g, N_opt %d (A %.4g): working set %d", s, opt, d.A(), at)
			}
		}
	}
}

// The run time falls from Min to Max and no further: Max is where the
// speedup stops growing (or the machine); Min is ⌈N_opt/2⌉.
func TestDowneyCurve_Range(t *testing.T) {
	for _, s := range testSigmas {
		for _, opt := range []int{1, 2, 3, 7, 16, 33, 64} {
			d := DowneyCurve{Opt: opt, Sigma: s}
			if d.Factor(opt) != 1 {
				t.Errorf("σ %g, N_opt %d: T(N_opt)/T_opt = %v", s, opt, d.Factor(opt))
			}
			if d.Min() != max((opt+1)/2, 1) || d.Max() < opt {
				t.Errorf("σ %g, N_opt %d: range %d..%d", s, opt, d.Min(), d.Max())
			}
			for n := 2; n <= d.Max(); n++ {
				if d.Factor(n) >= d.Factor(n-1) && d.Max() > opt {
					t.Errorf("σ %g, N_opt %d: T(%d) = %v·T_opt, not below T(%d) = %v", s, opt, n, d.Factor(n), n-1, d.Factor(n-1))
				}
			}
			// Past Max nothing is gained.
			if f := d.Factor(d.Max()); f-d.Factor(d.Max()+1) > 1e-12 && d.Max() > opt {
				t.Errorf("σ %g, N_opt %d: still faster past Max %d: %v, %v", s, opt, d.Max(), f, d.Factor(d.Max()+1))
			}
			if m := (DowneyCurve{Opt: opt, Sigma: s, Machine: opt}); m.Max() != opt {
				t.Errorf("σ %g, N_opt %d on %d hosts: Max %d", s, opt, opt, m.Max())
			}
		}
	}
	// The closed forms of Max.
	for _, c := range []struct {
		s        float64
		opt, max int
	}{{0.5, 32, 63}, {0, 10, 10}, {0.2, 10, 19}, {1, 32, 32}, {2, 32, 64}, {3, 10, 30}, {0.7, 10, 19}, {1.5, 3, 5}} {
		if got := (DowneyCurve{Opt: c.opt, Sigma: c.s}).Max(); got != c.max {
			t.Errorf("σ %g, N_opt %d: Max %d, want %d", c.s, c.opt, got, c.max)
		}
	}
}

// The default σ's curve is close to the efficiency model's, as its comment
// says.
func TestDowneyCurve_DefaultNearTheEfficiencyModel(t *testing.T) {
	d := DowneyCurve{Opt: 64, Sigma: DefaultDowneySigma}
	if lo, hi := d.Factor(d.Min()), d.Factor(d.Max()); math.Abs(lo-1.8) > 0.02 || math.Abs(hi-0.8) > 0.01 {
		t.Errorf("T(N_min), T(N_max) = %.3f, %.3f of T_opt; the comment says about 1.8 and 0.8", lo, hi)
	}
}

func TestParseMoldCurve(t *testing.T) {
	for in, want := range map[string]MoldCurve{
		"efficiency":  {},
		"downey":      {Downey: true, Sigma: DefaultDowneySigma},
		"downey:1.5":  {Downey: true, Sigma: 1.5},
		" downey:0 ":  {Downey: true, Sigma: 0},
		"downey:2e-1": {Downey: true, Sigma: 0.2},
		"downey:100":  {Downey: true, Sigma: 100},
	} {
		got, err := ParseMoldCurve(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
		if back, err := ParseMoldCurve(got.String()); err != nil || back != got {
			t.Errorf("%q: %q reads back as %+v, %v", in, got.String(), back, err)
		}
	}
	for _, in := range []string{"", "downey:", "downey:-1", "downey:NaN", "downey:Inf", "downey:100.5", "downey:1e308", "downey:x", "efficiency:1", "amdahl", "Downey"} {
		if _, err := ParseMoldCurve(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	if c := (MoldCurve{}).For(8, 12); c.Min() != 4 || c.Max() != 12 || c.NOpt() != 8 {
		t.Errorf("efficiency For(8, 12): %d..%d, N_opt %d", c.Min(), c.Max(), c.NOpt())
	}
	if c := (MoldCurve{Downey: true, Sigma: 2}).For(8, 12); c.Min() != 4 || c.Max() != 12 || c.NOpt() != 8 {
		t.Errorf("downey:2 For(8, 12): %d..%d, N_opt %d", c.Min(), c.Max(), c.NOpt())
	}
}
