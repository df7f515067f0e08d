package policy

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"
)

func newPlanForTest(t *testing.T, o Options) *planGA {
	t.Helper()
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Generations == 0 {
		o.Generations = 20
	}
	p, err := newPlanGA(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The plan used is never worse, by the policy's own objective, than any of
// the seeded orders (FCFS, the carried plan's, shortest first, EASY's)
// decoded in the same state, for every objective, over random snapshots
// and one long-lived policy.
func TestPlanGA_NeverWorseThanItsSeeds(t *testing.T) {
	for _, obj := range Objectives() {
		t.Run(obj, func(t *testing.T) {
			rng := rand.New(rand.NewSource(5))
			p := newPlanForTest(t, Options{Plan: PlanOptions{Objective: obj, IdleWeight: 0.5, Population: 16}})
			checked := 0
			for i := 0; i < 300; i++ {
				s := randomSnapshot(rng, i%3 == 0)
				if _, err := p.Plan(context.Background(), s); err != nil {
					t.Fatal(err)
				}
				if len(p.jobs) < 2 {
					continue
				}
				for x, ord := range p.seeds() {
					dom := make([]int16, len(p.jobs))
					for k := range dom {
						dom[k] = -1
					}
					c := p.decode(ord, dom, &p.dec)
					if c.less(p.chosen) {
						t.Fatalf("snapshot %d: seed %d costs %+v, less than the plan used %+v", i, x, c, p.chosen)
					}
				}
				checked++
			}
			if checked < 100 {
				t.Fatalf("only %d snapshots had two jobs or more", checked)
			}
		})
	}
}

// A short job that fits in a hole before a wide job's reservation starts
// now (the decoder backfills), and the wide job keeps a reservation at the
// end of the running work; the order of the queue does not make the GA
// leave hosts idle for the head of the queue.
func TestPlanGA_BackfillsAndReserves(t *testing.T) {
	p := newPlanForTest(t, Options{})
	s := Snapshot{Now: t0, Hosts: hosts(4),
		Running: []RunningJob{{ID: "R", Hosts: []string{"h0", "h1"}, Start: t0.Add(-time.Minute), End: t0.Add(100 * time.Second)}},
		Queue: []QueuedJob{
			job("WIDE", -50, 4, 4, 200*time.Second),
			job("SHORT", -40, 2, 2, 90*time.Second),
			job("LONG", -30, 2, 2, 500*time.Second),
		}}
	pl, err := p.Plan(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if faults := Check(s, pl); len(faults) > 0 {
		t.Fatal(faults)
	}
	got, _ := started(pl)
	if !slices.Equal(got, []string{"SHORT"}) {
		t.Errorf("started %v, want [SHORT]", got)
	}
	later := map[string]time.Time{}
	for _, x := range pl.Later {
		later[x.Job] = x.Start
	}
	if w := later["WIDE"]; !w.Equal(t0.Add(100 * time.Second)) {
		t.Errorf("WIDE planned at %v, want when R ends (+100s)", w.Sub(t0))
	}
	if l := later["LONG"]; l.Before(t0.Add(300 * time.Second)) {
		t.Errorf("LONG planned at +%v, before WIDE ends: it would delay WIDE", l.Sub(t0))
	}
}

// On hosts of two speeds a job runs where it ends first: on the fast hosts
// when they are free, on the slow ones when the fast are busy for longer
// than the difference.
func TestPlanGA_ChoosesFastHosts(t *testing.T) {
	hs := []Host{
		{Name: "s0", Arch: "slow", Speed: 1}, {Name: "s1", Arch: "slow", Speed: 1},
		{Name: "f0", Arch: "fast", Speed: 2}, {Name: "f1", Arch: "fast", Speed: 2},
	}
	for _, tc := range []struct {
		busyFor time.Duration
		want    string
	}{{0, "f"}, {30 * time.Second, "f"}, {80 * time.Second, "s"}} {
		t.Run(fmt.Sprint(tc.busyFor), func(t *testing.T) {
			p := newPlanForTest(t, Options{})
			s := Snapshot{Now: t0, Hosts: slices.Clone(hs), Queue: []QueuedJob{job("J", -10, 2, 2, 100*time.Second)}}
			if tc.busyFor > 0 {
				s.Running = []RunningJob{{ID: "R", Hosts: []string{"f0", "f1"}, Start: t0, End: t0.Add(tc.busyFor)}}
			}
			pl, err := p.Plan(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if faults := Check(s, pl); len(faults) > 0 {
				t.Fatal(faults)
			}
			var hosts []string
			var pred time.Duration
			for _, x := range append(pl.StartNow, pl.Later...) {
				hosts, pred = x.Hosts, x.Predicted
			}
			if tc.want == "s" {
				if len(pl.StartNow) != 1 || pred != 100*time.Second || hosts[0][0] != 's' {
					t.Errorf("started %v on %v for %v, want now on the slow hosts for 100s", pl.StartNow, hosts, pred)
				}
				return
			}
			if pred != 50*time.Second || len(hosts) != 2 || hosts[0][0] != 'f' || hosts[1][0] != 'f' {
				t.Errorf("placed on %v for %v, want the fast hosts for 50s", hosts, pred)
			}
			if (tc.busyFor == 0) != (len(pl.StartNow) == 1) {
				t.Errorf("busy for %v: started %v", tc.busyFor, pl.StartNow)
			}
		})
	}
}

// When jobs have been ending at a third of their predicted run times,
// "auto" picks hosts by when a job is expected to end: here the slow hosts
// now (expected end 33 s) rather than the fast ones after 30 s (46 s),
// where the prediction alone picks the fast ones (80 s against 100 s). The
// reservation is still the whole predicted run.
func TestPlanGA_LearntRatioPicksHosts(t *testing.T) {
	hs := []Host{
		{Name: "s0", Arch: "slow", Speed: 1}, {Name: "s1", Arch: "slow", Speed: 1},
		{Name: "f0", Arch: "fast", Speed: 2}, {Name: "f1", Arch: "fast", Speed: 2},
		{Name: "x0", Arch: "slow", Speed: 1},
	}
	for _, samples := range []int{ratioSamples - 1, ratioSamples} {
		t.Run(fmt.Sprint(samples), func(t *testing.T) {
			p := newPlanForTest(t, Options{})
			now := t0
			// Jobs predicted to run 90 s on x0, each gone after 30 s.
			for i := range samples + 1 {
				s := Snapshot{Now: now, Hosts: slices.Clone(hs)}
				if i < samples {
					s.Running = []RunningJob{{ID: fmt.Sprint("R", i), Hosts: []string{"x0"}, Start: now, End: now.Add(90 * time.Second)}}
				}
				if _, err := p.Plan(context.Background(), s); err != nil {
					t.Fatal(err)
				}
				now = now.Add(30 * time.Second)
			}
			want := 90 * time.Second
			if samples == ratioSamples {
				want = 30 * time.Second
			}
			if got := time.Duration(p.expected(int64(90 * time.Second))); (got - want).Abs() > time.Millisecond {
				t.Fatalf("%d samples: expected(90s) = %v, want %v", samples, got, want)
			}
			// A job whose start failed is back in the queue: no sample.
			n := p.ratioN
			for _, st := range []Snapshot{
				{Now: now, Hosts: slices.Clone(hs), Running: []RunningJob{{ID: "F", Hosts: []string{"x0"}, Start: now, End: now.Add(time.Hour)}}},
				{Now: now.Add(time.Second), Hosts: slices.Clone(hs), Queue: []QueuedJob{{ID: "F", Name: "F", Submit: now, Min: 1, Max: 1, Estimate: time.Hour, Arch: "slow"}}},
			} {
				if _, err := p.Plan(context.Background(), st); err != nil {
					t.Fatal(err)
				}
			}
			if p.ratioN != n {
				t.Errorf("a job back in the queue counted as ended: %d samples, had %d", p.ratioN, n)
			}
			s := Snapshot{Now: now, Hosts: slices.Clone(hs), Queue: []QueuedJob{job("J", -10, 2, 2, 100*time.Second)},
				Running: []RunningJob{{ID: "B", Hosts: []string{"f0", "f1", "x0"}, Start: now, End: now.Add(30 * time.Second)}}}
			s.Queue[0].Submit = now.Add(-time.Second)
			s.Queue[0].Arch = ""
			pl, err := p.Plan(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if faults := Check(s, pl); len(faults) > 0 {
				t.Fatal(faults)
			}
			slow := len(pl.StartNow) == 1 && pl.StartNow[0].Hosts[0][0] == 's' && pl.StartNow[0].Predicted == 100*time.Second
			if want := samples == ratioSamples; slow != want {
				t.Errorf("%d samples: plan %+v; want the slow hosts now: %v", samples, pl, want)
			}
		})
	}
}

// The objective names are checked.
func TestPlanGA_UnknownObjective(t *testing.T) {
	if _, err := New("ga-plan", Options{Plan: PlanOptions{Objective: "makespan"}}); err == nil {
		t.Fatal("no error for an unknown objective")
	}
}

// Decisions carry the population over: the same snapshots give the same
// plans for the same seed, and jobs that started leave the chromosomes.
func TestPlanGA_SameSeedSamePlans(t *testing.T) {
	run := func() []string {
		rng := rand.New(rand.NewSource(9))
		p := newPlanForTest(t, Options{Seed: 3})
		var out []string
		for i := 0; i < 100; i++ {
			pl, err := p.Plan(context.Background(), randomSnapshot(rng, false))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(pl.StartNow, pl.Later))
			for _, in := range p.pop {
				if len(in.ord) != 0 && len(in.ord) != len(p.ids) {
					t.Fatalf("chromosome of %d jobs for %d", len(in.ord), len(p.ids))
				}
			}
		}
		return out
	}
	if a, b := run(), run(); !slices.Equal(a, b) {
		t.Error("same seed, different plans")
	}
}

// hetSnapshot is 2-8 hosts of speeds 1 and 2, some running jobs ending
// within 100 s, and 2-9 queued jobs.
func hetSnapshot(rng *rand.Rand) Snapshot {
	ns, nf := 1+rng.Intn(4), 1+rng.Intn(4)
	var hs []Host
	for i := 0; i < ns; i++ {
		hs = append(hs, Host{Name: fmt.Sprintf("s%d", i), Arch: "slow", Speed: 1})
	}
	for i := 0; i < nf; i++ {
		hs = append(hs, Host{Name: fmt.Sprintf("f%d", i), Arch: "fast", Speed: 2})
	}
	now := t0.Add(time.Hour)
	s := Snapshot{Now: now, Hosts: hs}
	perm := rng.Perm(len(hs))
	for len(perm) > 0 && rng.Intn(3) > 0 {
		k := 1 + rng.Intn(min(len(perm), 3))
		var names []string
		for _, h := range perm[:k] {
			names = append(names, hs[h].Name)
		}
		perm = perm[k:]
		s.Running = append(s.Running, RunningJob{ID: fmt.Sprintf("r%d", len(s.Running)), Hosts: names, Start: t0,
			End: now.Add(time.Duration(2+rng.Intn(100)) * time.Second)})
	}
	for i := 0; i < 2+rng.Intn(8); i++ {
		n := 1 + rng.Intn(len(hs))
		s.Queue = append(s.Queue, job(fmt.Sprintf("q%d", i), i, n, n, time.Duration(1+rng.Intn(200))*time.Second))
	}
	return s
}

// A decision on the state the last one left (its starts running as
// predicted, nothing ended) keeps every deadline and every planned start,
// on hosts of two speeds: the carried plan holds each reservation on the
// same hosts of each class.
func TestPlanGA_CarriedPlanKeepsDeadlines(t *testing.T) {
	for _, genes := range []bool{false, true} {
		t.Run(fmt.Sprintf("domain_genes=%v", genes), func(t *testing.T) { carriedPlanKeepsDeadlines(t, genes) })
	}
}

// carriedPlanKeepsDeadlines replays 3,000 random pairs of decisions on hosts
// of two speeds, with or without PlanOptions.DomainGenes.
func carriedPlanKeepsDeadlines(t *testing.T, genes bool) {
	rng := rand.New(rand.NewSource(1))
	for trial := 0; trial < 3000; trial++ {
		s := hetSnapshot(rng)
		p := newPlanForTest(t, Options{Generations: 5, Plan: PlanOptions{Slack: time.Second, DomainGenes: genes}})
		pl, err := p.Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		before := map[string]time.Time{}
		for _, q := range s.Queue {
			if d, ok := p.Deadline(q.ID); ok {
				before[q.ID] = d
			}
		}
		next := s
		next.Running = slices.Clone(s.Running)
		started := map[string]bool{}
		for _, x := range pl.StartNow {
			started[x.Job] = true
			next.Running = append(next.Running, RunningJob{ID: x.Job, Hosts: x.Hosts, Start: s.Now, End: s.Now.Add(x.Predicted)})
		}
		next.Queue = slices.DeleteFunc(slices.Clone(s.Queue), func(q QueuedJob) bool { return started[q.ID] })
		if len(next.Queue) == 0 {
			continue
		}
		if _, err := p.Plan(context.Background(), next); err != nil {
			t.Fatal(err)
		}
		for _, q := range next.Queue {
			d, ok := p.Deadline(q.ID)
			if b, had := before[q.ID]; had && ok && !d.Equal(b) {
				t.Fatalf("trial %d: job %s's deadline moved from +%v to +%v with nothing overrun", trial, q.ID, b.Sub(s.Now), d.Sub(s.Now))
			}
		}
		if p.gpl.cost.viol != 0 {
			t.Fatalf("trial %d: the carried plan breaks a deadline", trial)
		}
	}
}

// Hosts of many speeds (more classes than any fixed bound): a job that
// needs every host is placed, not refused.
func TestPlanGA_ManyClasses(t *testing.T) {
	var hs []Host
	for i := 0; i < 40; i++ {
		hs = append(hs, Host{Name: fmt.Sprintf("h%d", i), Arch: "a", Speed: 1 + float64(i)/10})
	}
	s := Snapshot{Now: t0, Hosts: hs, Queue: []QueuedJob{job("BIG", -1, 40, 40, time.Minute), job("ONE", 0, 1, 1, time.Minute)}}
	pl, err := newPlanForTest(t, Options{}).Plan(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if faults := Check(s, pl); len(faults) > 0 {
		t.Fatal(faults)
	}
	placed := map[string]int{}
	for _, x := range append(pl.StartNow, pl.Later...) {
		placed[x.Job] = len(x.Hosts)
	}
	if placed["BIG"] != 40 || placed["ONE"] != 1 || len(pl.Reject) > 0 {
		t.Errorf("placed %v, rejected %v; want BIG on 40 hosts and ONE on 1", placed, pl.Reject)
	}
}

// A job planned later on the fast hosts is shown (Plan.Later) on fast
// hosts, whichever hosts are free first.
func TestPlanGA_LaterHostsFollowDomain(t *testing.T) {
	hs := []Host{
		{Name: "f0", Arch: "fast", Speed: 2}, {Name: "f1", Arch: "fast", Speed: 2},
		{Name: "s0", Arch: "slow", Speed: 1}, {Name: "s1", Arch: "slow", Speed: 1},
	}
	s := Snapshot{Now: t0, Hosts: hs,
		Running: []RunningJob{{ID: "R", Hosts: []string{"f0", "f1", "s0", "s1"}, Start: t0, End: t0.Add(20 * time.Second)}},
		Queue:   []QueuedJob{job("J", -1, 2, 2, 100*time.Second)}}
	pl, err := newPlanForTest(t, Options{}).Plan(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Later) != 1 || pl.Later[0].Predicted != 50*time.Second {
		t.Fatalf("later %v, want J on the fast hosts for 50s", pl.Later)
	}
	for _, h := range pl.Later[0].Hosts {
		if h[0] != 'f' {
			t.Errorf("J planned on the fast domain, shown on %v", pl.Later[0].Hosts)
		}
	}
}

// Live, in a burst of decisions where no order gains anything (identical
// jobs), only every burstEvolveEvery-th decision evolves after the first;
// the others use the carried plan.
func TestPlanGA_BurstWithNothingToGain(t *testing.T) {
	// A budget that seeding never uses up, so that every decision that
	// evolves runs generations (until the stall rule stops them).
	p := newPlanForTest(t, Options{TimeBudget: time.Minute, Generations: -1})
	now := t0
	p.clock = func() time.Time { now = now.Add(time.Millisecond); return now } // a burst, however slow the machine
	s := Snapshot{Now: t0, Hosts: hosts(4),
		Running: []RunningJob{{ID: "R", Hosts: []string{"h0", "h1", "h2", "h3"}, Start: t0, End: t0.Add(time.Minute)}}}
	for i := 0; i < 20; i++ {
		s.Queue = append(s.Queue, job(fmt.Sprintf("q%02d", i), 0, 1, 1, time.Minute))
	}
	evolved := 0
	for i := 0; i < 9; i++ {
		before := p.Generations()
		if _, err := p.Plan(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		if p.Generations() > before {
			evolved++
		}
	}
	if evolved != 3 { // the first decision, then every fourth (burstEvolveEvery)
		t.Errorf("%d of 9 decisions in a burst evolved, want 3", evolved)
	}
}
