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
	// with δ read as an indicator: 1 when node j idles from now (it is free
	// now and no task starts on it now; see IdleAtStart), else 0. The paper
	// leaves δ undefined; this is msched's default reading (SEEDS.md §1).
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

// IdleAtStart returns t_j^idle(0) for host h: "the amount of idle time on
// node j starting at time 0" (Eq. 3), read literally. A host free now (base
// 0) idles from now to the start of its first task, or to the makespan when
// no task uses it. A host busy now has no idle time starting at 0: the gap
// after its running work is not at the bottom of the schedule, and the
// decision taken when that work ends can still fill it, whereas a host left
// idle now stays idle at least until the next decision. (msched's first
// reading also counted that gap; it made the GA widen tasks to line them up
// with the running work, and lost to plain makespan in bench table1.)
func (s *Schedule) IdleAtStart(p *Problem, h int) float64 {
	if p.base(h) > 0 {
		return 0
	}
	if first := s.First[h]; !math.IsInf(first, 1) {
		return first // ≥ 0: a free host's work starts at 0 or later
	}
	return s.Makespan
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
