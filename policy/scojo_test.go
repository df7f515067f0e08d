package policy

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"msched/models"
)

// The hand computations below use SCOJO-P's efficiency model on a moldable
// job M of 2..8 hosts without a performance model: N_opt is the geometric
// middle, 4; its estimate on 2 hosts is 1.625 × its run time at N_opt. With
// T_opt = 1000 s (speedup S(n)/N_opt = 0.4, 0.525, 0.65, 0.6875, 0.725,
// 0.7625, 0.8 on 2..8 hosts):
//
//	T(2) = 1625  T(3) = 1238.095  T(4) = 1000  T(5) = 945.455
//	T(6) = 896.552  T(7) = 852.459  T(8) = 812.5
//
// Jobs are submitted 8 days before now, outside the week of arrival history
// the load counts, so that no arrivals are expected (they are aged, which
// orders them among themselves by submission, as the class order would).
var longAgo = t0.Add(-8 * 24 * time.Hour)

func moldJob(id string, submit time.Time, tOpt time.Duration) QueuedJob {
	return QueuedJob{ID: id, Name: id, Submit: submit, Min: 2, Max: 8, Estimate: tOpt * 1625 / 1000}
}

func rigidJob(id string, submit time.Time, n int, est time.Duration) QueuedJob {
	return QueuedJob{ID: id, Name: id, Submit: submit, Min: n, Max: n, Estimate: est}
}

// placed finds a job's placement in a plan part.
func placed(ps []Placement, id string) (Placement, bool) {
	for _, p := range ps {
		if p.Job == id {
			return p, true
		}
	}
	return Placement{}, false
}

func near(a, b time.Duration) bool { d := a - b; return d < time.Millisecond && d > -time.Millisecond }

// Fig. 1 shrinks M under a high load. Ten hosts; R holds 4 until +1000 s;
// W (rigid, 4 hosts, 2000 s) waits behind M.
//
//	sMod 1, M on 4 for 1000 s: (4·1000 + R 4·1000 + W 4·min(2000, 1000))
//	  / (10·1000) = 1.2; the modifier becomes 0.9/1.2 = 0.75, M 3 hosts
//	sMod 0.75, M on 3 for 1238.095 s: (3·1238.095 + 4·1000 + 4·1238.095)
//	  / 12380.95 = 1.0231; next modifier 0.66: still 3 hosts, stop.
//
// M's target is 3, 6 hosts are free: M starts on 3; W (4) no longer fits
// and is reserved for R's end.
func TestScojo_ShrinksUnderLoad(t *testing.T) {
	s := Snapshot{Now: t0, Hosts: hosts(10),
		Running: []RunningJob{running("R", 1000*time.Second, "h0", "h1", "h2", "h3")},
		Queue:   []QueuedJob{moldJob("M", longAgo, 1000*time.Second), rigidJob("W", longAgo.Add(time.Second), 4, 2000*time.Second)}}
	pl := newHarness(t, "scojo-p", Options{}).plan(s)
	checkSound(t, s, pl)
	m, ok := placed(pl.StartNow, "M")
	if !ok || len(m.Hosts) != 3 || !near(m.Predicted, time.Duration(1238.095238095*1e9)) {
		t.Fatalf("M: %+v; want a start on 3 hosts for 1238.095 s", pl.StartNow)
	}
	if !strings.HasPrefix(m.Why, "3 of 2–8 hosts: predicted load 1.02 over its run at 3 hosts") {
		t.Errorf("why: %q", m.Why)
	}
	if w, ok := placed(pl.Later, "W"); !ok || !w.Start.Equal(t0.Add(1000*time.Second)) {
		t.Errorf("W later: %+v, want +1000 s", pl.Later)
	}
}

// Fig. 1 grows M when the machine is nearly idle, and Fig. 3 waits for the
// larger size. R1 holds 8 of 10 hosts until +100 s.
//
//	sMod 1, M on 4: (4·1000 + 8·100)/10000 = 0.48; modifier 1.875, 8 hosts
//	sMod 1.875, M on 8 for 812.5 s: (8·812.5 + 8·100)/8125 = 0.8985,
//	  within 0.02 of 0.9: target 8.
//
// Two hosts are free: now, M would end in T(2) = 1625 s; at R1's end, on 8,
// in 100 + 812.5 = 912.5 s: M waits, and 8 is its least size from then on.
// At +50 s R1 is predicted to end at +2000 s: starting now on 2 would end
// sooner (1625 s against 1950 + 812.5), but M keeps its guaranteed 8.
func TestScojo_WaitsForTheBetterSizeAndKeepsIt(t *testing.T) {
	all := []string{"h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"}
	s := Snapshot{Now: t0, Hosts: hosts(10),
		Running: []RunningJob{running("R1", 100*time.Second, all...)},
		Queue:   []QueuedJob{moldJob("M", longAgo, 1000*time.Second)}}
	h := newHarness(t, "scojo-p", Options{})
	pl := h.plan(s)
	checkSound(t, s, pl)
	if len(pl.StartNow) != 0 {
		t.Fatalf("started %+v, want M to wait", pl.StartNow)
	}
	m, ok := placed(pl.Later, "M")
	if !ok || len(m.Hosts) != 8 || !m.Start.Equal(t0.Add(100*time.Second)) || !near(m.Predicted, 812500*time.Millisecond) {
		t.Fatalf("M later: %+v, want 8 hosts at +100 s for 812.5 s", pl.Later)
	}
	if want := "waits 1.7 min for 8 of 2–8 hosts: predicted load 0.90 over its run at 8 hosts (ideal 0.9); it ends 12 min sooner than starting now on 2"; m.Why != want {
		t.Errorf("why:\n%q\nwant\n%q", m.Why, want)
	}

	s.Now = t0.Add(50 * time.Second)
	s.Running = []RunningJob{running("R1", 2000*time.Second, all...)}
	pl = h.plan(s)
	checkSound(t, s, pl)
	if m, ok := placed(pl.Later, "M"); len(pl.StartNow) != 0 || !ok || len(m.Hosts) != 8 || !m.Start.Equal(t0.Add(2000*time.Second)) {
		t.Fatalf("second call: start %+v, later %+v; want M to keep waiting for 8", pl.StartNow, pl.Later)
	}
	// A fresh policy, without the memory, starts M now on 2.
	pl = newHarness(t, "scojo-p", Options{}).plan(s)
	if m, ok := placed(pl.StartNow, "M"); !ok || len(m.Hosts) != 2 {
		t.Fatalf("fresh: start %+v, want M on 2", pl.StartNow)
	}
}

// Fig. 3 starts now on fewer hosts than the target when waiting would end
// later. M is long (T_opt 100,000 s); R holds 6 of 10 hosts until +30,000 s.
//
//	sMod 1, M on 4: (4·100000 + 6·30000)/1e6 = 0.58; modifier 1.5517, 6
//	sMod 1.5517, 6 hosts, 89655.17 s: (537931 + 180000)/896551.7 = 0.8008;
//	  modifier 1.744, 7
//	sMod 1.744, 7 hosts, 85245.90 s: (596721.3 + 180000)/852459.0 = 0.9112,
//	  within 0.02: target 7.
//
// Four hosts are free: M ends in T(4) = 100,000 s starting now, in
// 30,000 + 85,245.9 s waiting for 7: it starts now, on 4.
func TestScojo_StartsNowOnFewer(t *testing.T) {
	s := Snapshot{Now: t0, Hosts: hosts(10),
		Running: []RunningJob{running("R", 30000*time.Second, "h0", "h1", "h2", "h3", "h4", "h5")},
		Queue:   []QueuedJob{moldJob("M", longAgo, 100000*time.Second)}}
	pl := newHarness(t, "scojo-p", Options{}).plan(s)
	checkSound(t, s, pl)
	m, ok := placed(pl.StartNow, "M")
	if !ok || len(m.Hosts) != 4 || !near(m.Predicted, 100000*time.Second) {
		t.Fatalf("M: %+v; want a start on 4 hosts", pl.StartNow)
	}
	if want := "4 of 2–8 hosts: predicted load 0.91 over its run at 7 hosts (ideal 0.9); starting now beats waiting for 7 (ends 4.2 h later)"; m.Why != want {
		t.Errorf("why:\n%q\nwant\n%q", m.Why, want)
	}
}

// Expected arrivals. Ten free hosts, M alone in the queue; the history holds
// N arrivals of medium jobs (2 hosts, 600 s at N_opt) in this half hour of
// the day (12:00-12:30) over the past week: the rate is N/(7·1800 s) now and
// 0 in other half hours (M's runs stay within this one). A job arriving t
// after now works min(600, T − t) of M's T: ∫₀ᵀ = 600·(T − 600) + 600²/2 for
// T ≥ 600; sizes and run times of the arrivals scale with the modifier r
// (2r hosts, 600·T(r·N_opt)/T(N_opt) s).
//
// N = 42 (rate 1/300 s):
//
//	r 1, M on 4, T 1000: (4000 + 2·(420000/300))/10000 = 0.68; r 1.3235, 5
//	r 1.3235, 5, T 945.45 (arrivals 2.647 hosts, 600·0.65/0.6985 s):
//	  (4727.3 + 3282.4)/9454.5 = 0.8472; r 1.4061, 6
//	r 1.4061, 6: 0.9569 (farther from 0.9), then 5 (0.8469) and 6 (0.9567)
//	  again: three modifiers without a better load: stop at 5, load 0.8472.
//
// N = 126 (rate 1/100 s): 1.24 at 4 hosts, 1.0648 at 3, 0.9724 at 2: M
// shrinks to 2.
func TestScojo_ExpectedArrivals(t *testing.T) {
	for _, c := range []struct {
		n, size int
		load    string
	}{{42, 5, "0.85"}, {126, 2, "0.97"}} {
		h := newHarness(t, "scojo-p", Options{})
		p := h.p.(*moldPolicy)
		for k := range c.n {
			at := t0.Add(-time.Duration(1+k%7)*24*time.Hour + time.Duration(k/7)*time.Second)
			p.hist.add(arrival{at: at.UnixNano(), class: classMedium, size: 2, run: 600})
		}
		s := Snapshot{Now: t0, Hosts: hosts(10), Queue: []QueuedJob{moldJob("M", longAgo, 1000*time.Second)}}
		pl := h.plan(s)
		checkSound(t, s, pl)
		m, ok := placed(pl.StartNow, "M")
		if !ok || len(m.Hosts) != c.size || !strings.Contains(m.Why, "predicted load "+c.load+" ") {
			t.Errorf("%d arrivals: %+v; want M on %d hosts at load %s", c.n, pl.StartNow, c.size, c.load)
		}
	}
}

// What ended jobs ran against their estimates, by hand. Each job's run is
// taken as its estimate when the calls allow it (seen running at its last
// call, gone by this one), else the nearest bound.
//
//	A: 2 hosts, estimate 1000 s; seen at +0 and +50 s, gone at +400 s: its
//	  estimated end is after +400, so it ran 400 s; 2·400 against 2·1000
//	B: 1 host, estimate 100 s, started at +0; gone at +400 s: ended within
//	  [+50, +400), as estimated; 100 against 100
//	C: 1 host, estimate 100 s, started at +0; still seen at +400 s, gone
//	  at +500 s: it overran to at least +400; 400 against 100
//	D: seen without an estimate (no end): not counted
//	E: first seen past its estimate (shown ending OverrunMargin after
//	  now): not counted
//	G: 1 host, seen started at +0 (estimate 100 s), then at +50 started
//	  again (estimate 300 s from there); gone at +400: ended within [+50,
//	  +400), as estimated: 300 against 300
//
// 1,600 of work done against 2,500 estimated; 16 more ended jobs of 1
// host, 100 s estimated, 50 s run, bring the count to scojoMinEnded: 2,400
// against 4,100. A week after the last, none is left, and the ratio is 1
// again.
func TestScojo_OverstatedEstimatesLearnt(t *testing.T) {
	var o overstate
	at := func(sec int, rs ...RunningJob) {
		o.observe(&Snapshot{Now: t0.Add(time.Duration(sec) * time.Second), Running: rs})
	}
	run := func(id string, start, est int, hs ...string) RunningJob {
		r := RunningJob{ID: id, Hosts: hs, Start: t0.Add(time.Duration(start) * time.Second)}
		if est > 0 {
			r.End = r.Start.Add(time.Duration(est) * time.Second)
		}
		return r
	}
	a, b, c, d := run("A", 0, 1000, "h0", "h1"), run("B", 0, 100, "h2"), run("C", 0, 100, "h3"), run("D", 0, 0, "h4")
	e := run("E", -500, 0, "h6")
	e.End = t0.Add(OverrunMargin)
	at(0, a, b, c, d, e, run("G", 0, 100, "h7"))
	e.End = t0.Add(50*time.Second + OverrunMargin)
	at(50, a, b, c, d, e, run("G", 50, 300, "h7"))
	at(400, c)
	at(500)
	if n := len(o.ended) - o.head; n != 4 || o.done != 1600 || o.est != 2500 || o.ratio() != 1 {
		t.Fatalf("%d ended, %g done against %g estimated, ratio %g; want 4, 1600, 2500, 1 (too few)", n, o.done, o.est, o.ratio())
	}
	for k := range scojoMinEnded - 4 {
		from := 1000 + 200*k
		at(from, run(fmt.Sprint("F", k), from, 100, "h5"))
		at(from + 50)
	}
	if got, want := o.ratio(), 2400.0/4100; math.Abs(got-want) > 1e-12 {
		t.Errorf("ratio %g, want %g", got, want)
	}
	if len(o.running) != 0 {
		t.Errorf("running kept: %v", o.running)
	}
	at(1000 + 200*scojoMinEnded + int(scojoWindow/time.Second))
	if o.ratio() != 1 || o.done != 0 || o.est != 0 {
		t.Errorf("after a week: ratio %g, %g against %g; want 1, 0, 0", o.ratio(), o.done, o.est)
	}
}

// The ratio scales the load's estimated times. As TestScojo_ExpectedArrivals
// with N = 42 (rate 1/300 s), with R running on 2 hosts until +300 s, after
// scojoMinEnded jobs ran half their estimates (ratio 0.5): M's run, R's and
// the arrivals' are taken as half as long, and fewer arrivals fall within
// M's run.
//
//	r 1, M on 4, T 500: (4·500 + 2·150 + 2·(300·200 + 300²/2)/300)/5000
//	  = 0.6; modifier 1.5, 6 hosts
//	r 1.5, 6, T 448.28 (arrivals 3 hosts, 300·0.65/0.725 = 268.97 s):
//	  (2689.7 + 2·150 + 3·(268.97·179.31 + 268.97²/2)/300)/4482.8 = 0.8552;
//	  modifier 1.5786, still 6 hosts: target 6
//
// Without the ratio M got 5 hosts, at a load of 0.89.
func TestScojo_OverstatedEstimatesScaleTheLoad(t *testing.T) {
	h := newHarness(t, "scojo-p", Options{})
	p := h.p.(*moldPolicy)
	for k := range 42 {
		at := t0.Add(-time.Duration(1+k%7)*24*time.Hour + time.Duration(k/7)*time.Second)
		p.hist.add(arrival{at: at.UnixNano(), class: classMedium, size: 2, run: 600})
	}
	for k := range scojoMinEnded {
		from := t0.Add(-2*time.Hour + time.Duration(k)*200*time.Second)
		h.plan(Snapshot{Now: from, Hosts: hosts(10), Running: []RunningJob{
			{ID: fmt.Sprint("E", k), Hosts: []string{"h9"}, Start: from, End: from.Add(100 * time.Second)}}})
		h.plan(Snapshot{Now: from.Add(50 * time.Second), Hosts: hosts(10)})
	}
	s := Snapshot{Now: t0, Hosts: hosts(10), Running: []RunningJob{running("R", 300*time.Second, "h8", "h9")},
		Queue: []QueuedJob{moldJob("M", longAgo, 1000*time.Second)}}
	pl := h.plan(s)
	checkSound(t, s, pl)
	m, ok := placed(pl.StartNow, "M")
	want := "6 of 2–8 hosts: predicted load 0.86 over its run at 6 hosts (ideal 0.9; the load takes run times as 0.50 of their estimates, as the jobs ended in the last 7 days ran)"
	if !ok || len(m.Hosts) != 6 || m.Why != want {
		t.Fatalf("M: %+v; want a start on 6 hosts, why\n%q", pl.StartNow, want)
	}
}

// A fresh scheduler (the history is in memory: also one just restarted)
// with one 10-h job on an idle machine does not shrink it: the one arrival
// it has seen counts as a day's, where taking it over the minute it has
// been up for a rate once predicted a load of 4.4 and put the job on 2 of
// 2–8 hosts. At its N_opt, 4: (4·36000 + 4·36000²/2/86400)/(10·36000) =
// 0.48, and the job grows (to 8, where the load is 0.94).
func TestScojo_FreshHistoryDoesNotShrinkALoneJob(t *testing.T) {
	s := Snapshot{Now: t0, Hosts: hosts(10), Queue: []QueuedJob{moldJob("M", t0.Add(-time.Minute), 10*time.Hour)}}
	pl := newHarness(t, "scojo-p", Options{}).plan(s)
	checkSound(t, s, pl)
	m, ok := placed(pl.StartNow, "M")
	if !ok || len(m.Hosts) < 4 {
		t.Fatalf("M: %+v; want a start on at least its N_opt, 4", pl.StartNow)
	}
	var load float64
	if _, err := fmt.Sscanf(m.Why[strings.Index(m.Why, "predicted load ")+len("predicted load "):], "%g", &load); err != nil || load >= 1 {
		t.Errorf("why: %q (%v)", m.Why, err)
	}
}

// The history's rates and the expected work, by hand. One long job arrived
// at 11:00 three days ago, which opens the window; 36 medium jobs (2 hosts,
// 600 s) arrived in the 12:00 half hour of the last three days. Now is
// 12:15: the window, 3 days 1 h 15 min, has spent 3·1800 + 900 s in the
// 12:00 half hour, so the medium rate there is 36/6300 per second; no
// medium job arrived at 12:30. A job of T = 2700 s from 12:15 spans the rest
// of 12:00 (900 s) and 12:30-13:00: ∫ over [0, 900) of min(600, 2700 − t) dt
// = 600·900, times the rate and the size, 2.
func TestScojo_HistoryRates(t *testing.T) {
	var h history
	h.add(arrival{at: t0.Add(-3*24*time.Hour - time.Hour).UnixNano(), class: classLong, size: 1, run: 1})
	for k := range 36 {
		at := t0.Add(-time.Duration(k%3)*24*time.Hour + time.Duration(k+1)*time.Second)
		h.add(arrival{at: at.UnixNano(), class: classMedium, size: 2, run: 600})
	}
	now := t0.Add(15 * time.Minute).UnixNano()
	h.update(now)
	want := 36 / 6300.0
	if got := h.rate[slotOf(now)][classMedium]; math.Abs(got-want) > 1e-15 {
		t.Fatalf("rate %v, want %v", got, want)
	}
	if got := h.rate[slotOf(now)+1][classMedium]; got != 0 {
		t.Fatalf("rate in the next half hour %v, want 0", got)
	}
	if got, w := h.futureWork(now, 2700, 1, 1, 100), 2*want*600*900; math.Abs(got-w) > 1e-9 {
		t.Fatalf("future work %v, want %v", got, w)
	}
	if d := h.dist[classMedium]; meanSize(d) != 2 || len(d.runs) != 36 || d.runs[0] != 600 || d.runs[35] != 600 {
		t.Fatalf("medium jobs: mean size %v, runs %v", meanSize(d), d.runs)
	}
	// A week later every arrival has left the window.
	h.update(now + int64(8*24*time.Hour))
	if h.n != [nClasses]float64{} || h.rate[slotOf(now)][classMedium] != 0 {
		t.Fatalf("after a week: n %v", h.n)
	}
	if w := h.futureWork(now+int64(8*24*time.Hour), 2700, 1, 1, 100); w != 0 || len(h.dist[classMedium].runs) != 0 {
		t.Fatalf("after a week: future work %v from %d medium jobs", w, len(h.dist[classMedium].runs))
	}
}

// meanSize is the mean size of d's jobs (0 for none).
func meanSize(d runDist) float64 {
	if len(d.runs) == 0 {
		return 0
	}
	return d.w[len(d.runs)][0] / float64(len(d.runs))
}

// alternating is a history of medium jobs a and b arriving in turn, one
// every 10 minutes, over the week before t0, updated at t0.
func alternating(a, b arrival) *history {
	var h history
	start := t0.Add(-7*24*time.Hour + time.Nanosecond)
	for k := 0; k < 7*24*6; k++ {
		j := a
		if k%2 == 1 {
			j = b
		}
		j.at, j.class = start.Add(time.Duration(k)*10*time.Minute).UnixNano(), classMedium
		h.add(j)
	}
	h.update(t0.UnixNano())
	return &h
}

// The expected work of arrivals whose run times differ is the mean of
// their overlaps, not the overlap of their mean: medium jobs of 1 host ×
// 100 s and 3 hosts × 3000 s arrive in turn, one every 600 s;
// within a candidate's T = 4000 s from now, under modifiers 1 and 1.5
// (sizes × r, run times × RelativeTime(r)), the work is checked against a
// sum over each second of arrivals. The paper's means (size 2, run 2275 s
// weighted by size) would say 14 % more at r 1.
func TestScojo_FutureWorkIsTheMeanOverlap(t *testing.T) {
	h := alternating(arrival{size: 1, run: 100}, arrival{size: 3, run: 3000})
	now := t0.UnixNano()
	T := 4000.0
	brute := func(r float64) float64 {
		f := models.RelativeTime(r)
		w := 0.0
		for t := 0.5; t < T; t++ { // arrivals at 1/1200 per s of each kind
			w += (r*1*math.Min(100*f, T-t) + r*3*math.Min(3000*f, T-t)) / 1200
		}
		return w
	}
	for _, r := range []float64{1, 1.5} {
		if got, want := h.futureWork(now, T, r, 1, 100), brute(r); math.Abs(got/want-1) > 1e-3 {
			t.Errorf("r %g: future work %.0f, want %.0f", r, got, want)
		}
	}
	mean := 0.0
	for t := 0.5; t < T; t++ {
		mean += 2 * math.Min(2275, T-t) / 600
	}
	if got := h.futureWork(now, T, 1, 1, 100); mean/got < 1.13 {
		t.Errorf("the means' overlap %.0f is not above the mean overlap %.0f", mean, got)
	}
}

// A job the modifier would make larger than the machine counts on the
// machine, for its run time there: medium jobs of 8 hosts × 600 s and 2
// hosts × 300 s in turn, one every 600 s, on 10 hosts; at r 2 the first
// would take 16 hosts and run 0.8125 × 600 s, and takes 10 for
// RelativeTime(10/8) × 600 s.
func TestScojo_FutureWorkCutToTheMachine(t *testing.T) {
	h := alternating(arrival{size: 2, run: 300}, arrival{size: 8, run: 600})
	now := t0.UnixNano()
	T := 2000.0
	fc := models.RelativeTime(10.0 / 8)
	for _, r := range []float64{1, 2} {
		f := models.RelativeTime(r)
		want := 0.0
		for t := 0.5; t < T; t++ {
			big := r * 8 * math.Min(600*f, T-t)
			if r*8 > 10 {
				big = 10 * math.Min(600*fc, T-t)
			}
			want += (r*2*math.Min(300*f, T-t) + big) / 1200
		}
		if got := h.futureWork(now, T, r, 1, 10); math.Abs(got/want-1) > 1e-3 {
			t.Errorf("r %g on 10 hosts: future work %.0f, want %.0f", r, got, want)
		}
	}
}

// The window's jobs are the distribution's, also once the window's old end
// has been cut off the arrival list (more than 1024 dropped): 3,000
// arrivals over 15 days, a week of which stays.
func TestScojo_HistoryDistributionFollowsTheWindow(t *testing.T) {
	var h history
	n := 3000
	step := 15 * 24 * time.Hour / time.Duration(n)
	for k := range n {
		h.add(arrival{at: t0.Add(time.Duration(k) * step).UnixNano(), class: classLong, size: float64(1 + k%5), run: float64(3600 + k)})
	}
	now := t0.Add(15 * 24 * time.Hour)
	h.update(now.UnixNano())
	h.futureWork(now.UnixNano(), 3600, 1, 1, 100)
	d := h.dist[classLong]
	var runs []float64
	sum := 0.0
	for k := range n {
		if at := t0.Add(time.Duration(k) * step); !at.Before(now.Add(-scojoWindow)) {
			runs = append(runs, float64(3600+k))
			sum += float64(1 + k%5)
		}
	}
	if h.head != 0 || len(h.ev) != len(runs) || !slices.Equal(d.runs, runs) || math.Abs(meanSize(d)-sum/float64(len(runs))) > 1e-12 {
		t.Fatalf("window of %d (head %d), distribution of %d, mean %v; want %d, mean %v", len(h.ev), h.head, len(d.runs), meanSize(d), len(runs), sum/float64(len(runs)))
	}
}

// Class order and aging. Four hosts, each job rigid on all four: the first
// in priority order starts, the next is reserved. Short (30 s) goes before
// medium (10 min) before long (2 h), whatever the arrival order; a long
// job that has waited more than 5 × 2 h goes first.
func TestScojo_ClassesAndAging(t *testing.T) {
	for _, name := range []string{"scojo-p", "scojo-rigid", "cirne-berman"} {
		for _, c := range []struct {
			what        string
			longWaited  time.Duration
			first, next string
		}{
			{"classes", 10*time.Hour - time.Second, "S", "M"},
			{"aged long", 10*time.Hour + time.Second, "L", "S"},
		} {
			q := []QueuedJob{
				rigidJob("L", t0.Add(-c.longWaited), 4, 2*time.Hour),
				rigidJob("M", t0.Add(-time.Minute), 4, 10*time.Minute),
				rigidJob("S", t0.Add(-30*time.Second), 4, 30*time.Second),
			}
			s := Snapshot{Now: t0, Hosts: hosts(4), Queue: q}
			pl := newHarness(t, name, Options{}).plan(s)
			checkSound(t, s, pl)
			if len(pl.StartNow) != 1 || pl.StartNow[0].Job != c.first || len(pl.Later) != 1 || pl.Later[0].Job != c.next {
				t.Errorf("%s, %s: start %+v later %+v; want %s then %s", name, c.what, pl.StartNow, pl.Later, c.first, c.next)
			}
		}
	}
	// A medium job aged (waited 51 min, more than 5 × 10 min) joins the
	// short jobs, which go by arrival: behind S1, which came before it
	// (however many aged jobs there are, a short job waits for none that
	// came after it), ahead of S2, which came after.
	q := []QueuedJob{
		rigidJob("S2", t0.Add(-20*time.Second), 4, 30*time.Second),
		rigidJob("M", t0.Add(-51*time.Minute), 4, 10*time.Minute),
		rigidJob("S1", t0.Add(-2*time.Hour), 4, 30*time.Second),
	}
	p := newHarness(t, "scojo-p", Options{}).p.(*moldPolicy)
	if _, err := p.Plan(context.Background(), Snapshot{Now: t0, Hosts: hosts(4), Queue: q}); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, k := range p.order {
		order = append(order, p.m.jobs[k].q.ID)
	}
	if strings.Join(order, " ") != "S1 M S2" {
		t.Errorf("aged: priority order %v, want S1 M S2", order)
	}
}

// N_opt from a performance model is the working set: a predictor that
// follows the efficiency model around 6 hosts, on a job of 3..12, gives
// N_opt 6 and its run times; scojo-rigid runs the job there.
func TestScojo_OptFromTheModel(t *testing.T) {
	eff := models.Efficiency{Opt: 6, Machine: 16}
	pred := PredictorFunc(func(_ context.Context, _ *QueuedJob, hs []Host) (time.Duration, error) {
		return time.Duration(600 * eff.Factor(len(hs)) * float64(time.Second)), nil
	})
	q := QueuedJob{ID: "J", Name: "J", Submit: t0, Min: 3, Max: 12, Estimate: time.Second}
	s := Snapshot{Now: t0, Hosts: hosts(16), Queue: []QueuedJob{q}}
	pl := newHarness(t, "scojo-rigid", Options{Predictor: pred}).plan(s)
	checkSound(t, s, pl)
	if len(pl.StartNow) != 1 || len(pl.StartNow[0].Hosts) != 6 || !near(pl.StartNow[0].Predicted, 600*time.Second) {
		t.Fatalf("start %+v, want J on 6 hosts for 600 s", pl.StartNow)
	}
	// Without the model: the geometric middle of 3..12, 6, too; the
	// estimate (on 3 hosts) scales by the efficiency model.
	q.Estimate = 1000 * time.Second
	s.Queue = []QueuedJob{q}
	pl = newHarness(t, "scojo-rigid", Options{}).plan(s)
	if want := time.Duration(1000 / eff.Factor(3) * float64(time.Second)); len(pl.StartNow) != 1 || len(pl.StartNow[0].Hosts) != 6 || !near(pl.StartNow[0].Predicted, want) {
		t.Fatalf("no model: start %+v, want J on 6 hosts for %v", pl.StartNow, want)
	}
}

// checkSound fails t when Check refuses any part of pl.
func checkSound(t *testing.T, s Snapshot, pl Plan) {
	t.Helper()
	if f := Check(s, pl); len(f) > 0 {
		t.Fatalf("unsound plan: %v", f)
	}
	for _, part := range [][]Placement{pl.StartNow, pl.Later} {
		ids := make([]string, 0, len(part))
		for _, p := range part {
			ids = append(ids, p.Job)
		}
		if len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(ids) {
			t.Fatalf("a job placed twice: %v", ids)
		}
	}
}

// Fig. 4, adaptive backfilling. Ten hosts; R holds 4 until +1000 s; H
// (rigid, all 10 hosts, first in line) waits for R's end. Six hosts are
// free for 1000 s: a hole of 6000 host-seconds. B1 and B2 (moldable 2..8,
// N_opt 4, 100 s and 300 s there) both fit it at N_opt (4 < 6 hosts, shorter
// than 1000 s): their work, 400 + 1200, over the hole is the modifier,
// 0.2667: 4 × 0.2667 rounds to 1, below their least size, so both get 2
// hosts (162.5 s and 487.5 s, ending before H starts) and EASY starts both.
func TestScojo_BackfillSizes(t *testing.T) {
	s := Snapshot{Now: t0, Hosts: hosts(10),
		Running: []RunningJob{running("R", 1000*time.Second, "h0", "h1", "h2", "h3")},
		Queue: []QueuedJob{rigidJob("H", t0.Add(-3*time.Second), 10, 2000*time.Second),
			moldJob("B1", t0.Add(-2*time.Second), 100*time.Second), moldJob("B2", t0.Add(-time.Second), 300*time.Second)}}
	pl := newHarness(t, "scojo-p", Options{}).plan(s)
	checkSound(t, s, pl)
	for _, c := range []struct {
		id  string
		run time.Duration
	}{{"B1", 162500 * time.Millisecond}, {"B2", 487500 * time.Millisecond}} {
		b, ok := placed(pl.StartNow, c.id)
		if !ok || len(b.Hosts) != 2 || !near(b.Predicted, c.run) {
			t.Fatalf("start %+v; want %s on 2 hosts for %v", pl.StartNow, c.id, c.run)
		}
		if want := "2 of 2–8 hosts: backfilled beside H, which starts in 17 min; the backfill sizes are N_opt × 0.27 (the candidates' work over the hole's)"; b.Why != want {
			t.Errorf("%s why %q", c.id, b.Why)
		}
	}
	if len(pl.Later) != 1 || pl.Later[0].Job != "H" {
		t.Fatalf("later %+v, want H", pl.Later)
	}
}

// The predictor is asked for a job's curve only, with the job as queued:
// EASY underneath takes the sized job's run time as the policy hands it
// over, where asking again once read it as the user's walltime (and the
// live system's report said the estimate was one).
func TestScojo_PredictorAskedAboutTheJobAsQueued(t *testing.T) {
	var seen []time.Duration
	pred := PredictorFunc(func(_ context.Context, q *QueuedJob, hs []Host) (time.Duration, error) {
		seen = append(seen, q.Estimate)
		return time.Duration(float64(400*time.Second) / float64(len(hs))), nil
	})
	s := Snapshot{Now: t0, Hosts: hosts(10), Running: []RunningJob{running("R", time.Hour, "h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7")},
		Queue: []QueuedJob{{ID: "M", Name: "M", Submit: longAgo, Min: 2, Max: 8}}}
	for _, name := range []string{"scojo-p", "scojo-rigid", "cirne-berman"} {
		seen = nil
		pl := newHarness(t, name, Options{Predictor: pred}).plan(s)
		checkSound(t, s, pl)
		if len(seen) == 0 {
			t.Fatalf("%s: the predictor was never asked", name)
		}
		for _, e := range seen {
			if e != 0 {
				t.Fatalf("%s: the predictor was asked about the job with estimate %v; want only as queued (0)", name, e)
			}
		}
	}
}

// A predictor that answers the same on every host count says nothing of a
// job's speedup (the live profiler's mean of past runs): without a
// performance model the job is sized by the efficiency model from that
// answer, taken as its time on Min hosts. On 2..8, N_opt = √16 = 4 and
// T(4) = 600 s / 1.625 = 369.2 s; scojo-rigid runs it there. With a model
// the flat curve is the model's word: N_opt is 2 (n·T² least there).
func TestScojo_FlatPredictionIsNoSpeedup(t *testing.T) {
	flat := PredictorFunc(func(context.Context, *QueuedJob, []Host) (time.Duration, error) { return 600 * time.Second, nil })
	for _, c := range []struct {
		model string
		n     int
		t     time.Duration
	}{{"", 4, time.Duration(369230769230)}, {"eq2", 2, 600 * time.Second}} {
		s := Snapshot{Now: t0, Hosts: hosts(10), Queue: []QueuedJob{{ID: "M", Name: "M", Submit: longAgo, Min: 2, Max: 8, Model: c.model}}}
		pl := newHarness(t, "scojo-rigid", Options{Predictor: flat}).plan(s)
		checkSound(t, s, pl)
		if m, ok := placed(pl.StartNow, "M"); !ok || len(m.Hosts) != c.n || !near(m.Predicted, c.t) {
			t.Errorf("model %q: %+v; want %d hosts for %v", c.model, pl.StartNow, c.n, c.t)
		}
	}
}

// Fig. 4 with no candidate: no job behind the head fits the hole at N_opt,
// and the paper's modifier, work over hole, is 0. A job that can start
// beside the head gets its own target (Fig. 1) instead of its least size.
//
// Ten hosts; R holds 6 until +200,000 s; H (rigid, 7 hosts, 1000 s) waits
// for R's end. Four hosts are free: M (T_opt 10,000 s) is no candidate,
// its N_opt not below the 4 free. Its target:
//
//	sMod 1, M on 4 for 10,000 s: (4·10000 + R 6·10000 + H 7·1000)
//	  / (10·10000) = 1.07; modifier 0.8411, 3 hosts
//	sMod 0.8411, M on 3 for 12,380.95 s: (3·12380.95 + 6·12380.95 + 7000)
//	  / 123809.5 = 0.9565; next modifier 0.7914: still 3 hosts, stop.
//
// M starts on 3 (ending long before H starts), not on its least 2 for
// 16,250 s.
//
// Twelve hosts, R holding 4 until +1000 s and H (rigid, 10 hosts, 2000 s)
// waiting for them: L (T_opt 100,000 s) is no candidate, being longer than
// the hole. Its target is 8 (at sMod 1, on 4: (400000 + 4·1000 + 10·2000)
// / 1.2e6 = 0.353; on 8 for 81,250 s, 674000 / 975000 = 0.691, the closest
// it can come), which does not fit beside H: L waits, rather than starting
// on 2 hosts for 162,500 s.
func TestScojo_BackfillWithoutCandidates(t *testing.T) {
	s := Snapshot{Now: t0, Hosts: hosts(10),
		Running: []RunningJob{running("R", 200000*time.Second, "h0", "h1", "h2", "h3", "h4", "h5")},
		Queue:   []QueuedJob{rigidJob("H", longAgo, 7, 1000*time.Second), moldJob("M", longAgo.Add(time.Second), 10000*time.Second)}}
	pl := newHarness(t, "scojo-p", Options{}).plan(s)
	checkSound(t, s, pl)
	m, ok := placed(pl.StartNow, "M")
	if !ok || len(m.Hosts) != 3 || !near(m.Predicted, time.Duration(12380.952380952*1e9)) {
		t.Fatalf("start %+v; want M on 3 hosts for 12,380.95 s", pl.StartNow)
	}
	if want := "3 of 2–8 hosts: backfilled beside H, which starts in 55.6 h; no job behind it fits the hole at N_opt, so its size is its own target: predicted load 0.96 over its run (ideal 0.9)"; m.Why != want {
		t.Errorf("why:\n%q\nwant\n%q", m.Why, want)
	}

	s = Snapshot{Now: t0, Hosts: hosts(12),
		Running: []RunningJob{running("R", 1000*time.Second, "h0", "h1", "h2", "h3")},
		Queue:   []QueuedJob{rigidJob("H", longAgo, 10, 2000*time.Second), moldJob("L", longAgo.Add(time.Second), 100000*time.Second)}}
	h := newHarness(t, "scojo-p", Options{})
	pl = h.plan(s)
	checkSound(t, s, pl)
	if len(pl.StartNow) != 0 {
		t.Fatalf("start %+v; want L to wait for its target of 8 hosts", pl.StartNow)
	}
	if n := sizedAs(h, "L"); n != 8 {
		t.Errorf("L sized %d, want its target 8", n)
	}
}

// sizedAs is the size the last plan of h's scojo-p gave job id.
func sizedAs(h *harness, id string) int {
	p := h.p.(*moldPolicy)
	for k := range p.m.jobs {
		if p.m.jobs[k].q.ID == id {
			return p.size[k]
		}
	}
	return -1
}

// Only the first scojoMaxOwnTargets jobs behind the head get their own
// target; the rest their least size. The setting of the first case above,
// with more jobs like M behind H: the load of so many waiting jobs makes
// every target the least size, 2, so the reasons tell them apart.
func TestScojo_OwnTargetsBounded(t *testing.T) {
	s := Snapshot{Now: t0, Hosts: hosts(10),
		Running: []RunningJob{running("R", 200000*time.Second, "h0", "h1", "h2", "h3", "h4", "h5")},
		Queue:   []QueuedJob{rigidJob("H", longAgo, 7, 1000*time.Second)}}
	for i := range scojoMaxOwnTargets + 5 {
		s.Queue = append(s.Queue, moldJob(fmt.Sprintf("M%d", i), longAgo.Add(time.Duration(i+1)*time.Second), 10000*time.Second))
	}
	h := newHarness(t, "scojo-p", Options{})
	checkSound(t, s, h.plan(s))
	p := h.p.(*moldPolicy)
	own, least := 0, 0
	for k := range p.m.jobs {
		id := p.m.jobs[k].q.ID
		var i int
		fmt.Sscanf(id, "M%d", &i)
		switch why := p.why[k]; {
		case strings.Contains(why, "its own target"):
			own++
			if i >= scojoMaxOwnTargets {
				t.Errorf("%s, behind the first %d, got its own target", id, scojoMaxOwnTargets)
			}
		case strings.Contains(why, "N_opt × 0.00"):
			least++
			if p.size[k] != 2 || i < scojoMaxOwnTargets {
				t.Errorf("%s sized %d by the hole's modifier; want only jobs behind the first %d, at their least 2", id, p.size[k], scojoMaxOwnTargets)
			}
		}
	}
	if own != scojoMaxOwnTargets || least != 5 {
		t.Errorf("%d jobs got their own target and %d their least size; want %d and 5", own, least, scojoMaxOwnTargets)
	}
}
