package ga

import (
	"math"
	"slices"
)

// LowerBound returns a lower bound on the makespan of any schedule of p,
// for judging how far a heuristic or optimiser is from optimal. It is the
// larger of two classical bounds, extended by the hosts' base (the end of
// their running work), which no task can use:
//
//   - span: the makespan is at least every host's base and, for every task,
//     its earliest possible end: over the counts k in [Min, MaxHosts], the
//     k-th smallest base among its allowed hosts (it cannot start before k of
//     them are free) plus its run time on k hosts. Without base this is
//     max_j min_k t_j(k).
//   - work: the m hosts together must supply, before the makespan, their base
//     plus every task's least work min_k k·t_j(k), so the makespan is at
//     least (Σ_h base_h + Σ_j min_k k·t_j(k)) / m. Without base this is
//     Σ_j min_k k·t_j(k) / m.
//
// For a one-host task (MaxHosts = 1) the minima are taken over its allowed
// hosts, t_jh being its time on host h alone, so on heterogeneous machines
// the bound is max(max_j min_h (base_h + t_jh), (Σ base + Σ_j min_h t_jh)/m)
// and exact in the sense of a true lower bound. For a task that can use more
// hosts, t_j(k) is measured on its k fastest hosts (see speedOrder): that is
// a true bound when the run time depends only on the count (homogeneous
// hosts, as in the paper's test model), but on heterogeneous hosts a
// different k-subset might be faster, and the bound is then an estimate.
// Trying every subset would be exponential.
func LowerBound(p *Problem) float64 {
	m := p.Hosts
	span, work := 0.0, 0.0
	for h := 0; h < m; h++ {
		span = math.Max(span, p.base(h))
		work += p.base(h)
	}
	for _, t := range p.Tasks {
		hosts := allowedHosts(p, t)
		hi := p.MaxHosts(t)
		end, area := math.Inf(1), math.Inf(1)
		if hi == 1 {
			for _, h := range hosts {
				d := t.Time(singleHost(m, h))
				end = math.Min(end, p.base(h)+d)
				area = math.Min(area, d)
			}
		} else {
			bases := make([]float64, len(hosts))
			for i, h := range hosts {
				bases[i] = p.base(h)
			}
			slices.Sort(bases)
			b := NewBits(m)
			for k, h := range speedOrder(p, t)[:hi] {
				b.Set(h)
				if k+1 < t.Min {
					continue
				}
				d := t.Time(b)
				end = math.Min(end, bases[k]+d)
				area = math.Min(area, float64(k+1)*d)
			}
		}
		span = math.Max(span, end)
		work += area
	}
	if m == 0 {
		return span
	}
	return math.Max(span, work/float64(m))
}
