package models

import "math"

// Efficiency is SCOJO-P's speedup model of a moldable job (Barsanti and
// Sodan, "Adaptive Job Scheduling via Predictive Job Resource Allocation",
// §4.6 and Table 1; SEEDS.md §3), the model the paper's headline figures
// use. A job's requested size is its optimum N_opt, and its run time there,
// T_opt, is the one the workload gives. Relative to N_opt:
//
//	N_min = max(N_opt/2, 1)  (rounded up: see Min)
//	N_max = min(2·N_opt, machine)
//	E(N_min) = 0.8, E(N_opt) = 0.65, E(N_max) = 0.4
//
// with the speedup S(N) = N·E(N) interpolated linearly between those three
// points, as the paper says ("interpolate the speedup curve between these
// points linearly"). Run times follow from T(N) = T_opt·S(N_opt)/S(N):
//
//	T(N_min) = T_opt·0.65·N_opt / (0.8·N_opt/2) = 1.625·T_opt
//	T(N_max) = T_opt·0.65·N_opt / (0.4·2·N_opt) = 0.8125·T_opt
//
// The paper's Table 1 prints these two factors inverted (runtime(N_min) =
// runtime(N_opt)·E(N_opt)·½/E(N_min), which would make the smallest size the
// fastest); the efficiencies it gives, and its statement that fewer
// processors run longer, fix them as above.
//
// Linear speedup, rather than linear efficiency, is also what makes N_opt
// the processor working set the paper says it is (the N minimising
// T_N/E_N, that is N·T_N²): with the speedup linear, N·T(N)² falls up to
// N_opt and rises after it; with the efficiency linear the minimum would be
// at 1.2·N_opt, and the speedup would fall again after 1.8·N_opt, before
// N_max, which the paper defines as where the speedup starts to decline.
//
// The points are anchored at the real ratios ½, 1 and 2 of N_opt, so the
// curve is the same whatever rounding gives N_min and whatever the machine
// does to N_max: for an odd N_opt, N_min = (N_opt+1)/2 lies a little above
// the ½ point (E slightly below 0.8); a machine smaller than 2·N_opt cuts
// N_max before the 2 point. Outside [N_min, N_max], where no size is ever
// chosen, the efficiency stays 0.8 below ½ and the speedup stays flat beyond
// 2.
type Efficiency struct {
	// Opt is the job's requested size, N_opt (at least 1).
	Opt int
	// Machine is the number of hosts the job may use, the bound on N_max.
	Machine int
}

// The paper's efficiencies at N_min, N_opt and N_max (Table 1).
const (
	EffAtMin = 0.8
	EffAtOpt = 0.65
	EffAtMax = 0.4
)

// Min is N_min: half of N_opt, rounded up, at least 1. Rounding up keeps
// N_min/N_opt ≥ ½, inside the interpolated curve; for an even N_opt it is
// N_opt/2 exactly.
func (e Efficiency) Min() int { return max((e.opt()+1)/2, 1) }

// Max is N_max: twice N_opt, at most the machine, at least N_opt.
func (e Efficiency) Max() int {
	n := 2 * e.opt()
	if e.Machine > 0 {
		n = min(n, e.Machine)
	}
	return max(n, e.opt())
}

func (e Efficiency) opt() int { return max(e.Opt, 1) }

// Speedup is S(n) = n·E(n) for n hosts.
func (e Efficiency) Speedup(n float64) float64 {
	return float64(e.opt()) * RelativeSpeedup(n/float64(e.opt()))
}

// Efficiency is E(n) = S(n)/n.
func (e Efficiency) Efficiency(n float64) float64 {
	if n <= 0 {
		return 0
	}
	return e.Speedup(n) / n
}

// Factor is T(n)/T(N_opt): the job's run time on n hosts is its run time on
// N_opt hosts times this.
func (e Efficiency) Factor(n int) float64 { return RelativeTime(float64(n) / float64(e.opt())) }

// RelativeSpeedup is S(r·N_opt)/N_opt for a size r times N_opt: 0.4 at
// r = ½, 0.65 at 1, 0.8 at 2, linear in between; 0.8·r below ½ and flat
// beyond 2.
func RelativeSpeedup(r float64) float64 {
	const (
		sMin = EffAtMin * 0.5 // S(N_min)/N_opt
		sOpt = EffAtOpt       // S(N_opt)/N_opt
		sMax = EffAtMax * 2   // S(N_max)/N_opt
	)
	switch {
	case r >= 2:
		return sMax
	case r >= 1:
		return sOpt + (sMax-sOpt)*(r-1)
	case r >= 0.5:
		return sMin + (sOpt-sMin)*(r-0.5)/0.5
	default:
		return math.Max(EffAtMin*r, 0)
	}
}

// RelativeTime is T(r·N_opt)/T(N_opt): 1.625 at r = ½, 1 at 1, 0.8125 at 2;
// +Inf at r ≤ 0.
func RelativeTime(r float64) float64 {
	s := RelativeSpeedup(r)
	if s <= 0 {
		return math.Inf(1)
	}
	return EffAtOpt / s
}
