package ga

import (
	"math"
	"testing"
)

func TestCost_XMSReadings(t *testing.T) {
	// Three hosts free now; X takes 6 s on {0,1}, Z 1 s on {0}, Y 2 s.
	// Order X, Z, Y with Y on {2}: X 0..6 on {0,1}, Z 6..7 on {0},
	// Y 0..2 on {2}.
	// w = 7, no host idle at the bottom: every cost is 7.
	// Order Z, X, Y: Z 0..1 on {0}; X starts max(1, 0) = 1, ends 7 on {0,1};
	// Y 0..2 on {2}. w = 7, host 1 idle 1 s at the bottom:
	// XMS = 7·(1+1) = 14, continuous 7·(1+1/7) = 8.
	// Order Y, X, Z with Y on {0,1,2}: Y 0..2; X 2..8; Z 8..9 on {0};
	// w = 9; no idle at the bottom, costs 9.
	p := &Problem{Hosts: 3, Tasks: []*Task{
		msFixedTask("X", 6, 3, nil), msFixedTask("Y", 2, 3, nil), msFixedTask("Z", 1, 3, nil),
	}}
	cases := []struct {
		name           string
		order          []int
		rowY           Bits
		ms, xms, xmsCt float64
	}{
		{"X Z Y", []int{0, 2, 1}, msBits(3, 2), 7, 7, 7},
		{"Z X Y", []int{2, 0, 1}, msBits(3, 2), 7, 14, 8},
		{"Y X Z", []int{1, 0, 2}, msBits(3, 0, 1, 2), 9, 9, 9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &Chromosome{Order: tc.order, Map: []Bits{msBits(3, 0, 1), tc.rowY, msBits(3, 0)}}
			var s Schedule
			for _, k := range []struct {
				kind CostKind
				want float64
			}{{MS, tc.ms}, {XMS, tc.xms}, {XMSContinuous, tc.xmsCt}} {
				if got := Evaluate(p, c, k.kind, &s); math.Abs(got-k.want) > 1e-9 {
					t.Errorf("%v = %v, want %v", k.kind, got, k.want)
				}
			}
		})
	}
}

func TestCost_IdleBelowEpsilonIsNotIdle(t *testing.T) {
	// Host 0's running work ends a rounding error after now (0.1+0.2-0.3):
	// the task on {0,1} starts then, so host 1, free now, idles ~5e-17 s,
	// which the indicator reading must not count.
	a, b := 0.1, 0.2 // variables: Go would fold the constants exactly
	p := &Problem{Hosts: 2, Base: []float64{a + b - 0.3, 0}, Tasks: []*Task{msFixedTask("A", 5, 2, nil)}}
	c := &Chromosome{Order: []int{0}, Map: []Bits{msBits(2, 0, 1)}}
	var s Schedule
	Decode(p, c, &s)
	if s.IdleAtStart(p, 1) <= 0 {
		t.Fatalf("test premise: host 1 should idle a little, idles %v", s.IdleAtStart(p, 1))
	}
	if ms, xms := s.Cost(p, MS), s.Cost(p, XMS); xms != ms {
		t.Fatalf("XMS = %v, want the makespan %v", xms, ms)
	}
}

func TestCost_InfiniteRuntimeIsInfiniteCost(t *testing.T) {
	task := msFixedTask("A", 1, 1, nil)
	task.Runtime = func([]int) float64 { return math.NaN() } // a model that failed
	p := &Problem{Hosts: 1, Tasks: []*Task{task}}
	c := &Chromosome{Order: []int{0}, Map: []Bits{msBits(1, 0)}}
	var s Schedule
	for _, k := range []CostKind{MS, XMS, XMSContinuous} {
		if got := Evaluate(p, c, k, &s); !math.IsInf(got, 1) {
			t.Errorf("%v = %v, want +Inf", k, got)
		}
	}
}

func TestCost_ParseNames(t *testing.T) {
	for _, k := range []CostKind{MS, XMS, XMSContinuous} {
		got, err := ParseCost(k.String())
		if err != nil || got != k {
			t.Errorf("ParseCost(%q) = %v, %v", k.String(), got, err)
		}
	}
	if _, err := ParseCost("makespan"); err == nil {
		t.Error("ParseCost accepted an unknown name")
	}
}
