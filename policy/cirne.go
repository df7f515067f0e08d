package policy

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

var _ = register("cirne-berman", func(o Options) (Policy, error) { return newMold("cirne-berman", sizeAtSubmit, o), nil })

// cirne-berman is Cirne and Berman's submit-time sizing ("When the Herd is
// Smart", as SCOJO-P's paper describes it, §3) on the scheduler of
// scojo.go: when a moldable job is first seen, the schedule of the jobs
// running and waiting is simulated for each size it may take, and it gets
// the size whose simulated finish is soonest (ties to the smaller size);
// the size is then fixed, remembered by job ID across calls. As in the
// paper, the simulation takes predicted run times as exact and every size
// from Min to Max is a candidate (Cirne and Berman drew a few sizes; the
// SCOJO-P paper imposes no size constraints on either approach).
//
// The simulation is the scheduler's own, as the paper requires ("provided
// that a simulator is available with the same scheduling algorithm as
// employed in the actual job scheduler"; Cirne and Berman's own scheduler
// was conservative backfilling, the paper's and msched's is EASY): EASY
// backfilling run forward in time, with no arrivals, over the hosts free
// now, the running jobs' predicted ends and the waiting jobs ahead of the
// new one in priority order (short and aged, medium, long; each already
// sized). The new job, last of them, starts at the first moment EASY
// would start it: when it is the first still waiting and fits, or when it
// fits beside the head's reservation (ends by the shadow time, or takes
// only hosts the head leaves spare). Jobs behind it in priority order are
// left out, and so are later changes of priority (aging). The simulation
// counts hosts, not which ones (exact when jobs may use any host; an
// approximation under Arch or Cluster constraints, which choose a size
// only).

// sizeAtSubmission gives each job without a size one, in priority order,
// and every job its size. Sizing many new jobs at once (a restart with a
// long queue) takes a while: it stops when ctx ends.
func (p *moldPolicy) sizeAtSubmission(ctx context.Context) error {
	m := p.m
	for i, k := range p.order {
		if err := ctx.Err(); err != nil {
			return err
		}
		j := &m.jobs[k]
		c := p.cv[k]
		size, ok := p.fixed[j.q.ID]
		if !ok || size < c.lo || size > c.hi() {
			if c.rigid() {
				size = c.lo
			} else {
				var end int64
				size, end = p.sim.soonest(p, p.order[:i], c)
				p.why[k] = fmt.Sprintf("%s: chosen when submitted, the size the simulated schedule then finished soonest (in %s)",
					p.ofRange(k, size), approx(end))
			}
			p.fixed[j.q.ID] = size
		} else if !c.rigid() {
			p.why[k] = fmt.Sprintf("%s: chosen when submitted, the size the simulated schedule then finished soonest", p.ofRange(k, size))
		}
		p.size[k] = size
	}
	return nil
}

// easyStep is one moment of a simulated EASY schedule, after its pass at
// t: free hosts are left free; while some job still waits (head), a job
// behind every one simulated starts at t only if it fits in free and ends
// by shadow or takes at most extra hosts.
type easyStep struct {
	t, shadow   int64
	free, extra int
	head        bool
}

// lets reports whether a job of n hosts and d long, behind every simulated
// job, starts at s.
func (s easyStep) lets(n int, d int64) bool {
	return n <= s.free && (!s.head || sat(s.t, d) <= s.shadow || n <= s.extra)
}

// easySim runs EASY forward to size a job; its buffers are kept from call
// to call.
type easySim struct {
	jobs  []simJob
	wait  []int32 // jobs not started, in priority order
	ends  []simEnd
	found []bool // per size of the curve: its start is known

	// This simulation's: sim.ends[next:] are to come, sim.wait[w0:] still
	// wait, free hosts are free.
	next, w0, free int
}

type simJob struct {
	n int
	d int64
}

// simEnd is n hosts freed at at.
type simEnd struct {
	at int64
	n  int
}

// soonest simulates EASY from now over the running jobs' predicted ends and
// the jobs ahead (m.jobs indexes in priority order, at p.size) and returns
// the size of c that ends first, starting at the first step that lets it
// (ties to the smaller), and that end (offset from now). The simulation
// stops once no later start can end sooner.
func (sim *easySim) soonest(p *moldPolicy, ahead []int, c *curve) (int, int64) {
	sim.load(p, ahead)
	sim.found = resize(sim.found, len(c.t))
	clear(sim.found)
	best, end, left, shortest := c.lo, never, len(c.t), never
	for n := c.lo; n <= c.hi(); n++ {
		shortest = min(shortest, max(c.at(n), overrunEnd))
	}
	for t := int64(0); ; t = sim.ends[sim.next].at {
		step := sim.pass(t)
		// The sizes this step lets start, each at its first.
		for n := c.lo; n <= c.hi(); n++ {
			if d := max(c.at(n), overrunEnd); !sim.found[n-c.lo] && step.lets(n, d) {
				sim.found[n-c.lo] = true
				left--
				if e := sat(t, d); e < end || (e == end && n < best) {
					best, end = n, e
				}
			}
		}
		if left == 0 || sim.next == len(sim.ends) || sat(sim.ends[sim.next].at, shortest) > end {
			return best, end
		}
	}
}

// load sets the simulation at now: the hosts free, the running jobs'
// predicted ends, and the jobs ahead waiting.
func (sim *easySim) load(p *moldPolicy, ahead []int) {
	m := p.m
	sim.ends = sim.ends[:0]
	sim.free = len(m.free)
	total := sim.free
	for _, r := range m.releases() {
		sim.ends = append(sim.ends, simEnd{at: r.at, n: r.n()})
		total += r.n()
	}
	slices.SortFunc(sim.ends, func(a, b simEnd) int { return cmp.Compare(a.at, b.at) })
	sim.jobs, sim.wait = sim.jobs[:0], sim.wait[:0]
	for _, k := range ahead {
		// A job larger than the hosts up never starts (nor, in EASY,
		// holds the others back).
		if n := p.size[k]; n <= total {
			sim.wait = append(sim.wait, int32(len(sim.jobs)))
			sim.jobs = append(sim.jobs, simJob{n: n, d: max(p.cv[k].at(n), overrunEnd)})
		}
	}
	sim.next, sim.w0 = 0, 0
}

// pass is EASY's pass at t (easy.go's rule, counted as pyss counts it):
// the hosts of the ends due are freed, the head starts while it fits, the
// first that does not is reserved for the shadow time, and the jobs after
// it start if they fit and end by then or take only the hosts it leaves
// spare. It returns what a job behind them all could start on at t.
func (sim *easySim) pass(t int64) easyStep {
	for ; sim.next < len(sim.ends) && sim.ends[sim.next].at <= t; sim.next++ {
		sim.free += sim.ends[sim.next].n
	}
	for ; sim.w0 < len(sim.wait) && sim.jobs[sim.wait[sim.w0]].n <= sim.free; sim.w0++ {
		sim.start(sim.wait[sim.w0], t)
	}
	if sim.w0 == len(sim.wait) {
		return easyStep{t: t, free: sim.free}
	}
	// The shadow time: ends until enough hosts are free for the head, and
	// the ends at that same time too (they are free then).
	head := sim.jobs[sim.wait[sim.w0]]
	acc, shadow := sim.free, never
	for _, e := range sim.ends[sim.next:] {
		if e.at > shadow {
			break
		}
		if acc += e.n; acc >= head.n && shadow == never {
			shadow = e.at
		}
	}
	extra := acc - head.n // spare at the shadow time
	kept := sim.w0 + 1    // sim.wait[w0:kept] still wait
	for i := sim.w0 + 1; i < len(sim.wait); i++ {
		if sim.free == 0 { // nothing more starts: keep the rest
			kept += copy(sim.wait[kept:], sim.wait[i:])
			break
		}
		w := sim.wait[i]
		j := sim.jobs[w]
		short := sat(t, j.d) <= shadow
		if j.n > sim.free || (!short && j.n > min(sim.free, extra)) {
			sim.wait[kept] = w
			kept++
			continue
		}
		sim.start(w, t)
		if !short {
			extra -= j.n
		}
	}
	sim.wait = sim.wait[:kept]
	return easyStep{t: t, free: sim.free, head: true, shadow: shadow, extra: min(sim.free, extra)}
}

// start starts job w at t: its hosts are taken, its end is among those to
// come.
func (sim *easySim) start(w int32, t int64) {
	j := sim.jobs[w]
	at := sat(t, j.d)
	i, _ := slices.BinarySearchFunc(sim.ends[sim.next:], at, func(e simEnd, t int64) int { return cmp.Compare(e.at, t) })
	sim.ends = slices.Insert(sim.ends, sim.next+i, simEnd{at: at, n: j.n})
	sim.free -= j.n
}
