package policy

import (
	"cmp"
	"context"
	"slices"
	"time"
)

var _ = register("conservative", func(o Options) (Policy, error) {
	return &conservativePolicy{m: newMachine(o),
		res: map[string]resv{}, prev: map[string]tail{}, cur: map[string]tail{}}, nil
})

// conservativePolicy is conservative backfilling with pyss's semantics
// (the Hebrew University simulator's ConservativeScheduler), not the
// simpler "recompute every reservation from scratch":
//
//   - A job that arrives gets a reservation at the earliest time it fits in
//     the profile of free hosts over time, with every earlier reservation in
//     place (earlier and *later* jobs' reservations alike: it goes into a
//     hole or at the end). Reservations are kept between calls.
//   - When a running job terminates (before its predicted end: its tail
//     frees hosts), the waiting jobs are compressed once, in arrival order:
//     each is taken out and put back at the earliest time it fits with all
//     the others in place. A reservation never moves later.
//   - A job starts now exactly when its reservation is now.
//
// The two differ: from scratch, a job is placed after earlier jobs only, and
// an earlier job moving into a freed hole can push a later one back; in
// pyss a later job keeps its slot and earlier jobs fit around it.
//
// The policy tells events apart from snapshots: a job in the queue that it
// has no reservation for has arrived; a job that was running (or that it
// started) at the last call and is no longer running has terminated. When
// both happened since the last call (the simulator skips decisions while no
// host is free, so a submission can go unseen until a termination), the
// arrivals are placed first, with the terminated jobs' remaining predicted
// run still holding their hosts, as pyss saw them (submissions come before
// terminations at an instant, and a skipped submission preceded the
// termination that ends the skip). A reservation that no longer fits (a job
// overran its prediction, hosts changed, a job's estimate changed, or a job
// did not start when planned) is placed again, and the queue compressed.
//
// The profile counts hosts (cprofile, one class), which is exact when every job
// may use any host. A job with Arch or Cluster constraints is never
// reserved before enough of its own hosts are predicted free by the
// running jobs, but other reservations are counted, not matched, against
// its hosts: if its reservation comes and its hosts are taken, it does not
// start, and is placed again at the next call. Later placements name hosts
// by assigning the reservations free hosts in start order.
type conservativePolicy struct {
	m    *machine
	prof cprofile
	res  map[string]resv // reservations of waiting jobs
	prev map[string]tail // running at the last call, and started by it
	cur  map[string]tail
	at   []int64 // per m.jobs: reservation offset, or unplaced
	lb   []int64 // per m.jobs: earliest offset its own hosts allow
	gone []tail  // terminated since the last call
	gant gantt
}

// resv is a remembered reservation: absolute start (UnixNano), estimate
// and host count it was made with.
type resv struct {
	start, d int64
	n        int
}

// tail is a running job's predicted end (UnixNano) and host count.
type tail struct {
	end int64
	n   int
}

const unplaced = int64(-1)

func (p *conservativePolicy) Name() string { return "conservative" }

// Reads implements Policy: every waiting job has a reservation.
func (p *conservativePolicy) Reads() int { return 0 }

// Plan implements Policy.
func (p *conservativePolicy) Plan(ctx context.Context, s Snapshot) (Plan, error) {
	m := p.m
	m.load(ctx, &s)
	plan := Plan{Reject: slices.Clone(m.rejects)}
	now := s.Now.UnixNano()
	p.prof.build1(len(m.free), m.releases())

	// Terminations since the last call.
	clear(p.cur)
	for r := range s.Running {
		p.cur[s.Running[r].ID] = tail{end: now + m.runEnd[r], n: m.runOff[r+1] - m.runOff[r]}
	}
	p.gone = p.gone[:0]
	for id, t := range p.prev {
		if _, ok := p.cur[id]; !ok {
			p.gone = append(p.gone, t)
		}
	}
	// Their remaining predicted run holds hosts while arrivals are placed,
	// if the arrivals came first: see tailsFirst.
	tails := p.tailsFirst()
	if tails {
		for _, t := range p.gone {
			if t.end > now {
				p.prof.add1(-t.n, 0, t.end-now)
			}
		}
	}

	// Remembered reservations that still fit, in arrival order.
	p.at = resize(p.at, len(m.jobs))
	p.lb = resize(p.lb, len(m.jobs))
	dirty := false
	for k := range m.jobs {
		j := &m.jobs[k]
		d := m.estimate(j)
		p.at[k], p.lb[k] = unplaced, 0
		if j.allow != nil {
			p.lb[k] = m.whenFree(j)
		}
		r, ok := p.res[j.q.ID]
		if !ok {
			continue
		}
		if off := r.start - now; r.d == d && r.n == j.n && off >= p.lb[k] && p.prof.fits1(j.n, off, d) {
			p.prof.add1(-j.n, off, d)
			p.at[k] = off
		} else {
			dirty = true
		}
	}
	// Arrivals (and reservations that no longer fit), in arrival order.
	for k := range m.jobs {
		if p.at[k] == unplaced {
			p.place(k)
		}
	}
	if tails {
		for _, t := range p.gone {
			if t.end > now {
				p.prof.add1(t.n, 0, t.end-now)
			}
		}
	}
	// Compression.
	if len(p.gone) > 0 || dirty {
		for k := range m.jobs {
			if p.at[k] == never {
				p.at[k] = unplaced
			} else {
				p.prof.add1(m.jobs[k].n, p.at[k], m.jobs[k].est)
			}
			p.place(k)
		}
	}

	// Start the jobs whose reservation is now; constrained ones first, as
	// they are the choosier.
	clear(p.res)
	clear(p.prev)
	for pass := 0; pass < 2; pass++ {
		for k := range m.jobs {
			j := &m.jobs[k]
			if p.at[k] != 0 || (j.allow != nil) != (pass == 0) {
				continue
			}
			if m.freeFor(j) < j.n {
				continue // constrained, its hosts taken: placed again next call
			}
			pl := m.take(j)
			plan.StartNow = append(plan.StartNow, pl)
			p.prev[j.q.ID] = tail{end: now + max(j.est, overrunEnd), n: j.n}
			p.at[k] = unplaced - 1 // started
		}
	}
	for id, t := range p.cur {
		p.prev[id] = t
	}
	for k := range m.jobs {
		j := &m.jobs[k]
		if p.at[k] >= 0 && p.at[k] != never {
			p.res[j.q.ID] = resv{start: now + p.at[k], d: j.est, n: j.n}
		}
	}
	plan.Later = p.gant.assign(m, p.at)
	return plan, nil
}

// tailsFirst reports whether jobs that arrived since the last call did so
// before the jobs that terminated since then. The simulator (like the
// daemon) asks after every termination while jobs wait, and after every
// arrival while a host is free; so an arrival goes unseen until a
// termination only when no host was free, and then the hosts free now are
// exactly those of the terminated job. Otherwise the terminations came
// first (while no job waited) and pyss had released their tails before
// the arrivals.
func (p *conservativePolicy) tailsFirst() bool {
	if len(p.gone) == 0 {
		return false
	}
	n := 0
	for _, t := range p.gone {
		n += t.n
	}
	return len(p.m.free) == n
}

// place gives job k the earliest reservation that fits in the profile.
func (p *conservativePolicy) place(k int) {
	j := &p.m.jobs[k]
	off := p.prof.earliest(class0, int32(j.n), j.est, p.lb[k])
	p.at[k] = off
	if off != never {
		p.prof.add1(-j.n, off, j.est)
	}
}

// gantt names hosts for the reservations: in start order each takes hosts
// from those free by then (hosts released by running jobs and by earlier
// reservations' ends). It is a prediction for the schedule viewer; with
// constrained jobs it may name fewer hosts than the job needs.
type gantt struct {
	ev   []gev
	pool []int
	hbuf []int
	lo   []int // per job: its hosts are hbuf[lo:hi]
	hi   []int
}

// gev is a sweep event: a release (job < 0, hosts rel), a reservation's end
// or its start.
type gev struct {
	t    int64
	kind int // 0 release, 1 end, 2 start: frees before takes at one time
	job  int
	rel  int
}

func (g *gantt) assign(m *machine, at []int64) []Placement {
	g.ev = g.ev[:0]
	for r := range m.releases() {
		g.ev = append(g.ev, gev{t: m.rel[r].at, kind: 0, job: -1, rel: r})
	}
	n := 0
	for k := range m.jobs {
		if at[k] > 0 && at[k] != never {
			n++
			g.ev = append(g.ev, gev{t: at[k], kind: 2, job: k},
				gev{t: sat(at[k], max(m.jobs[k].est, overrunEnd)), kind: 1, job: k})
		}
	}
	if n == 0 {
		return nil
	}
	slices.SortFunc(g.ev, func(a, b gev) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		if a.kind != b.kind {
			return a.kind - b.kind
		}
		return a.job - b.job
	})
	g.pool = append(g.pool[:0], m.free...)
	g.hbuf = g.hbuf[:0]
	g.lo = resize(g.lo, len(m.jobs))
	g.hi = resize(g.hi, len(m.jobs))
	out := make([]Placement, 0, n)
	for _, e := range g.ev {
		switch e.kind {
		case 0:
			g.pool = append(g.pool, m.relHosts(m.rel[e.rel])...)
		case 1:
			g.pool = append(g.pool, g.hbuf[g.lo[e.job]:g.hi[e.job]]...)
		case 2:
			j := &m.jobs[e.job]
			from := len(g.hbuf)
			names := make([]string, 0, j.n)
			for x := len(g.pool) - 1; x >= 0 && len(names) < j.n; x-- {
				if h := g.pool[x]; j.allow == nil || j.allow.Has(h) {
					g.hbuf = append(g.hbuf, h)
					names = append(names, m.hosts[h].Name)
					g.pool[x] = -1
				}
			}
			g.pool = slices.DeleteFunc(g.pool, func(h int) bool { return h < 0 })
			g.lo[e.job], g.hi[e.job] = from, len(g.hbuf)
			out = append(out, Placement{Job: j.q.ID, Hosts: names, Start: m.at(e.t), Predicted: time.Duration(j.est)})
		}
	}
	return out
}
