package profiler

import "math"

// Estimate is the profiler's answer for one job: the mean run time and the
// half-width of its confidence interval at Level, and where it came from.
// Schedulers use Upper(), the top of the interval, as the job's length
// (thesis §5.3: "the sum of the estimate and half the 95 % confidence
// interval").
type Estimate struct {
	Mean      float64 `json:"mean_s"`
	HalfWidth float64 `json:"half_width_s"`
	Level     float64 `json:"level"`
	// Source is "<level>:<method>": level user, executable or system;
	// method fit (T(p) = a/p + b + c·p), mean (the processor bin's mean)
	// or all (every run of the system, any processor count: the last
	// resort). A suffix "+attained" marks an estimate raised past the
	// attained run time (see Profiler.Estimate).
	Source string `json:"source"`
	// N is the number of runs behind the estimate.
	N int `json:"n"`
}

// Upper is the top of the interval, Mean + HalfWidth.
func (e Estimate) Upper() float64 { return e.Mean + e.HalfWidth }

// Estimate predicts the run time of exe by user on procs processors, given
// that the job has already run attained seconds (0 for a job not started).
//
// Levels are tried in order: (exe, user), exe, system; within a level, the
// fit T(p) when at least three processor bins have data and it predicts a
// positive time at procs, else the mean of procs's bin when it holds at
// least two runs (a single run gives no interval), else the next level.
// The last resort is the mean of every run in the system. Only runs of at
// least attained seconds count (to within the run-time bins: see the
// package comment). When no run that long was ever seen, the estimate is
// made from all runs and, as in the thesis (§4.3.3), raised when the
// attained time exceeds E + 3·half-width: to the next multiple of E above
// the attained time. (The thesis writes ⌈R/E − 0.5⌉·E, which can fall
// short of R; msched takes ⌊R/E⌋+1 multiples so the estimate never ends
// before the job has.) An empty exe is unknown and is estimated from the
// system. ok is false only when the profiler has seen no run.
func (p *Profiler) Estimate(exe, user string, procs int, attained float64) (Estimate, bool) {
	return p.EstimateUpTo(exe, user, procs, attained, LevelSystem)
}

// EstimateUpTo is Estimate with the levels tried stopping at coarsest:
// LevelUser asks for the history of this executable (category) by this
// user only, LevelExecutable also by every user; ok is false when those
// levels hold too few runs for an estimate.
func (p *Profiler) EstimateUpTo(exe, user string, procs int, attained float64, coarsest Level) (Estimate, bool) {
	procs = max(procs, 1)
	p.mu.RLock()
	defer p.mu.RUnlock()
	if attained > 0 {
		if e, ok := p.estimateLocked(exe, user, procs, attained, coarsest); ok {
			return e, true
		}
	}
	e, ok := p.estimateLocked(exe, user, procs, 0, coarsest)
	if !ok {
		return e, false
	}
	if attained > 0 && e.Mean+3*e.HalfWidth < attained && e.Mean > 0 {
		e.Mean *= math.Floor(attained/e.Mean) + 1
		e.Source += "+attained"
	}
	return e, true
}

func (p *Profiler) estimateLocked(exe, user string, procs int, attained float64, coarsest Level) (Estimate, bool) {
	pb := ProcBin(procs)
	for _, lv := range []Level{LevelUser, LevelExecutable, LevelSystem} {
		if lv > coarsest {
			break
		}
		if exe == "" && lv != LevelSystem {
			continue // an unknown executable is no category of its own
		}
		bins := p.binsLocked(lv, exe, user, attained)
		if f, ok := FitBins(bins); ok {
			if y := f.At(float64(procs)); y > 0 {
				return Estimate{Mean: y, HalfWidth: tQuantile(f.DF(), p.level) * f.SE(float64(procs)),
					Level: p.level, Source: lv.String() + ":fit", N: int(f.N)}, true
			}
		}
		if pb < len(bins) {
			if m, hw, ok := bins[pb].Interval(p.level); ok {
				return Estimate{Mean: m, HalfWidth: hw, Level: p.level, Source: lv.String() + ":mean", N: int(bins[pb].N)}, true
			}
		}
		if lv == LevelSystem {
			var all Stats
			for _, b := range bins {
				all.Merge(b)
			}
			if all.N == 0 {
				return Estimate{}, false
			}
			m, hw, ok := all.Interval(p.level)
			if !ok {
				hw = m // one run: no spread measured; as wide as the run itself
			}
			return Estimate{Mean: m, HalfWidth: hw, Level: p.level, Source: "system:all", N: int(all.N)}, true
		}
	}
	return Estimate{}, false
}
