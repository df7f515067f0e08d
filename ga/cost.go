package ga

import (
	"fmt"
	"math"
)

// CostKind selects the cost function an optimiser minimises.
type CostKind int

const (
	// MS is the makespan w alone.
	MS CostKind = iota
	// XMS is Eq. 3 of the MS paper, f_c = w·(1 + Σ_nodes δ[t_j^idle(0)]),
	// with δ read as an indicator: 1 when node j has idle time at the bottom
	// of the schedule, else 0. The paper leaves δ undefined; this is
	// msched's default reading (SEEDS.md §1).
	XMS
	// XMSContinuous reads δ as the idle fraction t_j^idle(0)/w, so that a
	// little idle time costs a little.
	XMSContinuous
)

// String names the cost as the config and command line spell it.
func (k CostKind) String() string {
	switch k {
	case MS:
		return "ms"
	case XMS:
		return "xms"
	case XMSContinuous:
		return "xms-continuous"
	}
	return fmt.Sprintf("CostKind(%d)", int(k))
}

// ParseCost reads a cost name: ms, xms or xms-continuous.
func ParseCost(s string) (CostKind, error) {
	for _, k := range []CostKind{MS, XMS, XMSContinuous} {
		if k.String() == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("ga: unknown cost %q (want ms, xms or xms-continuous)", s)
}

// IdleAtStart returns t_j^idle(0) for host h: the idle time at the bottom of
// the schedule, from the end of the host's running work (its base; 0 when it
// is free now) to the start of its first task, or to the makespan when no
// task uses it.
func (s *Schedule) IdleAtStart(p *Problem, h int) float64 {
	first := s.First[h]
	if math.IsInf(first, 1) {
		first = s.Makespan
	}
	if d := first - p.base(h); d > 0 {
		return d
	}
	return 0
}

// idleEps is the idle time below which a host counts as busy for the
// indicator reading of δ: float sums of equal run times need not match
// exactly.
const idleEps = 1e-9

// Cost evaluates the decoded schedule under cost k.
func (s *Schedule) Cost(p *Problem, k CostKind) float64 {
	w := s.Makespan
	if k == MS || w <= 0 || math.IsInf(w, 1) {
		return w
	}
	sum := 0.0
	for h := 0; h < p.Hosts; h++ {
		idle := s.IdleAtStart(p, h)
		switch k {
		case XMS:
			if idle > idleEps*math.Max(1, w) {
				sum++
			}
		case XMSContinuous:
			sum += idle / w
		}
	}
	return w * (1 + sum)
}

// Evaluate decodes c, led by p.First (see Problem.Lead, which rewrites c),
// and returns its cost; s is scratch space.
func Evaluate(p *Problem, c *Chromosome, k CostKind, s *Schedule) float64 {
	p.Lead(c)
	Decode(p, c, s)
	return s.Cost(p, k)
}
