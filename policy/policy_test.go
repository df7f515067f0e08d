package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"msched/ga"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// harness drives a policy through snapshots and records its plans, after
// Nomad's scheduler test harness.
type harness struct {
	t     *testing.T
	p     Policy
	plans []Plan
}

func newHarness(t *testing.T, name string, o Options) *harness {
	t.Helper()
	p, err := New(name, o)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, p: p}
}

func (h *harness) plan(s Snapshot) Plan {
	h.t.Helper()
	pl, err := h.p.Plan(context.Background(), s)
	if err != nil {
		h.t.Fatalf("%s: %v", h.p.Name(), err)
	}
	h.plans = append(h.plans, pl)
	return pl
}

func hosts(n int) []Host {
	hs := make([]Host, n)
	for i := range hs {
		hs[i] = Host{Name: fmt.Sprintf("h%d", i), Arch: "generic"}
	}
	return hs
}

func job(id string, submit int, min, max int, est time.Duration) QueuedJob {
	return QueuedJob{ID: id, Name: id, Submit: t0.Add(time.Duration(submit) * time.Second), Min: min, Max: max, Estimate: est}
}

// Every policy: jobs that start now use only hosts that are free now, each
// host at most once; the others are planned later; impossible jobs are
// rejected with a reason.
func TestPolicies_StartOnlyOnFreeHosts(t *testing.T) {
	for _, name := range []string{"fifo", "greedy", "ga-ms", "ga-xms", "ga-xms-continuous"} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, name, Options{Seed: 1, Generations: 20})
			s := Snapshot{
				Now:     t0.Add(time.Minute),
				Hosts:   hosts(4),
				Running: []RunningJob{{ID: "R", Hosts: []string{"h0"}, Start: t0, End: t0.Add(10 * time.Minute)}},
				Queue: []QueuedJob{
					job("A", 1, 1, 1, 30*time.Second),
					job("B", 2, 2, 2, 60*time.Second),
					job("C", 3, 1, 1, 30*time.Second),
					job("BIG", 4, 5, 5, time.Second),
				},
			}
			pl := h.plan(s)
			if len(pl.Reject) != 1 || pl.Reject[0].Job != "BIG" || !strings.Contains(pl.Reject[0].Reason, "needs at least 5 hosts, only 4") {
				t.Fatalf("rejections = %+v, want BIG needing 5 of 4 hosts", pl.Reject)
			}
			used := map[string]bool{}
			for _, p := range pl.StartNow {
				if !p.Start.Equal(s.Now) {
					t.Errorf("%s starts now at %v, want %v", p.Job, p.Start, s.Now)
				}
				for _, hn := range p.Hosts {
					if hn == "h0" {
						t.Errorf("%s started on busy host h0", p.Job)
					}
					if used[hn] {
						t.Errorf("host %s given twice", hn)
					}
					used[hn] = true
				}
			}
			if len(pl.StartNow) == 0 {
				t.Fatal("nothing started although three hosts are free")
			}
			if got := len(pl.StartNow) + len(pl.Later); got != 3 {
				t.Fatalf("placed %d jobs, want 3", got)
			}
			for _, p := range pl.Later {
				if !p.Start.After(s.Now) {
					t.Errorf("later job %s starts at %v, not after now", p.Job, p.Start)
				}
			}
		})
	}
}

// overtakeRounds plays a stream to ga-xms with the given MaxJumps: WIDE
// needs all 4 hosts, one of which is busy for 100 s, and 1-host jobs
// S1..S6 arrive one a second behind it and could always start on the 3
// free ones, overtaking it. It returns how many jobs each round started,
// and fails t if WIDE ever starts (h0 is busy throughout).
func overtakeRounds(t *testing.T, maxJumps int) []int {
	t.Helper()
	h := newHarness(t, "ga-xms", Options{Seed: 3, Generations: 30, MaxJumps: new(maxJumps)})
	running := []RunningJob{{ID: "R", Hosts: []string{"h0"}, Start: t0, End: t0.Add(100 * time.Second)}}
	queue := []QueuedJob{job("WIDE", 0, 4, 4, 50*time.Second)}
	var rounds []int
	for i := 1; i <= 6; i++ {
		queue = append(queue, job(fmt.Sprintf("S%d", i), i, 1, 1, 10*time.Second))
		pl := h.plan(Snapshot{Now: t0.Add(time.Duration(i) * time.Second), Hosts: hosts(4), Running: running, Queue: queue})
		ids, _ := started(pl)
		if slices.Contains(ids, "WIDE") {
			t.Fatal("WIDE started while h0 is busy")
		}
		if maxJumps == 0 && !slices.ContainsFunc(pl.Later, func(l Placement) bool { return l.Job == "WIDE" && l.Start.Equal(running[0].End) }) {
			t.Fatalf("MaxJumps 0, round %d: WIDE is not placed first, at R's end: later %+v", i, pl.Later)
		}
		queue = slices.DeleteFunc(queue, func(q QueuedJob) bool { return slices.Contains(ids, q.ID) })
		rounds = append(rounds, len(ids))
	}
	return rounds
}

// A job overtaken MaxJumps times is placed first: no later job may then
// start on a host it needs. With MaxJumps 0 it is placed first from the
// start: WIDE needs every host, so nothing overtakes it.
func TestGA_OvertakingIsBounded(t *testing.T) {
	for _, maxJumps := range []int{2, 0} {
		overtakes := 0
		for i, n := range overtakeRounds(t, maxJumps) {
			overtakes += n
			if overtakes > maxJumps && n > 0 {
				t.Fatalf("MaxJumps %d: round %d: %d jobs overtook WIDE after it had been overtaken %d times", maxJumps, i+1, n, overtakes-n)
			}
		}
		if maxJumps > 0 && overtakes == 0 {
			t.Fatal("no small job ever started: the test shows nothing")
		}
	}
}

// With MaxJumps < 0 (unbounded) the same stream keeps overtaking: the
// bound above is what stops it.
func TestGA_UnboundedOvertakingForComparison(t *testing.T) {
	overtakes := 0
	for _, n := range overtakeRounds(t, -1) {
		overtakes += n
	}
	if overtakes <= 2 {
		t.Fatalf("unbounded GA overtook only %d times; the bounded test would prove nothing", overtakes)
	}
}

// A failing predictor falls back to the job's estimate.
func TestBuilder_PredictionFallsBackToEstimate(t *testing.T) {
	fail := PredictorFunc(func(context.Context, *QueuedJob, []Host) (time.Duration, error) {
		return 0, fmt.Errorf("model crashed")
	})
	h := newHarness(t, "fifo", Options{Predictor: fail})
	pl := h.plan(Snapshot{Now: t0, Hosts: hosts(1), Queue: []QueuedJob{job("A", 0, 1, 1, 42*time.Second), job("B", 1, 1, 1, 0)}})
	if len(pl.StartNow) != 1 || pl.StartNow[0].Predicted != 42*time.Second {
		t.Fatalf("start now = %+v, want A predicted 42s (its estimate)", pl.StartNow)
	}
	if len(pl.Later) != 1 || pl.Later[0].Predicted != time.Hour || !pl.Later[0].Start.Equal(t0.Add(42*time.Second)) {
		t.Fatalf("later = %+v, want B at +42s with the 1h fallback", pl.Later)
	}
}

func TestNew_UnknownPolicy(t *testing.T) {
	_, err := New("nope", Options{})
	if err == nil || !strings.Contains(err.Error(), "ga-xms") {
		t.Fatalf("err = %v, want the list of known policies", err)
	}
}

// With a wall-time budget, a decision that follows the previous one closely
// (a burst) stops once the best schedule has stalled for Stall generations;
// one after a quiet spell keeps its budget; a fixed generation count
// (simulation) ignores Stall.
func TestGA_StallEndsBurstDecisionsEarly(t *testing.T) {
	s := Snapshot{Now: t0, Hosts: hosts(4), Queue: []QueuedJob{job("a", 0, 1, 1, time.Minute)}}
	p := newGA("ga-xms", 0, Options{Seed: 1, TimeBudget: 10 * time.Second, Stall: 5}) // the budget would fail the test
	p.last = time.Now()
	if _, err := p.Plan(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if g := p.Generations(); g != 5 {
		t.Errorf("burst decision on a one-job problem ran %d generations, want Stall = 5 (nothing can improve)", g)
	}
	q := newGA("ga-xms", 0, Options{Seed: 1, TimeBudget: 20 * time.Millisecond, Stall: 5})
	q.last = time.Now().Add(-time.Second) // a quiet spell
	if _, err := q.Plan(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if g := q.Generations(); g <= 5 {
		t.Errorf("decision after a quiet spell stopped after %d generations, want the whole budget", g)
	}
	r := newGA("ga-xms", 0, Options{Seed: 1, Generations: 12, Stall: 5})
	r.last = time.Now()
	if _, err := r.Plan(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if g := r.Generations(); g != 12 {
		t.Errorf("fixed-count decision ran %d generations, want 12", g)
	}
}

// The GA's best schedule is dispatched aligned only when alignment does not
// make it cost more. Hosts h1 and h2 are busy for 10 s; L (2 hosts, 10 s)
// must go first; S takes 5 s on one host. The GA's schedule puts L on
// {h1, h2} at 10 s and S on h0 now: no host idles from now, XMS = w = 20.
// Aligned, L would take h0 (free first) and h1, and S would wait for h2:
// h0 idles 10 s, XMS = 40. Under MS the two tie at 20, and alignment is kept.
func TestGA_DispatchesAlignedOnlyIfNotWorse(t *testing.T) {
	set := func(hs ...int) ga.Bits {
		b := ga.NewBits(3)
		for _, h := range hs {
			b.Set(h)
		}
		return b
	}
	fixed := func(id string, n int, d float64) *ga.Task {
		return &ga.Task{ID: id, Min: n, Max: n, Runtime: func([]int) float64 { return d }}
	}
	prob := &ga.Problem{Hosts: 3, Base: []float64{0, 10, 10},
		Tasks: []*ga.Task{fixed("L", 2, 10), fixed("S", 1, 5)}, First: []int{0}}
	c := &ga.Chromosome{Order: []int{0, 1}, Map: []ga.Bits{set(1, 2), set(0)}}
	for _, tc := range []struct {
		cost    ga.CostKind
		sOnHost int
	}{{ga.XMS, 0}, {ga.MS, 2}} {
		got := newGA("ga", tc.cost, Options{}).dispatchable(prob, c)
		var s ga.Schedule
		ga.Decode(prob, got, &s)
		if !got.Map[1].Has(tc.sOnHost) {
			t.Errorf("%v: S dispatched on %v, want host %d", tc.cost, got.Map[1].Hosts(nil), tc.sOnHost)
		}
		if tc.cost == ga.XMS && s.Start[1] != 0 {
			t.Errorf("XMS: S starts at %v, want now", s.Start[1])
		}
	}
}
