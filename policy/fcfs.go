package policy

import (
	"cmp"
	"context"
	"slices"
)

// The queue-scanning baselines. Each reads the queue in an order, starts a
// job when enough free hosts that it may use exist now, and either stops at
// the first job that does not fit or skips it and goes on ("fill", after
// Gibbons). They plan no reservations: Plan.Later stays empty.
//
//   - fcfs: arrival order; stop at the first job that does not fit.
//   - fcfs-fill: arrival order; skip jobs that do not fit (first fit over the
//     whole queue).
//   - fpfs: Bucur and Epema's Fit Processors First Served: arrival order,
//     skipping, but a job may be overtaken at most Options.MaxJumps times
//     (default 7; negative: unbounded, which is fcfs-fill; 0, as in the
//     paper, is exactly fcfs); once a waiting job has been overtaken that
//     often, no job behind it starts until it has started. Overtakes are
//     counted across Plan calls, by job ID.
//   - lwf and lwf-strict: see lwf.go.
//
// fcfs, fcfs-fill and fpfs also place multicluster requests that must be
// co-allocated (QueuedJob.Request; Bucur and Epema's FCFS and FPFS): such a
// job fits when Coallocate places it on the hosts free now, by the rules of
// coalloc.go and Options.Fit, and then starts on those hosts; otherwise it
// does not fit, and the scan stops or skips it as for any job. A request
// that no state of the clusters could ever hold is rejected. lwf and
// lwf-strict, like every other policy, reject co-allocated requests.
var (
	_ = register("fcfs", func(o Options) (Policy, error) {
		return &scanPolicy{name: "fcfs", m: newMachine(o).coallocates()}, nil
	})
	_ = register("fcfs-fill", func(o Options) (Policy, error) {
		return &scanPolicy{name: "fcfs-fill", m: newMachine(o).coallocates(), fill: true}, nil
	})
	_ = register("fpfs", func(o Options) (Policy, error) {
		o = o.withDefaults()
		return &scanPolicy{name: "fpfs", m: newMachine(o).coallocates(), fill: true,
			bounded: *o.MaxJumps >= 0, maxJumps: *o.MaxJumps,
			jumps: map[string]int{}, next: map[string]int{}}, nil
	})
)

// scanPolicy is the common shape of fcfs, fcfs-fill, fpfs, lwf and
// lwf-strict.
type scanPolicy struct {
	name string
	m    *machine
	// byEstimate orders the queue by estimated run time (stable, so ties
	// keep arrival order) instead of arrival.
	byEstimate bool
	// fill skips a job that does not fit instead of stopping there.
	fill bool
	// bounded: at most maxJumps overtakes per job (fpfs).
	bounded  bool
	maxJumps int
	jumps    map[string]int // overtakes so far, by job ID
	next     map[string]int // the next call's jumps (swapped in)
	order    []int
	started  []bool
}

func (p *scanPolicy) Name() string { return p.name }

// Reads implements Policy: the scans go over the whole queue.
func (p *scanPolicy) Reads() int { return 0 }

// Plan implements Policy.
func (p *scanPolicy) Plan(ctx context.Context, s Snapshot) (Plan, error) {
	m := p.m
	m.load(ctx, &s)
	plan := Plan{Reject: slices.Clone(m.rejects)}
	p.order = p.order[:0]
	for i := range m.jobs {
		p.order = append(p.order, i)
	}
	if p.byEstimate {
		for i := range m.jobs {
			m.estimate(&m.jobs[i])
		}
		slices.SortStableFunc(p.order, func(a, b int) int { return cmp.Compare(m.jobs[a].est, m.jobs[b].est) })
	}
	p.started = resize(p.started, len(m.jobs))
	clear(p.started)
	// slack is how many more jobs may still overtake every job skipped so
	// far (the least, over them, of MaxJumps minus their overtakes).
	slack := int(^uint(0) >> 1)
	for _, k := range p.order {
		j := &m.jobs[k]
		if m.placeNow(j) {
			if p.bounded && slack == 0 {
				break
			}
			plan.StartNow = append(plan.StartNow, m.startOn(j, m.pick))
			p.started[k] = true
			slack--
			continue
		}
		if !p.fill {
			break
		}
		if p.bounded {
			slack = min(slack, p.maxJumps-p.jumps[j.q.ID])
			if slack <= 0 {
				break // j may not be overtaken again
			}
		}
	}
	if p.bounded {
		p.countJumps()
	}
	return plan, nil
}

// countJumps adds to each job that did not start the number of jobs after
// it in the scan that started (each of them overtook it).
func (p *scanPolicy) countJumps() {
	clear(p.next)
	after := 0
	for x := len(p.order) - 1; x >= 0; x-- {
		k := p.order[x]
		if p.started[k] {
			after++
			continue
		}
		id := p.m.jobs[k].q.ID
		if n := p.jumps[id] + after; n > 0 {
			p.next[id] = n
		}
	}
	p.jumps, p.next = p.next, p.jumps
}
