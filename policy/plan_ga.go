package policy

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"msched/ga"
)

// planClasses groups the hosts into classes of interchangeable hosts (one
// cluster, one architecture, one speed to 1 %) and lists the domains a job
// may run in: in each cluster, for all architectures and for each one, the
// classes at least as fast as each speed there. A job runs inside one
// domain, at the speed of its slowest class (the run time the predictor
// gives on hosts of the domain, slowest first); the smallest domains hold
// only the fastest hosts.
type planClasses struct {
	gen   int // bumped when the classes change
	kept  []Host
	of    []int   // host → class
	hosts [][]int // class → host indexes, ascending
	speed []float64
	doms  []pdom
	// oneSpeed: every host has the same speed.
	oneSpeed bool
}

// pdom is a domain: its classes, slowest first, and their host count.
type pdom struct {
	cls   []int
	hosts int
	set   ga.Bits // its hosts
}

type classKey struct {
	cluster, arch string
	speed         int64
}

// keyOf is h's class: cluster, architecture and speed to 1 %.
func keyOf(h *Host) classKey {
	return classKey{h.Cluster, h.Arch, int64(math.Round(math.Log(speedOf(h)) * 100))}
}

func speedOf(h *Host) float64 {
	if h.Speed > 0 {
		return h.Speed
	}
	return 1
}

func (pc *planClasses) same(hs []Host) bool {
	if len(hs) != len(pc.kept) {
		return false
	}
	for i := range hs {
		a, b := &hs[i], &pc.kept[i]
		// Load too: the predictor's run times depend on it (domainDurs
		// keeps them while the classes' generation stands).
		if a.Name != b.Name || a.Cluster != b.Cluster || a.Arch != b.Arch || a.Speed != b.Speed || a.Load != b.Load {
			return false
		}
	}
	return true
}

// build groups hs, unless they are the hosts of the last call.
func (pc *planClasses) build(hs []Host) {
	if pc.gen > 0 && pc.same(hs) {
		return
	}
	pc.gen++
	pc.kept = append(pc.kept[:0], hs...)
	keys := map[classKey]int{}
	var list []classKey
	pc.of = resize(pc.of, len(hs))
	for i := range hs {
		k := keyOf(&hs[i])
		if _, ok := keys[k]; !ok {
			keys[k] = len(list)
			list = append(list, k)
		}
	}
	// Classes by cluster, then speed, then architecture.
	order := make([]int, len(list))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		x, y := list[a], list[b]
		if c := cmp.Compare(x.cluster, y.cluster); c != 0 {
			return c
		}
		if c := cmp.Compare(x.speed, y.speed); c != 0 {
			return c
		}
		return cmp.Compare(x.arch, y.arch)
	})
	rank := make([]int, len(list))
	for r, i := range order {
		rank[i] = r
	}
	pc.hosts = make([][]int, len(list))
	pc.speed = make([]float64, len(list))
	for i := range hs {
		c := rank[keys[keyOf(&hs[i])]]
		pc.of[i] = c
		if len(pc.hosts[c]) == 0 || speedOf(&hs[i]) < pc.speed[c] {
			pc.speed[c] = speedOf(&hs[i])
		}
		pc.hosts[c] = append(pc.hosts[c], i)
	}
	pc.oneSpeed = !slices.ContainsFunc(pc.speed, func(v float64) bool { return v != pc.speed[0] })
	sorted := make([]classKey, len(list))
	for i, k := range list {
		sorted[rank[i]] = k
	}
	// Domains.
	pc.doms = pc.doms[:0]
	seen := map[string]bool{}
	add := func(cls []int) {
		if len(cls) == 0 {
			return
		}
		key := fmtInts(cls)
		if seen[key] {
			return
		}
		seen[key] = true
		n := 0
		for _, c := range cls {
			n += len(pc.hosts[c])
		}
		set := ga.NewBits(len(hs))
		for _, c := range cls {
			for _, h := range pc.hosts[c] {
				set.Set(h)
			}
		}
		pc.doms = append(pc.doms, pdom{cls: slices.Clone(cls), hosts: n, set: set})
	}
	for lo := 0; lo < len(sorted); {
		hi := lo
		for hi < len(sorted) && sorted[hi].cluster == sorted[lo].cluster {
			hi++
		}
		archs := []string{""}
		for c := lo; c < hi; c++ {
			if !slices.Contains(archs, sorted[c].arch) {
				archs = append(archs, sorted[c].arch)
			}
		}
		for _, arch := range archs {
			for t := lo; t < hi; t++ {
				if arch != "" && sorted[t].arch != arch {
					continue
				}
				var cls []int
				for c := t; c < hi; c++ {
					if arch == "" || sorted[c].arch == arch {
						cls = append(cls, c)
					}
				}
				add(cls)
			}
		}
		lo = hi
	}
}

func fmtInts(v []int) string {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = append(b, byte(x), byte(x>>8), byte(x>>16), ',')
	}
	return string(b)
}

// evolve brings the population to this decision's jobs, seeds it and runs
// the budget; p.pop[0] is then the best. It reports false, having done
// nothing, when the carried plan starts every job now.
func (p *planGA) evolve(ctx context.Context) (bool, error) {
	n := len(p.jobs)
	// All jobs start now in the carried plan: nothing to improve.
	if !slices.ContainsFunc(p.gpl.start[:n], func(s int64) bool { return s != 0 }) {
		return false, nil
	}
	// Live, in a burst (this decision within stallWithin of the last),
	// after an evolution whose generations gained nothing over its seeds,
	// decisions use the carried plan and evolve nothing, but for every
	// burstEvolveEvery-th: in a burst of jobs that no order improves, they
	// keep their time for the daemons. (The population is brought to the
	// jobs at the next evolution: remap maps from the jobs it last saw.)
	// Simulation (no time budget) always evolves.
	now := p.clock()
	defer func() { p.lastEnd = p.clock() }()
	if p.o.TimeBudget > 0 && now.Sub(p.lastEnd) < stallWithin && !p.gained {
		if p.skipped++; p.skipped < burstEvolveEvery {
			return false, nil
		}
	}
	p.skipped = 0
	p.remap()
	size := max(p.o.Plan.Population, 8)
	for len(p.pop) < size {
		p.pop = append(p.pop, indiv{})
	}
	p.pop = p.pop[:size]
	seeds := p.seeds()
	// Individuals that have no order yet (a new population) start as
	// mutations of the seeds.
	for i := range p.pop {
		in := &p.pop[i]
		if len(in.ord) == n {
			continue
		}
		src := seeds[i%len(seeds)]
		in.ord = append(in.ord[:0], src...)
		in.dom = resize(in.dom, n)
		for k := range in.dom {
			in.dom[k] = -1
		}
		if i >= len(seeds) {
			p.mutate(in)
		}
	}
	// Live, the time budget bounds the evolution (loading the jobs and the
	// carried plan came before): with a long queue a decode takes long,
	// and the carried plan is there if nothing else gets evaluated in
	// time.
	start := time.Now()
	var stop time.Time
	if p.o.TimeBudget > 0 {
		stop = start.Add(p.o.TimeBudget)
	}
	spent := func() bool { return !stop.IsZero() && !time.Now().Before(stop) }
	if stop.IsZero() {
		for i := range p.pop {
			p.pop[i].cost = p.decode(p.pop[i].ord, p.pop[i].dom, &p.dec)
		}
		p.sortPop()
		// The seeds replace the worst individuals.
		for x, s := range seeds {
			p.reseed(&p.pop[len(p.pop)-1-x], s)
		}
	} else {
		// The seeds replace the last decision's worst, and are evaluated
		// first; then the others while the budget lasts.
		for x, s := range seeds {
			p.reseed(&p.pop[len(p.pop)-1-x], s)
		}
		for i := range p.pop[:len(p.pop)-len(seeds)] {
			if spent() {
				p.pop[i].cost = planCost{viol: math.Inf(1)}
				continue
			}
			p.pop[i].cost = p.decode(p.pop[i].ord, p.pop[i].dom, &p.dec)
		}
	}
	p.sortPop()

	seeded := p.pop[0].cost
	gens, stall := 0, 0
	for !spent() {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		before := p.pop[0].cost
		p.step(stop)
		gens++
		if p.pop[0].cost.less(before) {
			stall = 0
		} else {
			stall++
		}
		if stop.IsZero() && gens >= p.o.Generations {
			break
		}
		if p.o.Plan.Stall > 0 && stall >= p.o.Plan.Stall {
			break
		}
	}
	p.gens.Add(int64(gens))
	p.gained = p.pop[0].cost.less(seeded)
	return true, nil
}

// burstEvolveEvery is how often a decision evolves in a burst that gains
// nothing (see evolve).
const burstEvolveEvery = 4

// reseed makes in the seed order ord, every domain gene auto, and scores
// it.
func (p *planGA) reseed(in *indiv, ord []int32) {
	in.ord = append(in.ord[:0], ord...)
	for k := range in.dom {
		in.dom[k] = -1
	}
	in.cost = p.decode(in.ord, in.dom, &p.dec)
}

// remap carries the population over to this decision's jobs: jobs gone
// leave every chromosome, new ones are inserted (at the end in half of the
// population, at a random place in the other half).
func (p *planGA) remap() {
	m := p.m
	n := len(m.jobs)
	old := make([]int32, len(p.ids)) // old index → new, or -1
	seen := make([]bool, n)
	for i, id := range p.ids {
		old[i] = -1
		if k, ok := p.pos[id]; ok {
			old[i] = int32(k)
			seen[k] = true
		}
	}
	var fresh []int32
	for k := range n {
		if !seen[k] {
			fresh = append(fresh, int32(k))
		}
	}
	for i := range p.pop {
		in := &p.pop[i]
		if len(in.ord) != len(p.ids) {
			in.ord = in.ord[:0]
			continue
		}
		dom := make([]int16, n)
		for k := range dom {
			dom[k] = -1
		}
		w := 0
		for _, o := range in.ord {
			if k := old[o]; k >= 0 {
				in.ord[w] = k
				if g := in.dom[o]; int(g) < len(p.jobs[k].doms) {
					dom[k] = g
				}
				w++
			}
		}
		in.ord = in.ord[:w]
		for _, k := range fresh {
			if i%2 == 0 || len(in.ord) == 0 {
				in.ord = append(in.ord, k)
			} else {
				in.ord = slices.Insert(in.ord, p.rng.Intn(len(in.ord)+1), k)
			}
		}
		in.dom = dom
	}
	p.ids = p.ids[:0]
	for k := range m.jobs {
		p.ids = append(p.ids, m.jobs[k].q.ID)
	}
}

// seeds are the arrival (FCFS) order, the carried plan's start order,
// shortest first and EASY's order.
func (p *planGA) seeds() [][]int32 {
	n := len(p.jobs)
	fcfs := make([]int32, n)
	for k := range fcfs {
		fcfs[k] = int32(k)
	}
	held := slices.Clone(fcfs)
	slices.SortStableFunc(held, func(a, b int32) int { return cmp.Compare(p.gpl.start[a], p.gpl.start[b]) })
	sjf := slices.Clone(fcfs)
	slices.SortStableFunc(sjf, func(a, b int32) int { return cmp.Compare(p.jobs[a].def, p.jobs[b].def) })
	return [][]int32{fcfs, held, sjf, p.easyOrder()}
}

// easyOrder is the order whose decoding starts now what EASY backfilling
// would: the jobs at the head that fit now, then those that fit now
// without delaying the first that does not (its reservation), then that
// job and the rest in arrival order.
func (p *planGA) easyOrder() []int32 {
	n := len(p.jobs)
	d := &p.dec
	d.size(n)
	p.work.copyFrom(&p.base)
	var first, rest []int32
	head := -1
	for k := range n {
		if head < 0 {
			p.place(k, -1, 0, d)
			if d.start[k] == 0 {
				first = append(first, int32(k))
				continue
			}
			head = k // keeps its reservation
			continue
		}
		j := &p.jobs[k]
		fits := false
		for x, jd := range j.doms {
			if p.work.earliest(p.cls.doms[jd.dom].cls, j.n, jd.dur, 0) == 0 {
				p.place(k, x, 0, d)
				fits = true
				break
			}
		}
		if fits {
			first = append(first, int32(k))
		} else {
			rest = append(rest, int32(k))
		}
	}
	if head >= 0 {
		first = append(first, int32(head))
	}
	return append(first, rest...)
}

func (p *planGA) sortPop() {
	slices.SortStableFunc(p.pop, func(a, b indiv) int {
		if a.cost.less(b.cost) {
			return -1
		}
		if b.cost.less(a.cost) {
			return 1
		}
		return 0
	})
}

// step is one generation: the two best carry over; the others are
// children of parents chosen by binary tournament, by order crossover
// (OX) or a copy, then mutated.
//
// With a non-zero stop, children made after it are copies of the current
// population's individuals (no decode), so that a generation on a long
// queue does not run far past the time budget.
func (p *planGA) step(stop time.Time) {
	size := len(p.pop)
	for len(p.next) < size {
		p.next = append(p.next, indiv{})
	}
	p.next = p.next[:size]
	elite := min(2, size)
	for i := range elite {
		copyIndiv(&p.next[i], &p.pop[i])
	}
	for i := elite; i < size; i++ {
		if !stop.IsZero() && !time.Now().Before(stop) {
			copyIndiv(&p.next[i], &p.pop[i])
			continue
		}
		a, b := p.tournament(), p.tournament()
		c := &p.next[i]
		if p.rng.Float64() < crossoverRate {
			p.crossover(a, b, c)
		} else {
			copyIndiv(c, a)
		}
		p.mutate(c)
		c.cost = p.decode(c.ord, c.dom, &p.dec)
	}
	p.pop, p.next = p.next, p.pop
	p.sortPop()
}

const crossoverRate = 0.7

func copyIndiv(dst, src *indiv) {
	dst.ord = append(dst.ord[:0], src.ord...)
	dst.dom = append(dst.dom[:0], src.dom...)
	dst.cost = src.cost
}

func (p *planGA) tournament() *indiv {
	a, b := p.rng.Intn(len(p.pop)), p.rng.Intn(len(p.pop))
	return &p.pop[min(a, b)] // sorted: the lower index is the fitter
}

// crossover writes into c the order crossover of a and b: a slice of a's
// order in place, the other jobs in b's order; domain genes from either
// parent.
func (p *planGA) crossover(a, b, c *indiv) {
	n := len(a.ord)
	lo := p.rng.Intn(n)
	hi := lo + 1 + p.rng.Intn(n-lo)
	in := resize(p.tmp[:0], n)
	for k := range in {
		in[k] = 0
	}
	for _, k := range a.ord[lo:hi] {
		in[k] = 1
	}
	c.ord = resize(c.ord, n)
	c.dom = resize(c.dom, n)
	w := 0
	for _, k := range b.ord {
		if w == lo {
			w = hi
		}
		if in[k] == 0 {
			c.ord[w] = k
			w++
		}
	}
	copy(c.ord[lo:hi], a.ord[lo:hi])
	for k := range c.dom {
		if p.rng.Intn(2) == 0 {
			c.dom[k] = a.dom[k]
		} else {
			c.dom[k] = b.dom[k]
		}
	}
	p.tmp = in[:0]
}

// mutate applies one of: move a job earlier in the order, move one
// anywhere, swap two, or (with PlanOptions.DomainGenes) change a job's
// domain gene.
func (p *planGA) mutate(c *indiv) {
	n := len(c.ord)
	if n < 2 {
		return
	}
	i, j := p.rng.Intn(n), p.rng.Intn(n)
	switch r := p.rng.Intn(8); {
	case r < 3 && i > 0: // earlier
		j = p.rng.Intn(i)
		k := c.ord[i]
		copy(c.ord[j+1:i+1], c.ord[j:i])
		c.ord[j] = k
	case r < 5:
		k := c.ord[i]
		c.ord = slices.Delete(c.ord, i, i+1)
		c.ord = slices.Insert(c.ord, min(j, len(c.ord)), k)
	case r < 7:
		c.ord[i], c.ord[j] = c.ord[j], c.ord[i]
	default:
		k := c.ord[i]
		if nd := len(p.jobs[k].doms); nd > 1 && p.o.Plan.DomainGenes {
			c.dom[k] = int16(p.rng.Intn(nd+1) - 1)
		} else {
			c.ord[i], c.ord[j] = c.ord[j], c.ord[i]
		}
	}
}
