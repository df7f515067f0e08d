package policy

import "fmt"

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
// The simulation is conservative backfilling in an availability profile
// (the original scheduler's, and what conservative.go does): hosts free
// now and the running jobs' predicted ends, then each waiting job ahead of
// the new one in priority order (short and aged, medium, long; each already
// sized), at the earliest time it fits; the new job's candidate sizes are
// tried in what remains. Jobs behind it in priority order cannot delay it
// and are left out. The profile counts hosts, not which ones (exact when
// jobs may use any host; an approximation under Arch or Cluster
// constraints, which choose a size only).

// sizeAtSubmission gives each job without a size one, and every job its
// size: one pass in priority order over a profile of the running jobs,
// placing each job at its size after the new ones are sized.
func (p *moldPolicy) sizeAtSubmission() {
	m := p.m
	built := false
	for _, k := range p.order {
		j := &m.jobs[k]
		c := p.cv[k]
		size, ok := p.fixed[j.q.ID]
		if !ok || size < c.lo || size > c.hi() {
			if c.rigid() {
				size = c.lo
			} else {
				if !built {
					p.buildProfile()
					built = true
				}
				var end int64
				size, end = p.soonest(c)
				p.why[k] = fmt.Sprintf("%s: chosen when submitted, the size the simulated schedule then finished soonest (in %s)",
					p.ofRange(k, size), approx(end))
			}
			p.fixed[j.q.ID] = size
		} else if !c.rigid() {
			p.why[k] = fmt.Sprintf("%s: chosen when submitted, the size the simulated schedule then finished soonest", p.ofRange(k, size))
		}
		p.size[k] = size
		if built {
			p.placeEarliest(c, size)
		}
	}
}

// buildProfile is the profile of the hosts free now and the running jobs'
// predicted releases, with the jobs already placed this call (those ahead
// of the first new one) placed again in it: the pass places jobs only
// after the profile is built.
func (p *moldPolicy) buildProfile() {
	m := p.m
	p.prof.build1(len(m.free), m.releases())
	for _, k := range p.order {
		id := m.jobs[k].q.ID
		size, ok := p.fixed[id]
		c := p.cv[k]
		if !ok || size < c.lo || size > c.hi() {
			return // the first job to size: the ones before it are in
		}
		p.placeEarliest(c, size)
	}
}

// placeEarliest places c's job on size hosts in the profile at the earliest
// time it fits there (nowhere if it never does).
func (p *moldPolicy) placeEarliest(c *curve, size int) {
	d := max(c.at(size), overrunEnd)
	if at := p.prof.earliest(class0, int32(size), d, 0); at != never {
		p.prof.add1(-size, at, d)
	}
}

// soonest is the size of c whose earliest fit in the profile ends first,
// and that end (offset).
func (p *moldPolicy) soonest(c *curve) (int, int64) {
	best, end := c.lo, never
	for n := c.lo; n <= c.hi(); n++ {
		d := max(c.at(n), overrunEnd)
		at := p.prof.earliest(class0, int32(n), d, 0)
		if e := sat(at, d); at != never && e < end {
			best, end = n, e
		}
	}
	return best, end
}
