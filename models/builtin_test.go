package models

import (
	"context"
	"math"
	"strings"
	"testing"
)

// ultra1 returns n idle SunUltra1 hosts (speed 1, so s_min = 1).
func ultra1(n int) []HostSpec {
	hs := make([]HostSpec, n)
	for k := range hs {
		hs[k] = HostSpec{Arch: "SunUltra1"}
	}
	return hs
}

func testLibrary(t *testing.T) *Library {
	t.Helper()
	lib, err := LoadDir("testdata/models", DefaultHardware())
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

// closeTo compares with a relative tolerance of 1e-12: the expected values
// below are worked by hand in decimal, the models compute in binary.
func closeTo(got, want float64) bool {
	return math.Abs(got-want) <= 1e-12*math.Max(1, math.Abs(want))
}

func TestBuiltins_HandComputed(t *testing.T) {
	lib := testLibrary(t)
	mixed := []HostSpec{{"SunUltra1", 0}, {"SunSPARC10", 0}, {"SunUltra1", 0}, {"SunUltra1", 0}}
	cases := []struct {
		name   string
		model  string
		params map[string]float64
		hosts  []HostSpec
		want   float64
	}{
		// warwick, C_cpu=1000, C_com=10: t = C_cpu/(i·s_min) + C_com·i
		{"warwick 1 host", "particles", nil, ultra1(1), 1010},   // 1000/1 + 10
		{"warwick 10 hosts", "particles", nil, ultra1(10), 200}, // 1000/10 + 100: the peak i* = sqrt(1000/10)
		// s_min = SunSPARC10 = 0.35: 1000/(4·0.35) + 40 = 714.285714… + 40
		{"warwick slowest governs", "particles", nil, mixed, 1000/1.4 + 40},
		// s = 25/(1+1) = 12.5 and 1.6/(1+0.6) = 1: s_min = 1; 1000/2 + 20
		{"warwick load", "particles", nil, []HostSpec{{"x86_64", 1}, {"SunUltra5", 0.6}}, 520},
		{"warwick job overrides default", "particles", map[string]float64{"C_com": 0}, ultra1(2), 500},
		{"warwick all params from job", "nodefaults", map[string]float64{"C_cpu": 90, "C_com": 1}, ultra1(3), 33}, // 90/3 + 3

		// amdahl, T1=600, f=0.1: t = T1·(f + (1−f)/i)/s_min
		{"amdahl 1 host", "solver", nil, ultra1(1), 600},
		{"amdahl 4 hosts", "solver", nil, ultra1(4), 195}, // 600·(0.1 + 0.225)
		// s_min = 1.6/(1+1) = 0.8: 600·(0.1 + 0.3)/0.8 = 240/0.8
		{"amdahl load", "solver", nil, []HostSpec{{"SunUltra5", 0}, {"SunUltra5", 1}, {"x86_64", 0}}, 300},
		{"amdahl f=0", "solver", map[string]float64{"f": 0}, ultra1(4), 150},

		// downey low variance, T1=1000, A=8, σ=0.5: t = T1/S(i)
		{"downey low n=1", "moldable-low", nil, ultra1(1), 1000},       // S = 8/8
		{"downey low n=4", "moldable-low", nil, ultra1(4), 273.4375},   // S = 32/(8 + 0.25·3) = 32/8.75
		{"downey low n=12", "moldable-low", nil, ultra1(12), 132.8125}, // S = 96/(0.5·7.5 + 12·0.75) = 96/12.75
		{"downey low n=15", "moldable-low", nil, ultra1(15), 125},      // n ≥ 2A−1: S = A
		{"downey low n=64", "moldable-low", nil, ultra1(64), 125},
		// downey high variance, σ=2
		{"downey high n=4", "moldable-high", nil, ultra1(4), 312.5}, // S = 4·8·3/(2·11 + 8) = 96/30
		{"downey high n=10", "moldable-high", nil, ultra1(10), 175}, // S = 240/(2·17 + 8) = 240/42
		{"downey high n=22", "moldable-high", nil, ultra1(22), 125}, // n = A + Aσ − σ: S = 528/66 = 8
		{"downey high n=30", "moldable-high", nil, ultra1(30), 125},
		// s_min = 1.6/(1+3) = 0.4 scales: 273.4375/0.4
		{"downey speed", "moldable-low", nil, []HostSpec{{"SunUltra5", 3}, {"SunUltra1", 0}, {"SunUltra1", 0}, {"SunUltra1", 0}}, 683.59375},

		// table: reference SunUltra1 times {2: 520, 4: 290, 8: 180}; x86_64 {1: 38, 4: 11}
		{"table measured", "measured", nil, ultra1(4), 290},
		{"table interpolated", "measured", nil, ultra1(6), 235}, // 290 + (180−290)·2/4
		{"table clamped above", "measured", nil, ultra1(16), 180},
		{"table work-conserving below", "measured", nil, ultra1(1), 1040},                           // 520·2/1
		{"table scaled arch", "measured", nil, []HostSpec{{"SunUltra5", 0}, {"SunUltra5", 0}}, 325}, // 520·1/1.6
		{"table own row", "measured", nil, []HostSpec{{"x86_64", 0}, {"x86_64", 0}}, 29},            // 38 + (11−38)·1/3
		// x86_64 at 4 hosts: 11; SunUltra1 at load 1: 290·2 = 580 governs
		{"table mixed", "measured", nil, []HostSpec{{"x86_64", 0}, {"SunUltra1", 1}, {"x86_64", 0}, {"x86_64", 0}}, 580},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := lib.Get(c.model)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Predict(context.Background(), Scenario{Params: c.params, Hosts: c.hosts})
			if err != nil {
				t.Fatal(err)
			}
			if !closeTo(got, c.want) {
				t.Errorf("got %.15g, want %.15g", got, c.want)
			}
		})
	}
}

func TestBuiltins_OrderFree(t *testing.T) {
	lib := testLibrary(t)
	for _, name := range lib.Names() {
		m, _ := lib.Get(name)
		of, ok := m.(OrderFree)
		if !ok || !of.HostOrderIrrelevant() {
			t.Errorf("%s: built-in not order-free", name)
		}
	}
}

func TestBuiltins_Errors(t *testing.T) {
	lib := testLibrary(t)
	cases := []struct {
		name, model string
		params      map[string]float64
		hosts       []HostSpec
		want        string
	}{
		{"unknown arch", "particles", nil, []HostSpec{{"SunUltra1", 0}, {"Cray", 0}}, `models: unknown architecture "Cray"`},
		{"unknown arch in table", "measured", nil, []HostSpec{{"Cray", 0}}, `models: unknown architecture "Cray"`},
		{"missing param", "nodefaults", map[string]float64{"C_cpu": 1}, ultra1(1), `models: model "nodefaults" (warwick): missing parameter "C_com"`},
		{"unknown param", "particles", map[string]float64{"Ccpu": 1}, ultra1(1), `unknown parameter "Ccpu"`},
		{"table takes no params", "measured", map[string]float64{"N": 1}, ultra1(1), `unknown parameter "N"`},
		{"bad fraction", "solver", map[string]float64{"f": 1.5}, ultra1(1), "parameter f = 1.5, want in [0, 1]"},
		{"NaN param", "particles", map[string]float64{"C_cpu": math.NaN()}, ultra1(1), "parameter C_cpu = NaN"},
		{"A below 1", "moldable-low", map[string]float64{"A": 0.5}, ultra1(1), "parameter A = 0.5, want >= 1"},
		{"no hosts", "solver", nil, nil, "models: no hosts"},
		{"no hosts table", "measured", nil, nil, "models: no hosts"},
		{"negative load", "particles", nil, []HostSpec{{"SunUltra1", -0.5}}, "invalid load -0.5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, _ := lib.Get(c.model)
			_, err := m.Predict(context.Background(), Scenario{Params: c.params, Hosts: c.hosts})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m, _ := lib.Get("particles")
	if _, err := m.Predict(ctx, Scenario{Hosts: ultra1(1)}); err != context.Canceled {
		t.Errorf("cancelled context: %v", err)
	}
}

func TestDowneySpeedup_BranchesMeet(t *testing.T) {
	// The formula's pieces must agree where they meet, and σ = 1 is in both
	// the low- and the high-variance families.
	for _, c := range []struct{ n, a, sigma float64 }{
		{8, 8, 0.5},   // n = A
		{15, 8, 0.5},  // n = 2A−1
		{22, 8, 2},    // n = A + Aσ − σ
		{5, 8, 1},     // σ = 1
		{3.5, 3.5, 0}, // σ = 0: linear up to A
	} {
		below := DowneySpeedup(c.n-1e-9, c.a, c.sigma)
		above := DowneySpeedup(c.n+1e-9, c.a, c.sigma)
		if math.Abs(below-above) > 1e-6 {
			t.Errorf("%+v: S jumps from %v to %v", c, below, above)
		}
	}
	// σ = 1 by the high-variance formula: n·A·2/(n + 2A − 1) = 5·8·2/20 = 4.
	if got := DowneySpeedup(5, 8, 1); !closeTo(got, 4) {
		t.Errorf("S(5; A=8, σ=1) = %v, want 4", got)
	}
	if got := DowneySpeedup(5, 8, 1+1e-12); math.Abs(got-4) > 1e-9 {
		t.Errorf("high-variance S(5; A=8, σ=1+ε) = %v, want 4", got)
	}
}
