package policy

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// plannedStart maps each job of a plan to its planned start in seconds.
func plannedStart(pl Plan) map[string]int {
	out := map[string]int{}
	for _, p := range pl.StartNow {
		out[p.Job] = sec(p.Start)
	}
	for _, p := range pl.Later {
		out[p.Job] = sec(p.Start)
	}
	return out
}

// pyss's compression, not a from-scratch replan. Two hosts.
//
// t=0: X holds h0, predicted to end at 100; Y holds h1 until 20.
// A (2 hosts, 50 s) then B (1 host, 30 s) arrive. Free: [0,20) 0,
// [20,100) 1, [100,∞) 2. A: both hosts at 100 -> [100,150). B: one host
// over [20,50) -> 20.
//
// t=10: X ends early. Compression in arrival order, each job taken out and
// put back with the others in place. A: without A, free is [10,20) 1
// (h0), [20,50) 1 (B holds one), 2 after: A's earliest is 50 (earlier than
// 100). B: without B, [10,20) 1, [20,50) 2, [50,100) 0 (A): B fits at 10,
// now: it starts on h0.
//
// A from-scratch replan at t=10 would give A 20 (h0 free, h1 at 20) and B
// 70: B would lose the slot it held; that is what a fresh policy computes.
func TestConservative_CompressesLikePyss(t *testing.T) {
	h := newHarness(t, "conservative", Options{})
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	a := job("A", 0, 2, 2, 50*time.Second)
	b := job("B", 0, 1, 1, 30*time.Second)
	x := RunningJob{ID: "X", Hosts: []string{"h0"}, Start: t0, End: at(100)}
	y := RunningJob{ID: "Y", Hosts: []string{"h1"}, Start: t0, End: at(20)}

	pl := h.plan(Snapshot{Now: t0, Hosts: hosts(2), Running: []RunningJob{x, y}, Queue: []QueuedJob{a, b}})
	if got := plannedStart(pl); got["A"] != 100 || got["B"] != 20 || len(pl.StartNow) != 0 {
		t.Fatalf("t=0: planned %v, want A 100, B 20, nothing now", got)
	}
	s10 := Snapshot{Now: at(10), Hosts: hosts(2), Running: []RunningJob{y}, Queue: []QueuedJob{a, b}}
	pl = h.plan(s10)
	ids, hs := started(pl)
	if !slices.Equal(ids, []string{"B"}) || !slices.Equal(hs["B"], []string{"h0"}) {
		t.Fatalf("t=10: started %v on %v, want B on h0", ids, hs)
	}
	if got := plannedStart(pl); got["A"] != 50 {
		t.Fatalf("t=10: A planned at %d, want 50", got["A"])
	}
	// A fresh policy sees only t=10: from scratch.
	fresh := plannedStart(newHarness(t, "conservative", Options{}).plan(s10))
	if fresh["A"] != 20 || fresh["B"] != 70 {
		t.Fatalf("from scratch: %v, want A 20, B 70", fresh)
	}
}

// An arrival goes into a hole before earlier jobs' reservations, but never
// into one that would delay them. Four hosts, R holds h0-h2 until 100.
// W (4 hosts, 100 s) is reserved at 100. S1 (1 host, 100 s) fits now on h3
// and ends at 100: it starts. Then, with S1 running on h3: S2 (1 host,
// 10 s) finds no host before 200.
func TestConservative_BackfillsWithoutDelay(t *testing.T) {
	h := newHarness(t, "conservative", Options{})
	r := RunningJob{ID: "R", Hosts: []string{"h0", "h1", "h2"}, Start: t0, End: t0.Add(100 * time.Second)}
	w := job("W", 0, 4, 4, 100*time.Second)
	s1 := job("S1", 1, 1, 1, 100*time.Second)
	pl := h.plan(Snapshot{Now: t0, Hosts: hosts(4), Running: []RunningJob{r}, Queue: []QueuedJob{w, s1}})
	if ids, hs := started(pl); !slices.Equal(ids, []string{"S1"}) || hs["S1"][0] != "h3" {
		t.Fatalf("started %v, want S1 on h3", ids)
	}
	if got := plannedStart(pl); got["W"] != 100 {
		t.Fatalf("W planned at %d, want 100", got["W"])
	}
	// The next call (S2 arrives at t=1; S1 runs on h3 until 101): every
	// host is busy until 100 and W holds all four over [100, 200), so S2
	// (1 host, 10 s) is reserved at 200; W keeps 100.
	rs1 := RunningJob{ID: "S1", Hosts: []string{"h3"}, Start: t0, End: t0.Add(100 * time.Second)}
	s2 := job("S2", 1, 1, 1, 10*time.Second)
	pl = h.plan(Snapshot{Now: t0.Add(time.Second), Hosts: hosts(4), Running: []RunningJob{r, rs1}, Queue: []QueuedJob{w, s2}})
	if got := plannedStart(pl); got["W"] != 100 || got["S2"] != 200 {
		t.Fatalf("t=1: planned %v, want W 100, S2 200", got)
	}
}

// No job's reservation is later than it would be if the jobs behind it did
// not exist (fresh policies on random snapshots: each prefix of the queue).
func TestConservative_LaterJobsNeverDelayEarlier(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	compared := 0
	for i := 0; i < 300; i++ {
		s := randomSnapshot(rng, false)
		full := plannedStart(newHarness(t, "conservative", Options{}).plan(s))
		for k := range s.Queue {
			id := s.Queue[k].ID
			alone := s
			alone.Queue = s.Queue[:k+1]
			want, ok := plannedStart(newHarness(t, "conservative", Options{}).plan(alone))[id]
			if !ok {
				continue // rejected
			}
			if full[id] > want {
				t.Fatalf("snapshot %d: %s reserved at %d with later jobs, %d without", i, id, full[id], want)
			}
			compared++
		}
	}
	if compared < 500 {
		t.Fatalf("compared only %d reservations", compared)
	}
}

// Over whole runs whose jobs end no later than predicted, a reservation
// never moves later from one call to the next, and every job starts at
// its last reservation (pyss asserts the first; the second is what makes
// the plans honest).
func TestConservative_ReservationsNeverSlip(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		jobs := randomJobs(rand.New(rand.NewSource(seed)), 200, 16, false, false)
		res := drive(t, mustNew(t, "conservative"), hosts(16), jobs)
		moved := 0
		for id, plans := range res.plans {
			for k := 1; k < len(plans); k++ {
				if plans[k] > plans[k-1] {
					t.Fatalf("seed %d: %s moved from %d to %d (plans %v)", seed, id, plans[k-1], plans[k], plans)
				}
				if plans[k] < plans[k-1] {
					moved++
				}
			}
			if res.start[id] != plans[len(plans)-1] {
				t.Fatalf("seed %d: %s started at %d, last planned %d", seed, id, res.start[id], plans[len(plans)-1])
			}
		}
		if moved == 0 {
			t.Fatalf("seed %d: no reservation ever moved earlier; compression untested", seed)
		}
	}
}

// The plan's reservations, with the running jobs, never need more hosts
// than exist at any time, and the hosts named for them never overlap.
func TestConservative_PlanIsAFeasibleSchedule(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	laters := 0
	for i := 0; i < 300; i++ {
		s := randomSnapshot(rng, false)
		pl := newHarness(t, "conservative", Options{}).plan(s)
		type use struct {
			from, to time.Time
			who      string
		}
		byHost := map[string][]use{}
		for _, r := range s.Running {
			end := r.End
			if !end.After(s.Now) {
				end = s.Now.Add(1)
			}
			for _, h := range r.Hosts {
				byHost[h] = append(byHost[h], use{s.Now, end, r.ID})
			}
		}
		for _, h := range s.Hosts {
			if h.FreeAt.After(s.Now) {
				byHost[h.Name] = append(byHost[h.Name], use{s.Now, h.FreeAt, "freeat"})
			}
		}
		for _, p := range append(slices.Clone(pl.StartNow), pl.Later...) {
			var q QueuedJob
			for _, x := range s.Queue {
				if x.ID == p.Job {
					q = x
				}
			}
			if len(p.Hosts) != q.Min {
				t.Fatalf("snapshot %d: %s named %d hosts, wants %d", i, p.Job, len(p.Hosts), q.Min)
			}
			for _, h := range p.Hosts {
				byHost[h] = append(byHost[h], use{p.Start, p.Start.Add(p.Predicted), p.Job})
			}
		}
		laters += len(pl.Later)
		for h, us := range byHost {
			for a := range us {
				for b := a + 1; b < len(us); b++ {
					if us[a].from.Before(us[b].to) && us[b].from.Before(us[a].to) {
						t.Fatalf("snapshot %d: host %s: %s [%v, %v) overlaps %s [%v, %v)", i, h,
							us[a].who, sec(us[a].from), sec(us[a].to), us[b].who, sec(us[b].from), sec(us[b].to))
					}
				}
			}
		}
	}
	if laters < 300 {
		t.Fatalf("only %d later placements checked", laters)
	}
}

// The simulator skips decisions while no host is free, so an arrival can
// first be seen together with the termination that frees a host. pyss saw
// the arrival first, with the terminated job still holding its hosts.
//
// Two hosts. t=0: X holds h0 predicted to 100, Y holds h1 predicted to
// 40; W (2 hosts, 10 s) waits, reserved at 100. At t=5 L (1 host, 60 s)
// arrives unseen (no host free); pyss places it with X on h0 until 100:
// h1 is free from 40 and [40, 100) ends as W starts: L at 40. At t=10 X
// ends early and the policy is asked. Compression in arrival order: W,
// with L holding a host over [40, 100), still cannot have both before
// 100: it stays. L: h0 is free now and [10, 70) fits: L starts now.
//
// Placing L after X's release instead would start L at once too, but W
// would then compress past L to 70. pyss gives W 100.
func TestConservative_UnseenArrivalBeforeTermination(t *testing.T) {
	h := newHarness(t, "conservative", Options{})
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	x := RunningJob{ID: "X", Hosts: []string{"h0"}, Start: t0, End: at(100)}
	y := RunningJob{ID: "Y", Hosts: []string{"h1"}, Start: t0, End: at(40)}
	w := job("W", 0, 2, 2, 10*time.Second)
	l := job("L", 5, 1, 1, 60*time.Second)
	if got := plannedStart(h.plan(Snapshot{Now: t0, Hosts: hosts(2), Running: []RunningJob{x, y}, Queue: []QueuedJob{w}})); got["W"] != 100 {
		t.Fatalf("t=0: W at %d, want 100", got["W"])
	}
	pl := h.plan(Snapshot{Now: at(10), Hosts: hosts(2), Running: []RunningJob{y}, Queue: []QueuedJob{w, l}})
	if got := plannedStart(pl); got["W"] != 100 || got["L"] != 10 || len(pl.StartNow) != 1 {
		t.Fatalf("t=10: planned %v, want L now (10), W 100 (pyss's order of events)", got)
	}
}

func ExampleNew_conservative() {
	p, _ := New("conservative", Options{})
	s := Snapshot{Now: t0, Hosts: hosts(2),
		Running: []RunningJob{{ID: "R", Hosts: []string{"h0"}, End: t0.Add(time.Minute)}},
		Queue: []QueuedJob{
			{ID: "wide", Min: 2, Max: 2, Estimate: time.Minute},
			{ID: "short", Min: 1, Max: 1, Estimate: 30 * time.Second},
			{ID: "long", Min: 1, Max: 1, Estimate: time.Hour},
		}}
	pl, _ := p.Plan(context.Background(), s)
	for _, x := range pl.StartNow {
		fmt.Println("now", x.Job, x.Hosts)
	}
	for _, x := range pl.Later {
		fmt.Println("at", x.Start.Sub(t0), x.Job)
	}
	// Output:
	// now short [h1]
	// at 1m0s wide
	// at 2m0s long
}
