package policy

import (
	"context"
	"slices"
	"time"
)

var _ = register("easy", func(o Options) (Policy, error) { return &easyPolicy{m: newMachine(o)}, nil })

// easyPolicy is EASY backfilling as ../shared/data/README.md defines it
// after pyss (the Hebrew University simulator's EasyBackfillScheduler):
//
//  1. While the first waiting job fits on the hosts free now, start it.
//  2. The first waiting job that does not fit gets a reservation at the
//     shadow time: the earliest time enough hosts are free by the running
//     jobs' predicted ends (RunningJob.End, and jobs started in step 1 at
//     now plus their estimate).
//  3. Every later job, in arrival order, starts now if it fits on the hosts
//     free now and either ends (by its estimate) no later than the shadow
//     time, or uses only hosts the reservation leaves spare.
//
// The reservation is recomputed from scratch at each call (pyss keeps no
// other state either). The policy is stateless and deterministic.
//
// Hosts, not just counts: the reservation holds the head's j.n hosts among
// those it may use that are free by the shadow time, chosen to hold as few
// hosts free now as possible (the ones freed latest first, ties by higher
// index; among hosts free now, the highest indexes). A job that ends by the
// shadow time may take any free host and takes reserved ones first; a
// longer job may take only unreserved ones. For hosts that every job may
// use this is pyss's count rule exactly: the unreserved hosts free now are
// min(free now, free at the shadow time - head's hosts), pyss's "extra"
// processors. With Arch or Cluster constraints the same rule keeps the
// head's reserved hosts for it.
//
// Estimates: the Predictor's, else QueuedJob.Estimate, else the fallback.
type easyPolicy struct {
	m        *machine
	reserved []bool // per host: free now and held for the head
	resList  []int
}

func (p *easyPolicy) Name() string { return "easy" }

// Reads implements Policy: any waiting job may backfill.
func (p *easyPolicy) Reads() int { return 0 }

// Plan implements Policy.
func (p *easyPolicy) Plan(ctx context.Context, s Snapshot) (Plan, error) {
	m := p.m
	m.load(ctx, &s)
	plan := Plan{Reject: slices.Clone(m.rejects)}
	// 1. Start the head while it fits.
	h := 0
	for ; h < len(m.jobs); h++ {
		j := &m.jobs[h]
		if m.freeFor(j) < j.n {
			break
		}
		plan.StartNow = append(plan.StartNow, m.take(j))
	}
	if h == len(m.jobs) {
		return plan, nil
	}
	// 2. The head's reservation.
	head := &m.jobs[h]
	shadow, later := p.reserve(head)
	plan.Later = append(plan.Later, later)
	// 3. Backfill.
	resFree := len(p.resList) // reserved hosts still free
	for k := h + 1; k < len(m.jobs) && len(m.free) > 0; k++ {
		j := &m.jobs[k]
		if j.allow == nil && j.n > len(m.free) {
			continue // cannot fit now whatever its length
		}
		short := m.estimate(j) <= shadow
		if short && m.fastFirst {
			// Short jobs take the reserved hosts, the slowest free ones:
			// short must hold on those, not only on the fastest.
			short = m.onHosts(j, p.slowest(j)) <= shadow
		}
		avail := 0
		switch {
		case j.allow == nil && short:
			avail = len(m.free)
		case j.allow == nil:
			avail = len(m.free) - resFree
		default:
			for _, x := range m.free {
				if j.allow.Has(x) && (short || !p.reserved[x]) {
					avail++
				}
			}
		}
		if avail < j.n {
			continue
		}
		// Short jobs take reserved hosts first, leaving unreserved ones to
		// longer jobs; long jobs take unreserved ones only.
		m.pick = m.pick[:0]
		if short {
			resFree -= p.pickFree(j, true)
		}
		p.pickFree(j, false)
		plan.StartNow = append(plan.StartNow, m.startOn(j, m.pick))
	}
	for _, x := range p.resList {
		p.reserved[x] = false
	}
	return plan, nil
}

// slowest is the j.n slowest free hosts j may use (m.free is fastest
// first with fastFirst).
func (p *easyPolicy) slowest(j *qjob) []int {
	m := p.m
	var hs []int
	for x := len(m.free) - 1; x >= 0 && len(hs) < j.n; x-- {
		if h := m.free[x]; j.allow == nil || j.allow.Has(h) {
			hs = append(hs, h)
		}
	}
	return hs
}

// pickFree adds to m.pick, up to j.n hosts, the free hosts j may use that
// are reserved (or unreserved), and returns how many it added.
func (p *easyPolicy) pickFree(j *qjob, reserved bool) int {
	m := p.m
	added := 0
	for _, x := range m.free {
		if len(m.pick) == j.n {
			break
		}
		if p.reserved[x] == reserved && (j.allow == nil || j.allow.Has(x)) {
			m.pick = append(m.pick, x)
			added++
		}
	}
	return added
}

// reserve computes the head's shadow time and reserved hosts, marks the
// reserved hosts that are free now, and returns the head's placement.
func (p *easyPolicy) reserve(head *qjob) (int64, Placement) {
	m := p.m
	p.reserved = resize(p.reserved, len(m.hosts))
	p.resList = p.resList[:0]
	uses := func(x int) bool { return head.allow == nil || head.allow.Has(x) }
	// The shadow time: walk the releases until enough usable hosts are
	// free; releases at that same time count too (they are free then).
	need := head.n - m.freeFor(head)
	shadow, last := never, -1
	rel := m.releases()
	for r := range rel {
		if rel[r].at > shadow {
			break
		}
		for _, x := range m.relHosts(rel[r]) {
			if uses(x) {
				need--
			}
		}
		last = r
		if need <= 0 && shadow == never {
			shadow = rel[r].at
		}
	}
	// Reserved hosts: the latest-freed first (ties: higher index), then
	// hosts free now from the highest index down.
	hosts := make([]string, 0, head.n)
	for r := last; r >= 0 && len(hosts) < head.n; r-- {
		hs := m.relHosts(rel[r])
		for x := len(hs) - 1; x >= 0 && len(hosts) < head.n; x-- {
			if uses(hs[x]) {
				hosts = append(hosts, m.hosts[hs[x]].Name)
			}
		}
	}
	for x := len(m.free) - 1; x >= 0 && len(hosts) < head.n; x-- {
		if h := m.free[x]; uses(h) {
			hosts = append(hosts, m.hosts[h].Name)
			p.reserved[h] = true
			p.resList = append(p.resList, h)
		}
	}
	return shadow, Placement{Job: head.q.ID, Hosts: hosts, Start: m.at(shadow), Predicted: time.Duration(m.estimate(head))}
}
