package policy

import (
	"math"
	"slices"
)

// This file is how much SCOJO-P's run-time estimates overstate the runs.
//
// The paper takes run times as known, and says how to do without them
// (§4.5): "taking the runtimes as user-estimated runtimes and adding a
// statistical over-estimate model", for which "only the average percentage
// of the overestimate would be needed ... as we consider averages of
// runtimes only". Told users' requests or the profiler's upper limits, the
// load over a candidate's run is wrong in one way that matters: the run
// (the span over which arrivals are counted) and every arrival's work are
// both overstated, so the expected arrivals' share of the load is
// overstated by the overstatement itself (the running and waiting jobs'
// share is not: their times are as overstated as the span). On o2k told
// the requests, every job was predicted to run into a flood of arrivals,
// shrank, and ran longer (bench moldable --estimate request: 1.307 of
// EASY's mean response).
//
// The ratio is learnt from the jobs seen running that have since gone:
// their work done (hosts × run) over their work as estimated (hosts × their
// predicted end less their start, as first seen), summed over the jobs
// that ended in the last scojoWindow. A policy is not called at every end
// (the simulator skips the calls while no job waits or no host is free),
// so a run is known only to have ended between the last call that saw it
// and the first that did not: it is taken as its estimate when that falls
// between, else as the nearer bound (timed at the first call that missed
// it, runs told exact times came out 4-7 % over their estimates). The ratio
// scales every estimated time of Fig. 1's load (load). Told exact times it
// is 1, and changes nothing.

// scojoMinEnded is how many ended jobs the window must hold before their
// ratio is used: fewer say little of the estimates, which are taken as
// they are until then.
const scojoMinEnded = 20

// overstate learns the ratio of actual to estimated work.
type overstate struct {
	running map[string]seenRun // by job ID, as first seen running
	gone    []string           // scratch
	ended   []endedRun         // by end, ended[head:] within the window
	head    int
	done    float64 // Σ hosts × actual run over ended[head:], seconds
	est     float64 // Σ hosts × estimated run over ended[head:], seconds
}

type seenRun struct {
	start, est int64 // UnixNano; estimated run, ns
	last       int64 // UnixNano of the last call that saw it running
	hosts      int
	seen       bool // in this call's snapshot
}

type endedRun struct {
	at        int64 // UnixNano
	done, est float64
}

// observe takes the running jobs of s: the ones gone since the last call
// ended now. A job first seen past its estimate (shown ending
// OverrunMargin after now) has no estimate left to compare and is not
// taken; one seen with another start than before (started again, or not
// yet started when first seen) is taken from its new start.
func (o *overstate) observe(s *Snapshot) {
	now := s.Now.UnixNano()
	if o.running == nil {
		o.running = map[string]seenRun{}
	}
	for i := range s.Running {
		r := &s.Running[i]
		start := r.Start.UnixNano()
		if v, ok := o.running[r.ID]; ok && v.start == start {
			v.seen, v.last = true, now
			o.running[r.ID] = v
			continue
		}
		if r.Start.IsZero() || !r.End.After(r.Start) || !r.End.After(s.Now.Add(OverrunMargin)) || len(r.Hosts) == 0 {
			delete(o.running, r.ID)
			continue // nothing to compare: no start, or no estimate left
		}
		o.running[r.ID] = seenRun{start: start, est: r.End.UnixNano() - start, last: now, hosts: len(r.Hosts), seen: true}
	}
	o.gone = o.gone[:0]
	for id, v := range o.running {
		if !v.seen {
			o.gone = append(o.gone, id)
			continue
		}
		v.seen = false
		o.running[id] = v
	}
	slices.Sort(o.gone) // sums in one order: the same input, the same ratio
	for _, id := range o.gone {
		v := o.running[id]
		delete(o.running, id)
		n := float64(v.hosts)
		run := min(max(v.est, v.last-v.start), now-v.start)
		e := endedRun{at: now, done: n * math.Max(float64(run), 0) / 1e9, est: n * float64(v.est) / 1e9}
		o.ended = append(o.ended, e)
		o.done += e.done
		o.est += e.est
	}
	from := now - int64(scojoWindow)
	o.ended, o.head = dropBefore(o.ended, o.head, func(e *endedRun) bool { return e.at < from }, func(e *endedRun) {
		o.done -= e.done
		o.est -= e.est
	})
	if o.head == len(o.ended) { // empty: no rounding left over
		o.done, o.est = 0, 0
	}
}

// ratio is the actual over the estimated work of the window's ended jobs,
// within 1/100..100; 1 until scojoMinEnded have ended.
func (o *overstate) ratio() float64 {
	if len(o.ended)-o.head < scojoMinEnded || o.est <= 0 {
		return 1
	}
	return math.Min(math.Max(o.done/o.est, 0.01), 100)
}
