package policy

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

var _ = register("ga-plan", func(o Options) (Policy, error) { return newPlanGA(o) })

// planGA is the schedule-based GA (after Klusáček and Rudová's
// schedule-based scheduling, with the MS paper's live population in place
// of their tabu search). Every waiting job is planned, not a window:
//
//   - A chromosome is an order of the whole queue and, per job, a host
//     domain (see planClasses: on heterogeneous hosts, the speeds it may
//     run at; "auto" picks the domain where the job is expected to end
//     first). The mutation sets domains only with PlanOptions.DomainGenes;
//     by default every gene stays "auto". The decoder places each job, in chromosome order, at its earliest start
//     in the availability profile (cprofile) left by the running jobs'
//     predicted ends and the jobs placed before it: conservative
//     backfilling is the decoder of the arrival order. A running job past
//     its predicted end holds its hosts until just after now (machine.load).
//   - The objective (PlanOptions.Objective) scores the plan on predicted times:
//     mean wait, mean bounded slowdown, their sum with waits in WaitUnit
//     (the default), or mean response; plus PlanOptions.IdleWeight times the
//     share of hosts left idle over the first IdleHorizon of the plan (an
//     XMS-like term). Ties go to earlier starts.
//   - Each decision seeds the population with the arrival (FCFS), shortest-
//     first and EASY orders and the carried plan's order, and keeps the
//     best (elitism): the plan used is never worse, by the objective, than
//     the best of them. The population carries over between decisions: jobs
//     that started leave every chromosome, new ones are inserted.
//   - Starvation bound: a job that arrives is given a deadline, its start
//     in the carried plan (the schedule in use, in which it is placed at its
//     earliest fit after every job already planned, as conservative
//     backfilling places an arrival) plus PlanOptions.Slack. A plan in which any
//     job starts after its deadline is infeasible. The carried plan holds
//     each reservation on the same hosts of each class and compresses them,
//     as conservative compresses its reservations, so its jobs only move
//     earlier while running jobs end as predicted; it is used when the GA
//     finds nothing feasible that is better. A reservation that no longer
//     fits (a running job overran its predicted end, or is within
//     OverrunMargin of it, or hosts went down) is shifted to its earliest
//     start from there, and its deadline to no earlier than that start. So
//     a job starts by its deadline unless a running job overruns or hosts
//     go down (an on-time end shifts reservations by at most the margin,
//     and the decision at that end compresses them back).
//
// Every job runs on Min hosts (a moldable one too, as the baselines run
// it). In simulation the budget per decision is Options.Generations; live,
// Options.TimeBudget.
type planGA struct {
	o    Options
	m    *machine
	rng  *rand.Rand
	gens atomic.Int64

	cls  planClasses
	base cprofile // running jobs only
	work cprofile // a decode's scratch
	jobs []pjob   // per m.jobs
	nowN int64

	pop  []indiv
	next []indiv
	ids  []string // the job IDs pop's indexes refer to
	pos  map[string]int

	held     map[string]heldResv // the carried plan, by job ID
	deadline map[string]int64    // absolute UnixNano, by job ID
	durs     map[string]durEntry // per-domain run times, by job ID

	dec     decoded          // scratch of one decode
	chosen  planCost         // the cost of the last plan used
	lastEnd time.Time        // when the last evolution ended (live bursts)
	gained  bool             // its generations improved on its seeds
	skipped int              // decisions since, in a burst, that did not evolve
	clock   func() time.Time // the burst rule's time (tests inject one)
	gant    gantt            // names hosts for the later placements
	best    decoded
	gpl     decoded // the carried plan
	tmp     []int32
	// The learnt ratio of actual to predicted run times (learnRatio).
	spans    map[string]runSpan
	live     map[string]bool
	ratioSum float64
	ratioN   int
}

// pjob is a waiting job as the decoder sees it.
type pjob struct {
	n    int32
	doms []jdom // candidate domains, largest (slowest threshold) first
	sub  int64  // now - submit, ns (>= 0)
	dl   int64  // deadline offset from now; never: none
	def  int64  // run time on its first domain (for shortest-first)
}

// jdom is one domain a job may run in and its predicted run time there.
type jdom struct {
	dom int // index in cls.doms
	dur int64
}

type durEntry struct {
	sig  int
	durs []int64 // per domain of cls (0: not allowed)
	n    int
	est  time.Duration
	// The job's constraints (OneCluster may pin it to another cluster).
	arch, cluster string
}

// heldResv is a placement of the carried plan.
type heldResv struct {
	start int64 // UnixNano
	dom   int
	sig   int     // the classes' generation it was made under
	got   []int32 // hosts taken from each class of the domain
}

// indiv is one chromosome: an order of job indexes and a domain gene per
// job index (-1: auto, the domain where the job is expected to end first;
// always -1 unless PlanOptions.DomainGenes).
type indiv struct {
	ord  []int32
	dom  []int16
	cost planCost
}

// planCost orders plans: fewer deadline violations first, then the
// objective, then the sum of starts.
type planCost struct {
	viol, obj, tie float64
}

func (a planCost) less(b planCost) bool {
	if a.viol != b.viol {
		return a.viol < b.viol
	}
	if d := a.obj - b.obj; math.Abs(d) > 1e-9*math.Max(1, math.Abs(b.obj)) {
		return d < 0
	}
	return a.tie < b.tie
}

// decoded is a decoded plan: per job index its start offset, run time,
// domain, and the hosts taken from each class of it.
type decoded struct {
	start []int64
	dur   []int64
	dom   []int
	got   [][]int32
	cost  planCost
}

func (d *decoded) size(n int) {
	d.start = resize(d.start, n)
	d.dur = resize(d.dur, n)
	d.dom = resize(d.dom, n)
	d.got = resize(d.got, n)
}

func (d *decoded) copyFrom(e *decoded) {
	n := len(e.start)
	d.size(n)
	copy(d.start, e.start)
	copy(d.dur, e.dur)
	copy(d.dom, e.dom)
	for k := range n {
		d.got[k] = append(d.got[k][:0], e.got[k]...)
	}
	d.cost = e.cost
}

func newPlanGA(o Options) (*planGA, error) {
	o = o.withDefaults()
	switch o.Plan.Objective {
	case ObjectiveWait, ObjectiveBSLD, ObjectiveMixed, ObjectiveResponse:
	default:
		return nil, fmt.Errorf("policy: ga-plan: unknown objective %q (known: %s)", o.Plan.Objective, strings.Join(Objectives(), ", "))
	}
	return &planGA{o: o, m: newMachine(o), rng: rand.New(rand.NewSource(o.Seed)), clock: time.Now,
		pos: map[string]int{}, held: map[string]heldResv{}, deadline: map[string]int64{}, durs: map[string]durEntry{}}, nil
}

func (p *planGA) Name() string { return "ga-plan" }

// Reads implements Policy: the whole queue.
func (p *planGA) Reads() int { return 0 }

// Generations is the number of generations run so far.
func (p *planGA) Generations() int64 { return p.gens.Load() }

// Deadline is the latest start the policy guarantees job id (see planGA),
// and whether it has given one.
func (p *planGA) Deadline(id string) (time.Time, bool) {
	d, ok := p.deadline[id]
	return time.Unix(0, d), ok
}

// Plan implements Policy.
func (p *planGA) Plan(ctx context.Context, s Snapshot) (Plan, error) {
	m := p.m
	m.load(ctx, &s)
	plan := Plan{Reject: slices.Clone(m.rejects)}
	p.nowN = s.Now.UnixNano()
	p.learnRatio(&s)
	p.cls.build(s.Hosts)
	p.buildBase()
	if err := p.loadJobs(); err != nil {
		return Plan{}, err
	}
	n := len(m.jobs)
	if n == 0 {
		p.pop, p.ids = p.pop[:0], p.ids[:0]
		clear(p.held)
		clear(p.deadline)
		return plan, nil
	}
	p.carried()
	chosen := &p.gpl
	if n > 1 {
		ran, err := p.evolve(ctx)
		if err != nil {
			return Plan{}, err
		}
		if ran {
			if b := &p.pop[0]; b.cost.viol == 0 && b.cost.less(p.gpl.cost) {
				p.decode(b.ord, b.dom, &p.best)
				chosen = &p.best
			}
		}
	}
	p.chosen = chosen.cost
	return p.apply(plan, chosen), nil
}

// loadJobs fills p.jobs for m.jobs: host counts, domains and run times,
// submit offsets and deadlines.
func (p *planGA) loadJobs() error {
	m := p.m
	p.jobs = resize(p.jobs, len(m.jobs))
	clear(p.pos)
	for k := range m.jobs {
		p.pos[m.jobs[k].q.ID] = k
	}
	for k := range m.jobs {
		j := &m.jobs[k]
		pj := &p.jobs[k]
		pj.n = int32(j.n)
		pj.sub = max(p.nowN-j.q.Submit.UnixNano(), 0)
		pj.dl = never
		if d, ok := p.deadline[j.q.ID]; ok {
			pj.dl = max(d-p.nowN, 0)
		}
		pj.doms = pj.doms[:0]
		if len(p.cls.doms) == 1 {
			// One class: the machine's estimate (cached there).
			if p.cls.doms[0].hosts >= j.n {
				pj.doms = append(pj.doms, jdom{dom: 0, dur: m.estimate(j)})
			}
		} else {
			durs := p.domainDurs(j)
			for d, t := range durs {
				if t > 0 {
					pj.doms = append(pj.doms, jdom{dom: d, dur: t})
				}
			}
		}
		if len(pj.doms) == 0 {
			return fmt.Errorf("policy: ga-plan: job %s fits no host domain", j.q.ID)
		}
		pj.def = pj.doms[0].dur
	}
	return nil
}

// domainDurs is j's predicted run time in each domain (0 where it may not
// run: hosts it may not use, or too few), asked of the predictor on j.n
// hosts of the domain, slowest first, and remembered while the classes and
// the job's estimate and constraints stay the same.
func (p *planGA) domainDurs(j *qjob) []int64 {
	m := p.m
	if e, ok := p.durs[j.q.ID]; ok && e.sig == p.cls.gen && e.n == j.n && e.est == j.q.Estimate &&
		e.arch == j.q.Arch && e.cluster == j.q.Cluster {
		return e.durs
	}
	if len(p.durs) > 2*len(m.jobs)+1024 {
		clear(p.durs)
	}
	durs := make([]int64, len(p.cls.doms))
	for d := range p.cls.doms {
		dm := &p.cls.doms[d]
		if j.allow != nil && slices.ContainsFunc(dm.cls, func(c int) bool { return !j.allow.Has(p.cls.hosts[c][0]) }) {
			continue // a class is all allowed to j or not at all
		}
		m.hbuf = m.hbuf[:0]
		slowest := 0.0
		for _, c := range dm.cls {
			for _, h := range p.cls.hosts[c] {
				if len(m.hbuf) == j.n {
					break
				}
				if len(m.hbuf) == 0 {
					slowest = p.cls.speed[c]
				}
				m.hbuf = append(m.hbuf, m.hosts[h])
			}
		}
		if len(m.hbuf) < j.n {
			continue
		}
		durs[d] = m.predictOn(j, m.hbuf, slowest)
	}
	p.durs[j.q.ID] = durEntry{sig: p.cls.gen, durs: durs, n: j.n, est: j.q.Estimate, arch: j.q.Arch, cluster: j.q.Cluster}
	return durs
}

// buildBase makes the profile of the running work: each host free from
// its predicted release on.
func (p *planGA) buildBase() {
	m := p.m
	c := len(p.cls.speed)
	freeNow := make([]int32, c)
	var ev []classEvent
	for h, t := range m.freeAt {
		x := p.cls.of[h]
		if t <= 0 {
			freeNow[x]++
		} else {
			ev = append(ev, classEvent{at: t, class: x})
		}
	}
	slices.SortFunc(ev, func(a, b classEvent) int { return cmp.Compare(a.at, b.at) })
	p.base.build(freeNow, ev)
}

// place puts job k into p.work at its earliest start in domain choice
// (-1: the domain where it is expected to end first: its start plus its
// run time there times the learnt ratio, see expected) no earlier than
// from, and records it in d. Its reservation is its whole predicted run
// time.
func (p *planGA) place(k int, choice int, from int64, d *decoded) {
	j := &p.jobs[k]
	best, bt, bf := -1, never, never
	for x, jd := range j.doms {
		if choice >= 0 && x != choice {
			continue
		}
		t := p.work.earliest(p.cls.doms[jd.dom].cls, j.n, jd.dur, from)
		if t == never {
			continue
		}
		if f := sat(t, p.expected(jd.dur)); f < bf || f == bf && t < bt {
			best, bt, bf = x, t, f
		}
	}
	if best < 0 {
		if choice >= 0 {
			p.place(k, -1, from, d)
			return
		}
		d.start[k], d.dur[k], d.dom[k] = never, 0, -1
		return
	}
	jd := j.doms[best]
	cls := p.cls.doms[jd.dom].cls
	d.got[k] = resize(d.got[k], len(cls))
	p.work.take(cls, j.n, bt, jd.dur, d.got[k])
	d.start[k], d.dur[k], d.dom[k] = bt, jd.dur, best
}

// learnRatio follows the running jobs from one decision to the next: a job
// gone from s.Running ended by now, and min(1, its run so far over its
// predicted run) is one sample of how the predictions compare with the
// actual run times; one back in the queue (its start failed) is none. Under users' requested times jobs end far sooner than
// predicted (on the SDSC sample the mean ratio is about 0.35); under exact
// ones the ratio is 1.
func (p *planGA) learnRatio(s *Snapshot) {
	if p.spans == nil {
		p.spans = map[string]runSpan{}
	}
	if p.live == nil {
		p.live = map[string]bool{}
	}
	clear(p.live)
	for i := range s.Running {
		r := &s.Running[i]
		p.live[r.ID] = true
		if _, ok := p.spans[r.ID]; !ok {
			p.spans[r.ID] = runSpan{start: r.Start.UnixNano(), end: r.End.UnixNano()}
		}
	}
	for i := range s.Queue {
		p.live[s.Queue[i].ID] = false // waiting again: not ended
	}
	for id, sp := range p.spans {
		if running, seen := p.live[id]; running {
			continue
		} else if seen {
			delete(p.spans, id) // back in the queue (its start failed): no sample
			continue
		}
		delete(p.spans, id)
		if pred := sp.end - sp.start; pred > 0 {
			p.ratioSum += math.Min(1, float64(max(p.nowN-sp.start, 0))/float64(pred))
			p.ratioN++
		}
	}
}

// runSpan is a running job's start and predicted end, UnixNano.
type runSpan struct{ start, end int64 }

// ratioSamples is how many ended jobs the learnt ratio needs before it is
// used.
const ratioSamples = 20

// expected is a run time predicted as d, scaled by the mean ratio of
// actual to predicted run times of the jobs seen to end (learnRatio), once
// there are ratioSamples of them: "auto" picks a domain by when the job is
// expected to end, not by its reservation. On three-speed hosts with
// request estimates this made ga-plan's bounded slowdown 5 % lower on the
// SDSC sample and 16 % lower on an o2k workload (docs/ga-plan.md).
func (p *planGA) expected(d int64) int64 {
	if p.ratioN < ratioSamples || d == never {
		return d
	}
	return int64(float64(d) * p.ratioSum / float64(p.ratioN))
}

// unplace gives job k's hosts back to p.work.
func (p *planGA) unplace(k int, d *decoded) {
	if d.start[k] == never {
		return
	}
	cls := p.cls.doms[p.jobs[k].doms[d.dom[k]].dom].cls
	p.work.give(cls, d.got[k], d.start[k], d.dur[k])
}

// decode places the jobs in ord's order with domain genes dom, into d, and
// scores the plan.
func (p *planGA) decode(ord []int32, dom []int16, d *decoded) planCost {
	d.size(len(p.jobs))
	p.work.copyFrom(&p.base)
	for _, k := range ord {
		p.place(int(k), int(dom[k]), 0, d)
	}
	d.cost = p.score(d)
	return d.cost
}

// WaitUnit is the wait that counts as much as one unit of bounded slowdown
// in the mixed objective.
const WaitUnit = time.Hour

// sldBound is the bounded slowdown's threshold (10 s, as in the metrics).
const sldBound = int64(10 * time.Second)

// score is the objective of the decoded plan in d and p.work.
func (p *planGA) score(d *decoded) planCost {
	var c planCost
	for k := range p.jobs {
		j := &p.jobs[k]
		s := d.start[k]
		if s == never {
			c.viol += 1e12
			continue
		}
		if s > j.dl {
			c.viol += float64(s-j.dl) / 1e9
		}
		wait := float64(s + j.sub)
		dur := float64(d.dur[k])
		c.tie += float64(s) / 1e9
		switch p.o.Plan.Objective {
		case ObjectiveBSLD:
			c.obj += math.Max(1, (wait+dur)/math.Max(dur, float64(sldBound)))
		case ObjectiveMixed:
			c.obj += math.Max(1, (wait+dur)/math.Max(dur, float64(sldBound))) + wait/float64(WaitUnit)
		case ObjectiveResponse:
			c.obj += (wait + dur) / float64(WaitUnit)
		default:
			c.obj += wait / float64(WaitUnit)
		}
	}
	c.obj /= float64(len(p.jobs))
	if w := p.idleWeight(); w > 0 {
		c.obj += w * p.idle()
	}
	return c
}

// idle is the share of hosts left idle over the first IdleHorizon of the
// plan in p.work (the XMS paper's idle term, on the profile).
func (p *planGA) idle() float64 {
	w := &p.work
	h := int64(IdleHorizon)
	var area, total float64
	for i := 0; i < len(w.at) && w.at[i] < h; i++ {
		end := h
		if i+1 < len(w.at) {
			end = min(end, w.at[i+1])
		}
		var f int32
		for x := range w.c {
			f += w.free[i*w.c+x]
		}
		area += float64(f) * float64(end-w.at[i])
	}
	total = float64(len(p.m.hosts)) * float64(h)
	return area / total
}

// idleWeight is the weight of the idle term: PlanOptions.IdleWeight, or
// when that is 0, DefaultIdleWeight if every host has one speed and none
// otherwise.
func (p *planGA) idleWeight() float64 {
	if w := p.o.Plan.IdleWeight; w != 0 {
		return w
	}
	if p.cls.oneSpeed {
		return DefaultIdleWeight
	}
	return 0
}

// IdleHorizon is the span of the plan's start over which the idle term
// counts idle hosts.
const IdleHorizon = time.Hour

// carried rebuilds the carried plan p.gpl: the held reservations that still
// fit, compressed (each, in start order, moved to its earliest start with
// the others in place: never later), then the jobs that have none (new, or
// whose reservation no longer fits) at their earliest start after all of
// them, in arrival order. New jobs get their deadline here.
func (p *planGA) carried() {
	m := p.m
	d := &p.gpl
	d.size(len(m.jobs))
	p.work.copyFrom(&p.base)
	p.tmp = p.tmp[:0]
	for k := range m.jobs {
		d.start[k] = never
		h, ok := p.held[m.jobs[k].q.ID]
		if !ok || h.sig != p.cls.gen {
			continue
		}
		x := slices.IndexFunc(p.jobs[k].doms, func(jd jdom) bool { return jd.dom == h.dom })
		if x < 0 {
			continue
		}
		d.start[k], d.dom[k] = max(h.start-p.nowN, 0), x
		p.tmp = append(p.tmp, int32(k))
	}
	slices.SortFunc(p.tmp, func(a, b int32) int { return cmp.Compare(d.start[a], d.start[b]) })
	kept := p.tmp[:0]
	for _, k := range p.tmp {
		j := &p.jobs[k]
		jd := j.doms[d.dom[k]]
		cls := p.cls.doms[jd.dom].cls
		h := p.held[m.jobs[k].q.ID]
		d.got[k] = resize(d.got[k], len(cls))
		d.dur[k] = jd.dur
		if len(h.got) == len(cls) && p.work.fitsCounts(cls, h.got, d.start[k], jd.dur) {
			// The same hosts of each class as before.
			copy(d.got[k], h.got)
			p.work.takeCounts(cls, h.got, d.start[k], jd.dur)
			kept = append(kept, k)
			continue
		}
		// It no longer fits where it was (a running job overran, or is
		// within OverrunMargin of its end, or hosts changed): shifted to
		// its earliest start from there, its deadline no earlier than
		// that.
		t := p.work.earliest(cls, j.n, jd.dur, d.start[k])
		if t == never {
			d.start[k] = never // its domain can no longer hold it: placed again
			continue
		}
		p.work.take(cls, j.n, t, jd.dur, d.got[k])
		d.start[k] = t
		if t > j.dl {
			j.dl = t
			p.deadline[m.jobs[k].q.ID] = p.nowN + t
		}
		kept = append(kept, k)
	}
	// Compression, in start order; a job keeps its domain.
	for _, k := range kept {
		p.unplace(int(k), d)
		p.place(int(k), d.dom[k], 0, d)
	}
	for k := range m.jobs {
		if d.start[k] != never {
			continue
		}
		p.place(k, -1, 0, d)
		id := m.jobs[k].q.ID
		dl := sat(d.start[k], int64(max(p.o.Plan.Slack, 0)))
		if p.o.Plan.Slack < 0 {
			dl = never
		}
		if old, ok := p.deadline[id]; ok {
			dl = max(dl, old-p.nowN) // its domain went: keep the later
		}
		p.jobs[k].dl = dl
		if dl != never {
			p.deadline[id] = p.nowN + dl
		}
	}
	if len(p.deadline) > 2*len(m.jobs)+1024 {
		for id := range p.deadline {
			if _, ok := p.pos[id]; !ok {
				delete(p.deadline, id)
			}
		}
	}
	d.cost = p.score(d)
}

// apply turns the chosen plan into the Plan: the jobs it starts now get
// hosts free now of the classes it took, the others are held for the next
// decision.
func (p *planGA) apply(plan Plan, d *decoded) Plan {
	m := p.m
	clear(p.held)
	starts := make([]int64, len(m.jobs))
	for k := range m.jobs {
		j := &m.jobs[k]
		starts[k] = d.start[k]
		if d.start[k] == never {
			continue
		}
		j.est = d.dur[k]
		if d.start[k] > 0 {
			if len(p.cls.doms) > 1 {
				// The Gantt chart names hosts of the domain planned (the
				// domain holds only hosts the job may use).
				j.allow = p.cls.doms[p.jobs[k].doms[d.dom[k]].dom].set
			}
			p.held[j.q.ID] = heldResv{start: p.nowN + d.start[k], dom: p.jobs[k].doms[d.dom[k]].dom, sig: p.cls.gen,
				got: slices.Clone(d.got[k])}
			continue
		}
		cls := p.cls.doms[p.jobs[k].doms[d.dom[k]].dom].cls
		m.pick = m.pick[:0]
		for x, c := range cls {
			need := d.got[k][x]
			for _, h := range p.cls.hosts[c] {
				if need == 0 {
					break
				}
				if m.freeAt[h] == 0 {
					m.pick = append(m.pick, h)
					need--
				}
			}
		}
		pl := m.startOn(j, m.pick)
		plan.StartNow = append(plan.StartNow, pl)
		starts[k] = unplaced - 1
		delete(p.deadline, j.q.ID)
	}
	plan.Later = p.gant.assign(m, starts)
	return plan
}
