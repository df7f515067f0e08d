package policy

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// Moldable-job sizing: SCOJO-P (Barsanti and Sodan, "Adaptive Job
// Scheduling via Predictive Job Resource Allocation"; SEEDS.md §3), and the
// two schedulers the paper compares it with, on one scheduler:
//
//   - scojo-p: a job's size is chosen when it comes up to start, from the
//     predicted load over its run (scojo_load.go).
//   - scojo-rigid: every job on its optimum size N_opt; the paper's
//     "traditional" scheduler, with the same priorities and backfilling.
//   - cirne-berman: a job's size is chosen once, when it is first seen
//     (submission), as the size that the simulated schedule of the queue
//     then finishes soonest (cirne.go); Cirne and Berman's scheduler.
//
// The scheduler underneath is the paper's (§5.2, "the same basic
// approaches ... for all approaches"): jobs are ordered by class, short
// (run time at N_opt under 60 s) before medium (under an hour) before long,
// each in arrival order, except that a medium or long job that has waited
// more than 5 times its run time at N_opt is aged: its priority is raised
// to the short jobs', among which it goes by arrival. Then EASY
// backfilling, which is easy.go's policy itself: each call hands it the
// queue in priority order, every job fixed to the size chosen for it
// (Min = Max = size), and easy starts the head while it fits, reserves for
// the first that does not, and backfills the rest in that order.
//
// Sizes and run times come from the job's curve (scojo_size.go): the
// predictor's answer on each host count (a performance model; in the
// simulator the job's Time) or, without one, SCOJO-P's efficiency model
// (models.Efficiency). Rigid jobs (Min == Max) keep their size.
var (
	_ = register("scojo-p", func(o Options) (Policy, error) { return newMold("scojo-p", sizeAtStart, o), nil })
	_ = register("scojo-rigid", func(o Options) (Policy, error) { return newMold("scojo-rigid", sizeOpt, o), nil })
)

// How a moldPolicy sizes jobs.
const (
	sizeOpt      = iota // N_opt (scojo-rigid)
	sizeAtStart         // SCOJO-P
	sizeAtSubmit        // Cirne-Berman
)

// moldPolicy is the class-priority EASY scheduler with one of the sizings.
type moldPolicy struct {
	name string
	mode int
	m    *machine    // this call's view, where sizes are tried
	easy *easyPolicy // EASY over the sized queue, on a machine of its own
	cs   curves      // run times by host count, by job ID
	hist history     // SCOJO-P's arrival history
	ends overstate   // SCOJO-P's ended runs against their estimates (ratio 1 for the others)
	// fixed, by job ID: under scojo-p the least size a job waiting for more
	// hosts is guaranteed (Fig. 3: "memorized and guaranteed as the job's
	// later minimum size"); under cirne-berman the size chosen at
	// submission.
	fixed map[string]int

	// This call's, per m.jobs index.
	cv      []*curve
	lo      []int // least size: Min, or fixed under scojo-p
	size    []int
	started []bool // started now (on p.m) by the head loop
	why     []string
	order   []int // m.jobs indexes in priority order
	group   []int
	queue   []QueuedJob // the sized queue handed to easy
	whyOf   map[string]string
	sim     easySim // cirne-berman's simulation
}

func newMold(name string, mode int, o Options) *moldPolicy {
	// EASY is handed each job with its Estimate set to its run time at the
	// size chosen for it (the curve's), and takes it as it is: asked again,
	// the live predictor would read that Estimate as the user's walltime
	// and record it as the prediction's source.
	inner := o
	inner.Predictor = nil
	return &moldPolicy{name: name, mode: mode, m: newMachine(o), easy: &easyPolicy{m: newMachine(inner)},
		fixed: map[string]int{}, whyOf: map[string]string{}}
}

func (p *moldPolicy) Name() string { return p.name }

// Reads implements Policy: sizing and backfilling read the whole queue.
func (p *moldPolicy) Reads() int { return 0 }

// Plan implements Policy.
func (p *moldPolicy) Plan(ctx context.Context, s Snapshot) (Plan, error) {
	m := p.m
	p.cs.forget(&s)
	m.load(ctx, &s)
	n := len(m.jobs)
	p.cv = resize(p.cv, n)
	p.lo = resize(p.lo, n)
	p.size = resize(p.size, n)
	p.started = resize(p.started, n)
	p.why = resize(p.why, n)
	clear(p.started)
	clear(p.why)
	p.cs.usableHosts(m)
	for k := range m.jobs {
		j := &m.jobs[k]
		c := p.cs.of(m, j)
		p.cv[k] = c
		if p.mode == sizeAtStart && !c.recorded {
			c.recorded = true
			p.hist.add(arrival{at: j.q.Submit.UnixNano(), class: c.class, size: float64(c.opt), run: float64(c.tOpt()) / 1e9})
		}
	}
	if p.mode == sizeAtStart {
		p.hist.update(m.nowNs)
		p.ends.observe(&s)
	}
	p.forgetFixed(&s)
	for k := range m.jobs {
		c := p.cv[k]
		p.lo[k] = c.lo
		if p.mode == sizeAtStart {
			p.lo[k] = min(max(c.lo, p.fixed[m.jobs[k].q.ID]), c.hi())
		}
	}
	p.prioritise()
	switch p.mode {
	case sizeOpt:
		for k := range m.jobs {
			p.size[k] = p.cv[k].opt
			if !p.cv[k].rigid() {
				p.why[k] = fmt.Sprintf("%s: its optimum size (%s does not mold jobs)", p.ofRange(k, p.size[k]), p.name)
			}
		}
	case sizeAtSubmit:
		if err := p.sizeAtSubmission(ctx); err != nil {
			return Plan{}, err
		}
	case sizeAtStart:
		p.sizeAtStart()
	}

	// EASY over the sized queue, in priority order.
	p.queue = p.queue[:0]
	clear(p.whyOf)
	for _, k := range p.order {
		q := *m.jobs[k].q
		q.Min, q.Max = p.size[k], p.size[k]
		q.Estimate = time.Duration(p.cv[k].at(p.size[k]))
		p.queue = append(p.queue, q)
		if p.why[k] != "" {
			p.whyOf[q.ID] = p.why[k]
		}
	}
	plan, err := p.easy.Plan(ctx, Snapshot{Now: s.Now, Hosts: s.Hosts, Running: s.Running, Queue: p.queue})
	if err != nil {
		return Plan{}, err
	}
	plan.Reject = append(slices.Clone(m.rejects), plan.Reject...)
	for _, part := range [][]Placement{plan.StartNow, plan.Later} {
		for i := range part {
			part[i].Why = p.whyOf[part[i].Job]
		}
	}
	return plan, nil
}

// rigid tells a curve of one size.
func (c *curve) rigid() bool { return len(c.t) == 1 }

// forgetFixed drops the fixed sizes of jobs gone from the queue, when
// there are many.
func (p *moldPolicy) forgetFixed(s *Snapshot) {
	if len(p.fixed) <= 2*len(s.Queue)+1024 {
		return
	}
	old := p.fixed
	p.fixed = make(map[string]int, len(s.Queue))
	for i := range s.Queue {
		if v, ok := old[s.Queue[i].ID]; ok {
			p.fixed[s.Queue[i].ID] = v
		}
	}
}

// prioritise orders m.jobs: by group (short and aged, medium, long), then
// submission, then queue position. The groups are the classes, short
// first; an aged medium or long job joins the short jobs (the paper:
// "their priority is increased"; to the top, where the jobs go by arrival,
// so that a short job never waits behind every aged job, nor an aged one
// behind every later short one).
func (p *moldPolicy) prioritise() {
	m := p.m
	p.order = p.order[:0]
	p.group = resize(p.group, len(m.jobs))
	for k := range m.jobs {
		p.order = append(p.order, k)
		c := p.cv[k]
		g := c.class
		waited := m.nowNs - m.jobs[k].q.Submit.UnixNano()
		if float64(waited) > scojoAgeFactor*float64(c.tOpt()) {
			g = classShort
		}
		p.group[k] = g
	}
	slices.SortFunc(p.order, func(a, b int) int {
		if c := cmp.Compare(p.group[a], p.group[b]); c != 0 {
			return c
		}
		if c := m.jobs[a].q.Submit.Compare(m.jobs[b].q.Submit); c != 0 {
			return c
		}
		return cmp.Compare(m.jobs[a].pos, m.jobs[b].pos)
	})
}

// sizeAtStart is SCOJO-P's sizing (§4.2-4.4). In priority order, each job
// that comes up as the head gets its target size (Fig. 1); if that many
// hosts it may use are free, it starts on them; otherwise Fig. 3 decides
// between starting now on the hosts free and waiting for more. A job that
// starts is started on p.m, so that the next head sees it running; the
// first that waits is EASY's head, its size guaranteed as its least from
// now on, and the jobs after it get the backfill sizes of Fig. 4.
func (p *moldPolicy) sizeAtStart() {
	m := p.m
	h := 0
	for ; h < len(p.order); h++ {
		k := p.order[h]
		j := &m.jobs[k]
		c := p.cv[k]
		if c.rigid() {
			p.size[k] = c.lo
			if m.freeFor(j) < c.lo {
				break
			}
			p.startOnScratch(k)
			continue
		}
		target, load := p.target(k)
		size, at, alt, altResp := p.startOrWait(k, target)
		p.size[k] = size
		if at == 0 {
			p.why[k] = p.startWhy(k, size, target, load, alt, altResp)
			p.startOnScratch(k)
			continue
		}
		p.fixed[j.q.ID] = size
		p.why[k] = p.waitWhy(k, size, at, target, load, alt, altResp)
		p.lo[k] = size // its least size from now on: backfillSizes's loads count it so
		break
	}
	if h >= len(p.order) {
		return
	}
	head := p.order[h]
	m.jobs[head].n = p.size[head]
	shadow := m.whenFree(&m.jobs[head])
	p.backfillSizes(p.order[h+1:], shadow, head)
}

// startOnScratch starts job k on p.m at its size, so that later decisions
// of this call see it running.
func (p *moldPolicy) startOnScratch(k int) {
	m := p.m
	j := &m.jobs[k]
	j.n, j.est = p.size[k], max(p.cv[k].at(p.size[k]), 1)
	m.take(j)
	p.started[k] = true
}

// backfillSizes is Fig. 4, adaptive backfilling: the jobs behind the head
// that would fit beside it at N_opt (fewer hosts than are free, shorter
// than the time to the head's start) are the candidates; their work at
// N_opt over the hole's (hosts free × time to the head's start) is one
// size modifier for every job behind the head, and EASY then backfills
// whichever of them its rule lets through. The paper's modifier is work
// over hole, as here: when the candidates' work is small beside the hole,
// jobs shrink (longer and narrower, more of them side by side), and when
// it is large they grow (shorter, so that they end before the head
// starts).
//
// With no candidate the paper's modifier is 0, a size of none (its
// pseudo-code leaves bounds out), which would put every job at its least
// size. A job that can start beside the head then starts on hosts the head
// does not need and runs as long as it runs, so the hole says nothing of
// its size: it gets its own target (Fig. 1), the size it would get at the
// head. At the least size long jobs were stretched by up to 1.625 times
// their run at N_opt whenever nothing short was waiting (bench moldable
// at W1, scojo-p over easy: o2k 1.023 → 0.982, SDSC 0.832 → 0.812;
// docs/moldable.md). A target costs a few load computations over the whole
// queue, so only the first scojoMaxOwnTargets such jobs in priority order
// get one; the rest get their least size.
func (p *moldPolicy) backfillSizes(rest []int, shadow int64, head int) {
	m := p.m
	free := len(m.free)
	hole := float64(free) * float64(shadow)
	work := 0.0
	for _, k := range rest {
		c := p.cv[k]
		if t := c.tOpt(); c.opt < m.freeFor(&m.jobs[k]) && t < shadow {
			work += float64(t) * float64(c.opt)
		}
	}
	sMod, own := 1.0, 0
	if hole > 0 && shadow < never {
		sMod = work / hole
		if work == 0 {
			own = scojoMaxOwnTargets
		}
	}
	for _, k := range rest {
		c := p.cv[k]
		if c.rigid() {
			p.size[k] = c.lo
			continue
		}
		if own > 0 && p.lo[k] <= m.freeFor(&m.jobs[k]) {
			own--
			size, load := p.target(k)
			p.size[k] = size
			p.why[k] = fmt.Sprintf("%s: backfilled beside %s, which starts in %s; no job behind it fits the hole at N_opt, so its size is its own target: predicted load %.2f over its run (%s)",
				p.ofRange(k, size), m.jobs[head].q.ID, approx(shadow), load, p.loadBasis())
			continue
		}
		p.size[k] = sizeFor(c, sMod, p.lo[k])
		if free > 0 && shadow < never {
			p.why[k] = fmt.Sprintf("%s: backfilled beside %s, which starts in %s; the backfill sizes are N_opt × %.2f (the candidates' work over the hole's)",
				p.ofRange(k, p.size[k]), m.jobs[head].q.ID, approx(shadow), sMod)
		}
	}
}

// ofRange is "n of Min–Max hosts" for job k (the job's own range, as
// moldableWhy says it).
func (p *moldPolicy) ofRange(k, n int) string {
	q := p.m.jobs[k].q
	return fmt.Sprintf("%d of %d–%d hosts", n, max(q.Min, 1), max(q.Max, q.Min, 1))
}

func (p *moldPolicy) startWhy(k, size, target int, load float64, alt int, altResp int64) string {
	s := fmt.Sprintf("%s: predicted load %.2f over its run at %d hosts (%s)", p.ofRange(k, size), load, target, p.loadBasis())
	if size == target || alt == 0 {
		return s
	}
	d := altResp - p.cv[k].at(size)
	return fmt.Sprintf("%s; starting now beats waiting for %d (ends %s later)", s, alt, approx(d))
}

func (p *moldPolicy) waitWhy(k, size int, at int64, target int, load float64, alt int, altResp int64) string {
	s := fmt.Sprintf("waits %s for %s: predicted load %.2f over its run at %d hosts (%s)",
		approx(at), p.ofRange(k, size), load, target, p.loadBasis())
	if alt == 0 {
		return fmt.Sprintf("%s; fewer hosts than its least size (%d) are free now", s, p.lo[k])
	}
	d := altResp - sat(at, p.cv[k].at(size))
	return fmt.Sprintf("%s; it ends %s sooner than starting now on %d", s, approx(d), alt)
}

// loadBasis is what a predicted load is measured against, and, when run
// times were scaled, by how much (scojo_overstate.go).
func (p *moldPolicy) loadBasis() string {
	s := fmt.Sprintf("ideal %.1f", scojoIdealLoad)
	if f := p.ends.ratio(); math.Abs(f-1) >= 0.005 {
		s += fmt.Sprintf("; the load takes run times as %.2f of their estimates, as the jobs ended in the last %d days ran", f, scojoWindow/(24*time.Hour))
	}
	return s
}

// approx writes a duration to two significant figures in s, min or h.
func approx(ns int64) string {
	d := time.Duration(ns)
	switch {
	case ns >= never/2:
		return "never"
	case d < time.Minute:
		return fmt.Sprintf("%.2g s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%.2g min", d.Minutes())
	}
	return fmt.Sprintf("%s h", trimFloat(math.Round(d.Hours()*10)/10))
}

func trimFloat(x float64) string { return fmt.Sprintf("%g", x) }
