package ga

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"msched/workload"
)

// blCountTask is a task whose run time depends only on its host count:
// byCount[k-1] seconds on k hosts (homogeneous hosts).
func blCountTask(id string, min, max int, arrival float64, byCount ...float64) *Task {
	return &Task{ID: id, Min: min, Max: max, Arrival: arrival, Runtime: func(h []int) float64 {
		return byCount[len(h)-1]
	}}
}

// blEq2 is the paper's test model on heterogeneous hosts: n tasks with
// t(S) = C_cpu/(|S|·v) + C_com·|S|, v the speed of the slowest host of S
// (speed[h] in [1, 4) when hetero, else 1), peak speedups spread over
// 1..m, random bases when withBase, and a random allowed set for every
// third task.
func blEq2(n, m int, hetero, withBase bool, rng *rand.Rand) *Problem {
	speed := make([]float64, m)
	for h := range speed {
		speed[h] = 1
		if hetero {
			speed[h] = 1 + 3*rng.Float64()
		}
	}
	p := &Problem{Hosts: m}
	if withBase {
		p.Base = make([]float64, m)
		for h := range p.Base {
			if rng.Intn(2) == 0 {
				p.Base[h] = 300 * rng.Float64()
			}
		}
	}
	for j := 0; j < n; j++ {
		cpu := 100 + 900*rng.Float64()
		peak := 1 + rng.Float64()*float64(m-1)
		com := cpu / (peak * peak)
		t := &Task{ID: fmt.Sprint("e", j), Min: 1, Max: m, Runtime: func(hs []int) float64 {
			v := math.Inf(1)
			for _, h := range hs {
				v = math.Min(v, speed[h])
			}
			k := float64(len(hs))
			return cpu/(k*v) + com*k
		}}
		if j%3 == 2 {
			t.Allowed = NewBits(m)
			for t.Allowed.Count() < 2 {
				t.Allowed.Set(rng.Intn(m))
			}
			for h := 0; h < m; h++ {
				if rng.Intn(3) == 0 {
					t.Allowed.Set(h)
				}
			}
			t.Min = 1 + rng.Intn(2)
			t.Max = t.Min + rng.Intn(m)
		}
		p.Tasks = append(p.Tasks, t)
	}
	return p
}

// blETC is a random one-host problem (an inconsistent Braun matrix) with
// optional random bases.
func blETC(n, m int, withBase bool, rng *rand.Rand) *Problem {
	etc, err := workload.GenerateETC("u_i_hilo", n, m, rng)
	if err != nil {
		panic(err)
	}
	p := FromETC(etc)
	if withBase {
		p.Base = make([]float64, m)
		for h := range p.Base {
			p.Base[h] = 2000 * rng.Float64()
		}
	}
	return p
}

// blCheck asserts that c is legal and decodes to the expected string and
// makespan.
func blCheck(t *testing.T, p *Problem, c *Chromosome, order []int, rows [][]int, makespan float64) {
	t.Helper()
	if !Legal(p, c) {
		t.Fatalf("illegal chromosome %+v", c)
	}
	if !slices.Equal(c.Order, order) {
		t.Errorf("order %v, want %v", c.Order, order)
	}
	for j, hs := range rows {
		if got := c.Map[j].Hosts(nil); !slices.Equal(got, hs) {
			t.Errorf("task %d on hosts %v, want %v", j, got, hs)
		}
	}
	var s Schedule
	Decode(p, c, &s)
	if s.Makespan != makespan {
		t.Errorf("decoded makespan %g, want %g", s.Makespan, makespan)
	}
}

func TestFIFO_HandChecked(t *testing.T) {
	p := &Problem{Hosts: 3, Base: []float64{0, 2, 0}, Tasks: []*Task{
		blCountTask("T0", 1, 3, 5, 6, 4, 5),
		blCountTask("T1", 1, 2, 1, 3, 2),
		blCountTask("T2", 2, 2, 1, 0, 4),
	}}
	// Arrival order T1, T2 (tie with T1, higher index), T0.
	// T1: hosts by free time h0(0) h2(0) h1(2); 1 host: 3 s, 2 hosts: 2 s
	//     -> peak 2 on {h0,h2}, runs 0..2; free = [2 2 2].
	// T2: all free at 2, index order; exactly 2 hosts {h0,h1}: 2..6;
	//     free = [6 6 2].
	// T0: by free time h2(2) h0(6) h1(6); 6, 4, 5 s on 1, 2, 3 hosts
	//     -> peak 2 on {h2,h0}, starts max(2,6) = 6, ends 10.
	c, err := FIFO(p)
	if err != nil {
		t.Fatal(err)
	}
	blCheck(t, p, c, []int{1, 2, 0}, [][]int{{0, 2}, {0, 2}, {0, 1}}, 10)
}

func TestGreedy_HandCheckedMoldable(t *testing.T) {
	p := &Problem{Hosts: 3, Tasks: []*Task{
		blCountTask("T0", 1, 3, 0, 9, 5, 4),
		blCountTask("T1", 1, 1, 0, 6),
		blCountTask("T2", 1, 2, 0, 4, 3),
	}}
	// Lengths (shortest run time): T0 4, T1 6, T2 3 -> order T1, T0, T2.
	// T1: one host; every ranking starts at h0: 0..6; free = [6 0 0].
	// T0: earliest free h1 h2 h0: 1 host 0+9 = 9, 2 hosts 0+5 = 5,
	//     3 hosts max(0,0,6)+4 = 10; the fastest ranking (all equal, so
	//     index order h0 h1 h2) gives 15, 11, 10. Best {h1,h2}, ends 5.
	// T2: free = [6 5 5]: {h1} 5+4 = 9, {h1,h2} 5+3 = 8; via h0: 10, 9.
	//     Best {h1,h2}, ends 8. Makespan 8.
	c, err := Greedy(p)
	if err != nil {
		t.Fatal(err)
	}
	blCheck(t, p, c, []int{1, 0, 2}, [][]int{{1, 2}, {0}, {1, 2}}, 8)
}

func TestGreedy_HandCheckedHeterogeneous(t *testing.T) {
	p := FromETC([][]float64{{10, 2, 8}, {4, 3, 1}})
	p.Base = []float64{0, 5, 0}
	// Lengths: T0 2, T1 1 -> order T0, T1.
	// T0: the earliest free host h0 gives 0+10 = 10; by one-host
	//     completion h1 5+2 = 7 beats h2 0+8 = 8 -> h1, ends 7.
	// T1: free = [0 7 0]: h0 4, h1 10, h2 1 -> h2, ends 1.
	// Makespan max(base 5, 7, 1) = 7.
	c, err := Greedy(p)
	if err != nil {
		t.Fatal(err)
	}
	blCheck(t, p, c, []int{0, 1}, [][]int{{1}, {2}}, 7)
}

// blBraun3 is a 3-task, 2-machine ETC on which Min-min, Max-min and
// Sufferage all differ.
func blBraun3() *Problem { return FromETC([][]float64{{2, 4}, {3, 6}, {8, 9}}) }

func TestMinMin_HandChecked(t *testing.T) {
	// Minimum completion times: T0 2 (m0), T1 3 (m0), T2 8 (m0) -> T0 on
	// m0, ready [2 0]. T1: m0 5, m1 6 -> 5; T2: m0 10, m1 9 -> 9.
	// T1 on m0, ready [5 0]; T2 on m1, ends 9.
	p := blBraun3()
	c, err := MinMin(p)
	if err != nil {
		t.Fatal(err)
	}
	blCheck(t, p, c, []int{0, 1, 2}, [][]int{{0}, {0}, {1}}, 9)
}

func TestMaxMin_HandChecked(t *testing.T) {
	// T2's minimum (8 on m0) is the largest -> T2 on m0, ready [8 0].
	// T0: m0 10, m1 4 -> 4; T1: m0 11, m1 6 -> 6. T1 on m1, ready [8 6].
	// T0: m0 10, m1 10 -> tie, lower index m0, ends 10.
	p := blBraun3()
	c, err := MaxMin(p)
	if err != nil {
		t.Fatal(err)
	}
	blCheck(t, p, c, []int{2, 1, 0}, [][]int{{0}, {1}, {0}}, 10)
}

func TestSufferage_HandChecked(t *testing.T) {
	// Pass 1, ready [0 0]: T0 best m0 (2, next 4, sufferage 2) claims m0;
	// T1 best m0 (3, next 6, sufferage 3) takes it; T2 best m0 (8, next 9,
	// sufferage 1) loses. T1 on m0, ready [3 0].
	// Pass 2: T0 m0 5, m1 4 -> m1, sufferage 1; T2 m0 11, m1 9 -> m1,
	// sufferage 2, takes m1. T2 on m1, ready [3 9].
	// Pass 3: T0 m0 5 -> m0, ends 5. Makespan 9.
	p := blBraun3()
	c, err := Sufferage(p)
	if err != nil {
		t.Fatal(err)
	}
	blCheck(t, p, c, []int{1, 2, 0}, [][]int{{0}, {0}, {1}}, 9)
}

func TestDualResponse_HandChecked(t *testing.T) {
	p := blBraun3()
	// Equal weights: every task on its faster host, m0 (2+3+8).
	c, err := DualResponse(p, []float64{0.5, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	blCheck(t, p, c, []int{0, 1, 2}, [][]int{{0}, {0}, {0}}, 13)
	// m0 dearer: T0 1.2 vs 1.6 and T1 1.8 vs 2.4 stay on m0; T2 4.8 vs 3.6
	// goes to m1. Loads 5 and 9.
	c, err = DualResponse(p, []float64{0.6, 0.4})
	if err != nil {
		t.Fatal(err)
	}
	blCheck(t, p, c, []int{0, 1, 2}, [][]int{{0}, {0}, {1}}, 9)
	// Ties of weighted time go to the shorter run (T0: 0.25·6 = 0.75·2, so
	// m1, the higher index; T1: 1 against 3, m0), then the lower index (at
	// equal weights below, T1's equal times go to m0).
	p = FromETC([][]float64{{6, 2}, {4, 4}})
	c, err = DualResponse(p, []float64{0.25, 0.75})
	if err != nil {
		t.Fatal(err)
	}
	blCheck(t, p, c, []int{0, 1}, [][]int{{1}, {0}}, 4)
	c, err = DualResponse(p, []float64{0.5, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	blCheck(t, p, c, []int{0, 1}, [][]int{{1}, {0}}, 4)
	for _, w := range [][]float64{{1}, {-0.5, 1.5}, {math.NaN(), 1}, {math.Inf(1), 0}} {
		if _, err := DualResponse(p, w); err == nil {
			t.Errorf("weights %v accepted", w)
		}
	}
	if _, err := DualResponses(p, []float64{0.5, 0.5}, -1, rand.New(rand.NewSource(1))); err == nil {
		t.Error("DualResponses accepted k = -1")
	}
}

func TestDualResponse_RespectsAllowedAndInfinity(t *testing.T) {
	// T0 may use m1 only; T1 cannot run on m0 (+Inf), even at weight 0
	// there; T2 can run nowhere and still gets an allowed host.
	rows := [][]float64{{1, 5}, {math.Inf(1), 7}, {math.Inf(1), math.Inf(1)}}
	p := FromETC(rows)
	p.Tasks[0].Allowed = msBits(2, 1)
	p.Tasks[2].Allowed = msBits(2, 1)
	c, err := DualResponse(p, []float64{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	for j, want := range []int{1, 1, 1} {
		if got := c.Map[j].Hosts(nil); !slices.Equal(got, []int{want}) {
			t.Errorf("task %d on %v, want [%d]", j, got, want)
		}
	}
	if !Legal(p, c) {
		t.Error("illegal chromosome")
	}
}

// braunWithLP is a generated Braun instance of class (512 × 16, instance
// seed seed) and its LP bound.
func braunWithLP(t *testing.T, class string, seed int64) (*Problem, LPResult) {
	t.Helper()
	etc, err := workload.GenerateETC(class, workload.BraunTasks, workload.BraunMachines, rand.New(rand.NewSource(seed)))
	if err != nil {
		t.Fatal(err)
	}
	p := FromETC(etc)
	lp, err := LPBound(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return p, lp
}

// TestDualResponse_DescendsNearerThanMinMin is the claim DualResponse's
// comment makes, on one generated instance of each of Braun's twelve
// classes: a single descent by moves from the dual response at the LP
// bound's weights ends lower than the same descent from Min-min, and within
// 3 % of the bound.
func TestDualResponse_DescendsNearerThanMinMin(t *testing.T) {
	for _, class := range workload.Classes() {
		p, lp := braunWithLP(t, class, 2)
		dual, err := DualResponse(p, lp.Weights)
		if err != nil {
			t.Fatal(err)
		}
		mm, err := MinMin(p)
		if err != nil {
			t.Fatal(err)
		}
		var got [2]float64
		for i, c := range []*Chromosome{dual, mm} {
			var l localScratch
			var x alignScratch
			x.resize(len(p.Tasks), p.Hosts, p.Words())
			l.resize(len(p.Tasks), p.Hosts, p.Words())
			localSearch(p, c, &l, &x, math.Inf(-1), rand.New(rand.NewSource(1)))
			var s Schedule
			got[i] = Evaluate(p, c, MS, &s) / lp.Bound
		}
		if !(got[0] < got[1]) || got[0] > 1.03 {
			t.Errorf("%s: descended dual response %.4f of the LP bound, descended Min-min %.4f", class, got[0], got[1])
		}
	}
}

// TestDualResponses_JitterSpreadsThePopulation: the first response is the
// one at the LP's weights, the others differ from it (the jitter flips the
// LP's near-ties) yet stay close (a handful of tasks), and a seed replays
// them.
func TestDualResponses_JitterSpreadsThePopulation(t *testing.T) {
	p, lp := braunWithLP(t, "u_s_hihi", 1)
	first, err := DualResponse(p, lp.Weights)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := DualResponses(p, lp.Weights, 7, rand.New(rand.NewSource(5)))
	if err != nil {
		t.Fatal(err)
	}
	again, err := DualResponses(p, lp.Weights, 7, rand.New(rand.NewSource(5)))
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 7 {
		t.Fatalf("%d responses, want 7", len(cs))
	}
	if !sameChrom(cs[0], first) {
		t.Error("the first response is not the one at the LP's weights")
	}
	for i, c := range cs[1:] {
		moved := 0
		for j := range c.Map {
			if !c.Map[j].Equal(first.Map[j]) {
				moved++
			}
		}
		if moved == 0 || moved > len(p.Tasks)/10 {
			t.Errorf("response %d puts %d of %d tasks elsewhere than the first; want a few", i+1, moved, len(p.Tasks))
		}
		if !sameChrom(c, again[i+1]) {
			t.Errorf("response %d differs between two runs of one seed", i+1)
		}
	}
	if cs, err := DualResponses(p, lp.Weights, 0, rand.New(rand.NewSource(5))); err != nil || len(cs) != 0 {
		t.Errorf("k = 0: %d responses, %v", len(cs), err)
	}
}

func TestOneHostHeuristics_RejectMoldableTasks(t *testing.T) {
	p := blBraun3()
	p.Tasks[1].Max = 2
	dual := func(p *Problem) (*Chromosome, error) { return DualResponse(p, []float64{0.5, 0.5}) }
	for i, h := range []func(*Problem) (*Chromosome, error){MinMin, MaxMin, Sufferage, dual} {
		if _, err := h(p); err == nil || !strings.Contains(err.Error(), `"t1"`) {
			t.Errorf("heuristic %d: error %v, want one naming task t1", i, err)
		}
	}
}

func TestOneHostHeuristics_RespectAllowedAndBase(t *testing.T) {
	// T0 is fastest on m0 but may only use m1; m1 is busy until 3.
	p := FromETC([][]float64{{1, 5}, {2, 2}})
	p.Base = []float64{0, 3}
	p.Tasks[0].Allowed = msBits(2, 1)
	// Min-min: T0 only m1: 3+5 = 8; T1: m0 2, m1 5 -> 2. T1 on m0 first,
	// then T0 on m1, ends 8.
	c, err := MinMin(p)
	if err != nil {
		t.Fatal(err)
	}
	blCheck(t, p, c, []int{1, 0}, [][]int{{1}, {0}}, 8)
	// Sufferage: T0's lone host gives it sufferage +Inf; T1 (best m0)
	// does not compete for m1. Both in pass 1, committed in host order.
	c, err = Sufferage(p)
	if err != nil {
		t.Fatal(err)
	}
	blCheck(t, p, c, []int{1, 0}, [][]int{{1}, {0}}, 8)
}

// TestHeuristics_DecodeReproducesSchedule is the property behind the
// heuristics' contract: on random moldable, heterogeneous and one-host
// instances, with bases and allowed sets, the returned string is legal and
// decodes to exactly the makespan the heuristic built, and no heuristic
// beats the lower bound.
func TestHeuristics_DecodeReproducesSchedule(t *testing.T) {
	type heur struct {
		name string
		run  func(*Problem) (*listState, error)
	}
	moldable := []heur{{"fifo", fifo}, {"greedy", greedy}}
	oneHost := append(slices.Clone(moldable),
		heur{"min-min", func(p *Problem) (*listState, error) { return minMax(p, "min-min", false) }},
		heur{"max-min", func(p *Problem) (*listState, error) { return minMax(p, "max-min", true) }},
		heur{"sufferage", sufferage})
	for seed := int64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewSource(seed))
		cases := []struct {
			p     *Problem
			heurs []heur
		}{
			{blEq2(20, 16, false, seed%2 == 0, rng), moldable},
			{blEq2(15, 8, true, seed%2 == 1, rng), moldable},
			{blETC(40, 8, seed%2 == 0, rng), oneHost},
		}
		for ci, c := range cases {
			lb := LowerBound(c.p)
			for _, h := range c.heurs {
				s, err := h.run(c.p)
				if err != nil {
					t.Fatalf("seed %d case %d %s: %v", seed, ci, h.name, err)
				}
				if !Legal(c.p, s.c) {
					t.Fatalf("seed %d case %d %s: illegal chromosome", seed, ci, h.name)
				}
				var sch Schedule
				Decode(c.p, s.c, &sch)
				if sch.Makespan != s.span {
					t.Errorf("seed %d case %d %s: decodes to %g, heuristic built %g", seed, ci, h.name, sch.Makespan, s.span)
				}
				if lb > sch.Makespan*(1+1e-12) {
					t.Errorf("seed %d case %d %s: makespan %g below lower bound %g", seed, ci, h.name, sch.Makespan, lb)
				}
			}
		}
	}
}

// TestGreedy_BeatsFIFOOnAverage checks that Greedy's look-ahead is worth
// something: over random instances of the paper's model it should be far
// better than FIFO (the paper's Table 1 has GA ≈ 3–4× FIFO in rate; Greedy
// must at least beat FIFO on average).
func TestGreedy_BeatsFIFOOnAverage(t *testing.T) {
	var g, f float64
	for seed := int64(1); seed <= 10; seed++ {
		p := blEq2(20, 16, false, false, rand.New(rand.NewSource(seed)))
		gc, _ := Greedy(p)
		fc, _ := FIFO(p)
		var s Schedule
		g += Evaluate(p, gc, MS, &s)
		f += Evaluate(p, fc, MS, &s)
	}
	if g >= 0.8*f {
		t.Errorf("Greedy total makespan %g is not clearly below FIFO's %g", g, f)
	}
}

// TestMinMin_BeatsMaxMinOnConsistentHiHi reproduces a known result of Braun
// et al. 2001: on u_c_hihi instances Min-min gives a much shorter makespan
// than Max-min (Max-min puts long tasks first and overloads the fast
// machines' neighbours).
func TestMinMin_BeatsMaxMinOnConsistentHiHi(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		etc, err := workload.GenerateETC("u_c_hihi", workload.BraunTasks, workload.BraunMachines, rand.New(rand.NewSource(seed)))
		if err != nil {
			t.Fatal(err)
		}
		p := FromETC(etc)
		var s Schedule
		mm, err := MinMin(p)
		if err != nil {
			t.Fatal(err)
		}
		xm, _ := MaxMin(p)
		a, b := Evaluate(p, mm, MS, &s), Evaluate(p, xm, MS, &s)
		if a >= b {
			t.Errorf("seed %d: Min-min %g not below Max-min %g", seed, a, b)
		}
		if lb := LowerBound(p); lb > a {
			t.Errorf("seed %d: lower bound %g above Min-min %g", seed, lb, a)
		}
	}
}

func TestPeakHosts_Eq2(t *testing.T) {
	// t(i) = 400/i + 4i: i* = sqrt(400/4) = 10 (t = 80; 9 -> 80.44,
	// 11 -> 80.36). Clamped by Max, and by the allowed set.
	mk := func(min, max int) *Task {
		return &Task{ID: "x", Min: min, Max: max, Runtime: func(h []int) float64 {
			return 400/float64(len(h)) + 4*float64(len(h))
		}}
	}
	p := &Problem{Hosts: 16}
	if k := PeakHosts(p, mk(1, 16)); k != 10 {
		t.Errorf("peak %d, want 10", k)
	}
	if k := PeakHosts(p, mk(1, 6)); k != 6 {
		t.Errorf("peak with Max 6: %d, want 6", k)
	}
	if k := PeakHosts(p, mk(12, 16)); k != 12 {
		t.Errorf("peak with Min 12: %d, want 12", k)
	}
	tk := mk(1, 16)
	tk.Allowed = msBits(16, 0, 3, 5, 7)
	if k := PeakHosts(p, tk); k != 4 {
		t.Errorf("peak on 4 allowed hosts: %d, want 4", k)
	}
}
