package profiler

import (
	"math"
	"path/filepath"
	"testing"
)

func newMem(t *testing.T) *Profiler {
	t.Helper()
	p, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func observeAll(t *testing.T, p *Profiler, exe, user string, procs int, secs ...float64) {
	t.Helper()
	for _, s := range secs {
		if err := p.Observe(exe, user, procs, s); err != nil {
			t.Fatal(err)
		}
	}
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.6g, want %.6g (±%g)", what, got, want, tol)
	}
}

func TestProcBin(t *testing.T) {
	for _, c := range []struct{ p, bin int }{{1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 3}, {8, 3}, {9, 4}, {16, 4}, {17, 5}, {128, 7}} {
		if got := ProcBin(c.p); got != c.bin {
			t.Errorf("ProcBin(%d) = %d, want %d", c.p, got, c.bin)
		}
	}
}

// Runs of 10, 12, 14, 16, 18 s: mean 14, s² = 40/4 = 10, standard error
// √(10/5) = √2; t(4, 0.975) = 2.776445 (tables), t(4, 0.95) = 2.131847.
func TestEstimate_MeanAndTInterval(t *testing.T) {
	p := newMem(t)
	observeAll(t, p, "a", "u", 1, 10, 12, 14, 16, 18)
	e, ok := p.Estimate("a", "u", 1, 0)
	if !ok {
		t.Fatal("no estimate")
	}
	near(t, "mean", e.Mean, 14, 1e-12)
	near(t, "half-width 95%", e.HalfWidth, 2.776445*math.Sqrt2, 1e-5)
	near(t, "upper", e.Upper(), 14+2.776445*math.Sqrt2, 1e-5)
	if e.Source != "user:mean" || e.N != 5 || e.Level != 0.95 {
		t.Errorf("estimate %+v, want user:mean of 5 at 0.95", e)
	}

	p90, err := New(Options{Confidence: 0.90})
	if err != nil {
		t.Fatal(err)
	}
	observeAll(t, p90, "a", "u", 1, 10, 12, 14, 16, 18)
	e, _ = p90.Estimate("a", "u", 1, 0)
	near(t, "half-width 90%", e.HalfWidth, 2.131847*math.Sqrt2, 1e-5)

	if _, err := New(Options{Confidence: 1}); err == nil {
		t.Error("confidence 1 accepted")
	}
}

// The thesis's example (§4.3.3): bin means 8350, 2500 and 1700 s at 1, 4
// and 8 processors lie on T(p) = 8000/p + 300 + 50p, so T(16) = 1600 s.
// Each bin holds two runs ±100 s about its mean: s² = 20000, variance of
// the mean 10000, equal weights. T(16) = Σ zₖ·ȳₖ with z = (2/7, −5/2,
// 45/14) (solving Xᵀz = (1/16, 1, 16)), so its standard error is
// 100·‖z‖ = 408.2066 s, and with 6 − 3 = 3 degrees of freedom,
// t(3, 0.975) = 3.182446: half-width 1299.10 s.
func TestEstimate_WLSFitRecoversThesisExample(t *testing.T) {
	p := newMem(t)
	observeAll(t, p, "fit", "u", 1, 8250, 8450)
	observeAll(t, p, "fit", "u", 4, 2400, 2600)
	observeAll(t, p, "fit", "u", 8, 1600, 1800)

	f, ok := FitBins(p.Bins(LevelUser, "fit", "u", 0))
	if !ok {
		t.Fatal("no fit from three bins")
	}
	near(t, "a", f.A, 8000, 1e-6)
	near(t, "b", f.B, 300, 1e-6)
	near(t, "c", f.C, 50, 1e-6)

	e, ok := p.Estimate("fit", "u", 16, 0)
	if !ok || e.Source != "user:fit" {
		t.Fatalf("estimate %+v, want user:fit", e)
	}
	near(t, "T(16)", e.Mean, 1600, 1e-6)
	z := []float64{2.0 / 7, -2.5, 45.0 / 14}
	se := 100 * math.Sqrt(z[0]*z[0]+z[1]*z[1]+z[2]*z[2])
	near(t, "se", f.SE(16), se, 1e-6)
	near(t, "half-width", e.HalfWidth, 3.182446*se, 1e-3)

	// Inside the range the fit, not the bin mean, answers: T(2) = 4400.
	e, _ = p.Estimate("fit", "u", 2, 0)
	near(t, "T(2)", e.Mean, 4000+300+100, 1e-6)
}

// A fourth bin off the curve pulls the fit in proportion to its weight
// n/s²: with a large spread it barely moves T(16), with a small one it
// moves it a lot.
func TestFitBins_WeightsByVarianceOfMean(t *testing.T) {
	exact := []Stats{}
	add := func(bins []Stats, p int, secs ...float64) []Stats {
		b := ProcBin(p)
		for len(bins) <= b {
			bins = append(bins, Stats{})
		}
		for _, s := range secs {
			bins[b].Add(s, p)
		}
		return bins
	}
	exact = add(exact, 1, 8250, 8450)
	exact = add(exact, 4, 2400, 2600)
	exact = add(exact, 8, 1600, 1800)
	// T(2) = 4400 on the curve; the fourth bin says 5400.
	wide := add(append([]Stats(nil), exact...), 2, 5400-3000, 5400+3000)
	tight := add(append([]Stats(nil), exact...), 2, 5400-10, 5400+10)
	fw, ok1 := FitBins(wide)
	ft, ok2 := FitBins(tight)
	if !ok1 || !ok2 {
		t.Fatal("no fit")
	}
	dw, dt := math.Abs(fw.At(2)-4400), math.Abs(ft.At(2)-4400)
	if !(dw < 50 && dt > 900) {
		t.Errorf("T(2) moved %.1f s with a wide off-curve bin, %.1f s with a tight one; want < 50 and > 900", dw, dt)
	}
}

// A bin of one run takes the pooled within-bin variance; with no bin of
// two runs there is no fit.
func TestFitBins_SingleRunBins(t *testing.T) {
	var bins [4]Stats
	bins[0].Add(8350, 1)
	bins[2].Add(2400, 4)
	bins[2].Add(2600, 4)
	bins[3].Add(1700, 8)
	f, ok := FitBins(bins[:])
	if !ok {
		t.Fatal("no fit with pooled variance")
	}
	near(t, "T(16)", f.At(16), 1600, 1e-6)
	var ones [4]Stats
	ones[0].Add(8350, 1)
	ones[2].Add(2500, 4)
	ones[3].Add(1700, 8)
	if _, ok := FitBins(ones[:]); ok {
		t.Error("fit from single-run bins, which carry no spread")
	}
}

func TestEstimate_FallBackOrder(t *testing.T) {
	p := newMem(t)
	observeAll(t, p, "x", "u", 2, 100, 110, 120)
	observeAll(t, p, "x", "v", 2, 200, 210)
	observeAll(t, p, "x", "s", 2, 500)
	observeAll(t, p, "y", "w", 2, 1000, 1100)
	cases := []struct {
		exe, user string
		procs     int
		source    string
		mean      float64
	}{
		{"x", "u", 2, "user:mean", 110},
		{"x", "v", 2, "user:mean", 205},
		{"x", "s", 2, "executable:mean", (330 + 410 + 500) / 6.0}, // one run of its own: no interval
		{"x", "new", 2, "executable:mean", (330 + 410 + 500) / 6.0},
		{"z", "u", 2, "system:mean", (330 + 410 + 500 + 2100) / 8.0},
		{"x", "u", 4, "system:all", (330 + 410 + 500 + 2100) / 8.0}, // no bin 3–4 anywhere, no fit
	}
	for _, c := range cases {
		e, ok := p.Estimate(c.exe, c.user, c.procs, 0)
		if !ok || e.Source != c.source {
			t.Errorf("%s/%s on %d: %+v, want %s", c.exe, c.user, c.procs, e, c.source)
			continue
		}
		near(t, c.exe+"/"+c.user+" mean", e.Mean, c.mean, 1e-9)
	}
	if _, ok := newMem(t).Estimate("x", "u", 1, 0); ok {
		t.Error("an empty profiler gave an estimate")
	}
}

// Runs of about 11 s and about 1050 s: a job that has run 500 s is one of
// the long ones. Run-time bins are 2^¼ wide: 11 s and 10 s share a bin
// below 11.5 s's, 12 s shares 11.5 s's and is kept.
func TestEstimate_AttainedTime(t *testing.T) {
	p := newMem(t)
	observeAll(t, p, "c", "u", 1, 10, 12, 11, 1000, 1100, 1050)
	e, _ := p.Estimate("c", "u", 1, 0)
	near(t, "mean from 0 s", e.Mean, 530.5, 1e-9)
	e, _ = p.Estimate("c", "u", 1, 500)
	near(t, "mean from 500 s", e.Mean, 1050, 1e-9)
	near(t, "half-width from 500 s", e.HalfWidth, 4.302653*50/math.Sqrt(3), 1e-4) // t(2, 0.975)
	e, _ = p.Estimate("c", "u", 1, 11.5)
	near(t, "mean from 11.5 s", e.Mean, (12+1000+1100+1050)/4.0, 1e-9)

	// Nothing that long was ever seen: the unconditioned estimate, raised
	// past the attained time once E + 3·half-width falls short of it.
	e0, _ := p.Estimate("c", "u", 1, 0)
	e, _ = p.Estimate("c", "u", 1, 2000)
	if e.Mean != e0.Mean || e.Source != "user:mean" {
		t.Errorf("from 2000 s: %+v, want the unconditioned %+v (E + 3·hw = %.0f > 2000)", e, e0, e0.Mean+3*e0.HalfWidth)
	}
	e, _ = p.Estimate("c", "u", 1, 5000)
	near(t, "mean from 5000 s", e.Mean, 10*530.5, 1e-9)
	if e.Source != "user:mean+attained" {
		t.Errorf("source %q", e.Source)
	}
}

func TestOpen_SurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profiler.db")
	p, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	observeAll(t, p, "fit", "u", 1, 8250, 8450)
	observeAll(t, p, "fit", "u", 4, 2400, 2600)
	observeAll(t, p, "fit", "v", 8, 1600, 1800)
	observeAll(t, p, "other", "w", 2, 7, 9, 3000)
	before, _ := p.Estimate("fit", "u", 16, 0)
	cond, _ := p.Estimate("other", "w", 2, 100)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	q, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	if q.Count() != 9 {
		t.Errorf("after reopening: %d runs, want 9", q.Count())
	}
	after, _ := q.Estimate("fit", "u", 16, 0)
	if after != before || before.Source != "executable:fit" {
		t.Errorf("after reopening: %+v, before: %+v (want executable:fit)", after, before)
	}
	if c, _ := q.Estimate("other", "w", 2, 100); c != cond {
		t.Errorf("conditioned after reopening: %+v, before %+v", c, cond)
	}
	observeAll(t, q, "fit", "u", 8, 1700, 1700)
	if e, _ := q.Estimate("fit", "u", 16, 0); e.Source != "user:fit" {
		t.Errorf("after new runs: %+v, want user:fit", e)
	}
}

func TestObserve_Rejects(t *testing.T) {
	p := newMem(t)
	for _, c := range []struct {
		exe   string
		procs int
		secs  float64
	}{{"a", 0, 1}, {"a", 1, -1}, {"a", 1, math.NaN()}, {"a", 1, math.Inf(1)}, {"a\x00b", 1, 1}} {
		if err := p.Observe(c.exe, "u", c.procs, c.secs); err == nil {
			t.Errorf("Observe(%q, %d, %v) accepted", c.exe, c.procs, c.secs)
		}
	}
}
