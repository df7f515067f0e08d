package policy

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// A small discrete-event driver for the baseline policies' tests: it plays
// a workload on hosts, asks the policy after every submission and every
// termination (skipping, as the simulator does, when no job waits or no
// host is free), checks every placement it is given, and records what the
// policy planned. Times are whole seconds after t0.

type djob struct {
	id          string
	submit      int
	n           int
	est, actual int // seconds; actual may exceed est (an overrun)
	arch        string
}

// dresult is what a run recorded.
type dresult struct {
	start map[string]int
	// plans[id] is every start the policy predicted for id (StartNow: now;
	// Later: its Start), in call order.
	plans map[string][]int
	// overtaken[id] counts jobs that arrived after id and started while id
	// waited.
	overtaken map[string]int
	calls     int
}

func sec(t time.Time) int { return int(t.Sub(t0) / time.Second) }

// checkPlan fails t if Check, the one plan checker, refuses any part of
// pl, or if pl breaks what every baseline promises beyond a sound plan: a
// job started on exactly max(Min, 1) hosts (they run every job rigid), and
// every later placement after now.
func checkPlan(t *testing.T, name string, s Snapshot, pl Plan) {
	t.Helper()
	if faults := Check(s, pl); len(faults) > 0 {
		t.Fatalf("%s at %d: %v", name, sec(s.Now), faults)
	}
	waiting := map[string]*QueuedJob{}
	for i := range s.Queue {
		waiting[s.Queue[i].ID] = &s.Queue[i]
	}
	for _, p := range pl.StartNow {
		if q := waiting[p.Job]; len(p.Hosts) != max(q.Min, 1) {
			t.Fatalf("%s at %d: %s on %d hosts, wants %d", name, sec(s.Now), p.Job, len(p.Hosts), q.Min)
		}
	}
	for _, p := range pl.Later {
		if !p.Start.After(s.Now) {
			t.Fatalf("%s at %d: later %s at %v, not after now", name, sec(s.Now), p.Job, p.Start)
		}
	}
}

// drive plays jobs on hs under p and returns what happened. It fails t on
// a bad placement, or if jobs are left waiting on an idle machine.
func drive(t *testing.T, p Policy, hs []Host, jobs []djob) dresult {
	t.Helper()
	res := dresult{start: map[string]int{}, plans: map[string][]int{}, overtaken: map[string]int{}}
	jobs = slices.Clone(jobs)
	slices.SortStableFunc(jobs, func(a, b djob) int { return a.submit - b.submit })
	byID := map[string]djob{}
	for _, j := range jobs {
		byID[j.id] = j
	}
	type run struct {
		r   RunningJob
		end int
	}
	var (
		queue   []QueuedJob
		running []run
		next    int
		now     int
	)
	nfree := func() int {
		n := len(hs)
		for _, r := range running {
			n -= len(r.r.Hosts)
		}
		return n
	}
	path := Decider{Policy: p}
	decide := func() {
		if len(queue) == 0 || nfree() == 0 {
			return
		}
		// The policy path of the sched daemon and the simulator: overruns
		// shown ending OverrunMargin after now, the plan checked.
		s := Snapshot{Now: t0.Add(time.Duration(now) * time.Second), Hosts: hs, Queue: slices.Clone(queue)}
		for _, r := range running {
			s.Running = append(s.Running, r.r)
		}
		d, err := path.Decide(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		res.calls++
		s, pl := d.Snapshot, d.Plan
		checkPlan(t, p.Name(), s, pl)
		if len(pl.Reject) > 0 {
			t.Fatalf("%s rejected %+v", p.Name(), pl.Reject)
		}
		for _, l := range pl.Later {
			res.plans[l.Job] = append(res.plans[l.Job], sec(l.Start))
		}
		started := map[string]bool{}
		for _, sn := range pl.StartNow {
			started[sn.Job] = true
			res.plans[sn.Job] = append(res.plans[sn.Job], now)
			j := byID[sn.Job]
			res.start[sn.Job] = now
			running = append(running, run{
				r:   RunningJob{ID: j.id, Name: j.id, Hosts: sn.Hosts, Start: s.Now, End: s.Now.Add(time.Duration(j.est) * time.Second)},
				end: now + j.actual})
		}
		var rest []QueuedJob
		for i, q := range queue {
			if started[q.ID] {
				continue
			}
			for _, later := range queue[i+1:] {
				if started[later.ID] {
					res.overtaken[q.ID]++
				}
			}
			rest = append(rest, q)
		}
		queue = rest
	}
	for next < len(jobs) || len(running) > 0 {
		// The next instant: a submission or a termination.
		now = 1 << 60
		if next < len(jobs) {
			now = jobs[next].submit
		}
		for _, r := range running {
			now = min(now, r.end)
		}
		for next < len(jobs) && jobs[next].submit == now {
			j := jobs[next]
			next++
			queue = append(queue, QueuedJob{ID: j.id, Name: j.id, Submit: t0.Add(time.Duration(j.submit) * time.Second),
				Min: j.n, Max: j.n, Arch: j.arch, Estimate: time.Duration(j.est) * time.Second})
			decide()
		}
		for {
			k := slices.IndexFunc(running, func(r run) bool { return r.end == now })
			if k < 0 {
				break
			}
			running = slices.Delete(running, k, k+1)
			decide()
		}
	}
	if len(queue) > 0 {
		t.Fatalf("%s left %d jobs waiting on an idle machine (first %s)", p.Name(), len(queue), queue[0].ID)
	}
	return res
}

// randomJobs makes a workload of n jobs for m hosts: bursty arrivals,
// sizes mostly small with some wide ones, estimates 1-400 s, actual run
// times at most the estimate (or, with overrun, sometimes over it); with
// arch, a third of the jobs need arch "b".
func randomJobs(rng *rand.Rand, n, m int, overrun, arch bool) []djob {
	jobs := make([]djob, n)
	at := 0
	for i := range jobs {
		if rng.Intn(3) > 0 {
			at += rng.Intn(30)
		}
		size := 1 + rng.Intn(3)
		if rng.Intn(4) == 0 {
			size = 1 + rng.Intn(m)
		}
		est := 1 + rng.Intn(400)
		actual := 1 + rng.Intn(est)
		if overrun && rng.Intn(5) == 0 {
			actual = est + 1 + rng.Intn(100)
		}
		j := djob{id: fmt.Sprintf("j%03d", i), submit: at, n: size, est: est, actual: actual}
		if arch && rng.Intn(3) == 0 {
			j.arch = "b"
			j.n = min(j.n, (m+1)/2)
		}
		jobs[i] = j
	}
	return jobs
}

// mixedHosts is m hosts, alternately of arch "a" and "b".
func mixedHosts(m int) []Host {
	hs := make([]Host, m)
	for i := range hs {
		hs[i] = Host{Name: fmt.Sprintf("h%d", i), Arch: "a"}
		if i%2 == 1 {
			hs[i].Arch = "b"
		}
	}
	return hs
}
