package ga

import (
	"math"
	"testing"
)

// msFixedTask runs for d seconds on any host set of 1..max hosts; it records
// the host sets it was asked about.
func msFixedTask(id string, d float64, max int, asked *[][]int) *Task {
	return &Task{ID: id, Min: 1, Max: max, Runtime: func(h []int) float64 {
		if asked != nil {
			*asked = append(*asked, append([]int(nil), h...))
		}
		return d
	}}
}

// msDecodeProblem has four hosts whose running work ends at 2, 0, 5 and 1 s,
// and four tasks A..D that take 3, 2, 4 and 1 s on their rows
// A {0,1}, B {1}, C {1,2}, D {0}. Host 3 is never used.
func msDecodeProblem() (*Problem, *Chromosome) {
	p := &Problem{Hosts: 4, Base: []float64{2, 0, 5, 1}, Tasks: []*Task{
		msFixedTask("A", 3, 4, nil),
		msFixedTask("B", 2, 4, nil),
		msFixedTask("C", 4, 4, nil),
		msFixedTask("D", 1, 4, nil),
	}}
	c := &Chromosome{Map: []Bits{msBits(4, 0, 1), msBits(4, 1), msBits(4, 1, 2), msBits(4, 0)}}
	return p, c
}

func TestDecode_HandCheckedWithBase(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name             string
		order            []int
		start, end       []float64 // by task A, B, C, D
		first, free      []float64 // by host
		makespan         float64
		ms, xms, xmsCont float64
	}{{
		// Free = [2 0 5 1].
		// B {1}:   starts max(0)=0,    ends 2.  Free1=2.
		// A {0,1}: starts max(2,2)=2,  ends 5.  Free0=Free1=5.
		// D {0}:   starts 5,           ends 6.  Free0=6.
		// C {1,2}: starts max(5,5)=5,  ends 9.  Free1=Free2=9.
		// Idle from now: only host 1 is free now, and B starts on it at
		// once. Hosts 0, 2 and 3 are busy now, so none idles from 0
		// (host 3's gap after its work, 1..9, does not count).
		// XMS = continuous = 9.
		name:  "B A D C",
		order: []int{1, 0, 3, 2},
		start: []float64{2, 0, 5, 5}, end: []float64{5, 2, 9, 6},
		first: []float64{2, 0, 5, inf}, free: []float64{6, 9, 9, 1},
		makespan: 9, ms: 9, xms: 9, xmsCont: 9,
	}, {
		// A {0,1}: starts max(2,0)=2,  ends 5.  Free0=Free1=5.
		// B {1}:   starts 5,           ends 7.  Free1=7.
		// C {1,2}: starts max(7,5)=7,  ends 11. Free1=Free2=11.
		// D {0}:   starts 5,           ends 6.  Free0=6.
		// Idle from now: host 1 (free now) idles 0..2; the busy hosts
		// count nothing (host 2's gap 5..7 and host 3's 1..11 are after
		// their running work).
		// XMS = 11·(1+1) = 22; continuous 11·(1+2/11) = 13.
		name:  "A B C D",
		order: []int{0, 1, 2, 3},
		start: []float64{2, 5, 7, 5}, end: []float64{5, 7, 11, 6},
		first: []float64{2, 2, 7, inf}, free: []float64{6, 11, 11, 1},
		makespan: 11, ms: 11, xms: 22, xmsCont: 13,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, c := msDecodeProblem()
			c.Order = tc.order
			var s Schedule
			Decode(p, c, &s)
			eq := func(what string, got, want []float64) {
				t.Helper()
				for i := range want {
					if got[i] != want[i] {
						t.Errorf("%s = %v, want %v", what, got, want)
						return
					}
				}
			}
			eq("Start", s.Start, tc.start)
			eq("End", s.End, tc.end)
			eq("First", s.First, tc.first)
			eq("Free", s.Free, tc.free)
			if s.Makespan != tc.makespan {
				t.Errorf("Makespan = %v, want %v", s.Makespan, tc.makespan)
			}
			for _, k := range []struct {
				kind CostKind
				want float64
			}{{MS, tc.ms}, {XMS, tc.xms}, {XMSContinuous, tc.xmsCont}} {
				if got := s.Cost(p, k.kind); math.Abs(got-k.want) > 1e-9 {
					t.Errorf("Cost(%v) = %v, want %v", k.kind, got, k.want)
				}
				if got := Evaluate(p, c, k.kind, &s); math.Abs(got-k.want) > 1e-9 {
					t.Errorf("Evaluate(%v) = %v, want %v", k.kind, got, k.want)
				}
			}
		})
	}
}

func TestDecode_BaseBeyondAllTasksIsTheMakespan(t *testing.T) {
	// One task of 3 s on host 0 (base 0); host 1 is busy until 20 s.
	// w = 20; host 0 is busy from 0 (no idle), host 1 unused with
	// idle 20-20 = 0, so every cost is 20.
	p := &Problem{Hosts: 2, Base: []float64{0, 20}, Tasks: []*Task{msFixedTask("A", 3, 1, nil)}}
	c := &Chromosome{Order: []int{0}, Map: []Bits{msBits(2, 0)}}
	var s Schedule
	for _, k := range []CostKind{MS, XMS, XMSContinuous} {
		if got := Evaluate(p, c, k, &s); got != 20 {
			t.Errorf("%v = %v, want 20", k, got)
		}
	}
}

func TestDecode_EmptyRowTakesTheEarliestAllowedHost(t *testing.T) {
	// Hosts free at 4, 1, 3; the task may use hosts 0 and 2 only, so an
	// empty row lands on host 2 (free at 3) and ends at 3+5 = 8.
	var asked [][]int
	task := msFixedTask("A", 5, 1, &asked)
	task.Allowed = msBits(3, 0, 2)
	p := &Problem{Hosts: 3, Base: []float64{4, 1, 3}, Tasks: []*Task{task}}
	c := &Chromosome{Order: []int{0}, Map: []Bits{NewBits(3)}}
	var s Schedule
	Decode(p, c, &s)
	if s.Start[0] != 3 || s.End[0] != 8 || s.First[2] != 3 {
		t.Fatalf("start %v end %v first %v, want task on host 2 from 3 to 8", s.Start[0], s.End[0], s.First)
	}
	if len(asked) != 1 || len(asked[0]) != 1 || asked[0][0] != 2 {
		t.Fatalf("runtime asked for %v, want [[2]]", asked)
	}
}

func TestDecode_ReusesBuffersAndMemo(t *testing.T) {
	var asked [][]int
	p := &Problem{Hosts: 3, Tasks: []*Task{msFixedTask("A", 2, 3, &asked), msFixedTask("B", 1, 3, &asked)}}
	c := &Chromosome{Order: []int{1, 0}, Map: []Bits{msBits(3, 0, 2), msBits(3, 1)}}
	var s Schedule
	Decode(p, c, &s)
	Decode(p, c, &s)
	if len(asked) != 2 {
		t.Fatalf("runtime called %d times for 2 distinct host sets, want 2: %v", len(asked), asked)
	}
	if allocs := testing.AllocsPerRun(100, func() { Decode(p, c, &s) }); allocs != 0 {
		t.Fatalf("warm Decode allocates %v times", allocs)
	}
}
