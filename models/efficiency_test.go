package models

import (
	"math"
	"testing"
)

// The paper's numbers: E = 0.8, 0.65, 0.4 at N_min, N_opt, N_max, and the
// consistent run times T(N_min) = 1.625·T_opt, T(N_max) = 0.8125·T_opt.
func TestEfficiency_PaperNumbers(t *testing.T) {
	e := Efficiency{Opt: 32, Machine: 128}
	if e.Min() != 16 || e.Max() != 64 {
		t.Fatalf("N_min, N_max = %d, %d; want 16, 64", e.Min(), e.Max())
	}
	for _, c := range []struct {
		n       int
		eff, tf float64
	}{
		{16, 0.8, 1.625},
		{32, 0.65, 1},
		{64, 0.4, 0.8125},
		// Halfway between N_opt and N_max: S = (0.65 + 0.8)/2 · 32 = 23.2,
		// E = 23.2/48, T = 0.65/0.725 T_opt.
		{48, 23.2 / 48, 0.65 / 0.725},
		// Halfway between N_min and N_opt: S = (0.4 + 0.65)/2 · 32 = 16.8.
		{24, 16.8 / 24, 0.65 / 0.525},
	} {
		if got := e.Efficiency(float64(c.n)); math.Abs(got-c.eff) > 1e-12 {
			t.Errorf("E(%d) = %v, want %v", c.n, got, c.eff)
		}
		if got := e.Factor(c.n); math.Abs(got-c.tf) > 1e-12 {
			t.Errorf("T(%d)/T_opt = %v, want %v", c.n, got, c.tf)
		}
	}
}

// N_opt is the processor working set (N·T(N)² least there), and the run time
// falls from N_min to N_max.
func TestEfficiency_OptIsTheWorkingSet(t *testing.T) {
	for _, opt := range []int{1, 2, 3, 5, 8, 13, 32, 64, 100} {
		e := Efficiency{Opt: opt, Machine: 128}
		best, at := math.Inf(1), 0
		prev := math.Inf(1)
		for n := e.Min(); n <= e.Max(); n++ {
			f := e.Factor(n)
			if f >= prev {
				t.Errorf("N_opt %d: T(%d) = %v ≥ T(%d) = %v", opt, n, f, n-1, prev)
			}
			prev = f
			if c := float64(n) * f * f; c < best {
				best, at = c, n
			}
		}
		if at != opt {
			t.Errorf("N_opt %d: working set at %d", opt, at)
		}
	}
}

// Bounds: N_opt 1 cannot shrink; an odd N_opt rounds N_min up; the machine
// cuts N_max; the curve is anchored at the ratios, not at the rounded bounds.
func TestEfficiency_Bounds(t *testing.T) {
	for _, c := range []struct{ opt, machine, min, max int }{
		{1, 128, 1, 2},
		{3, 128, 2, 6},
		{100, 128, 50, 128},
		{128, 128, 64, 128},
		{8, 0, 4, 16}, // machine unknown: no cut
	} {
		e := Efficiency{Opt: c.opt, Machine: c.machine}
		if e.Min() != c.min || e.Max() != c.max {
			t.Errorf("N_opt %d on %d: [%d, %d], want [%d, %d]", c.opt, c.machine, e.Min(), e.Max(), c.min, c.max)
		}
	}
	// N_opt 3, N_min 2: r = 2/3, S/N_opt = 0.4 + 0.25·(1/6)/0.5.
	if got, want := (Efficiency{Opt: 3}).Factor(2), 0.65/(0.4+0.25/3); math.Abs(got-want) > 1e-12 {
		t.Errorf("T(2)/T(3) = %v, want %v", got, want)
	}
	// N_opt 100 on 128: T(128) = 0.65/(0.65 + 0.15·0.28) T_opt.
	if got, want := (Efficiency{Opt: 100, Machine: 128}).Factor(128), 0.65/(0.65+0.15*0.28); math.Abs(got-want) > 1e-12 {
		t.Errorf("T(128)/T(100) = %v, want %v", got, want)
	}
	if RelativeTime(4) != 0.8125 || RelativeTime(0.25) != 3.25 || !math.IsInf(RelativeTime(0), 1) {
		t.Errorf("beyond the curve: %v, %v, %v", RelativeTime(4), RelativeTime(0.25), RelativeTime(0))
	}
}
