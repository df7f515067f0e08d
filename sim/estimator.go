package sim

import (
	"log/slog"
	"strconv"

	"msched/profiler"
)

// Estimator supplies run-time estimates that depend on what the simulation
// has seen so far, as a live profiler's do: Estimate is asked once per
// job, at its submission, and its answer (seconds; ≤ 0 for unknown,
// when the policy falls back) becomes the job's Estimate; Observe is told
// each job's run time (seconds of wall time on its hosts) when it ends.
// Jobs whose times are a function (Job.Time set) keep their exact times
// and are only observed; a moldable trace job (Job.Mold) is estimated on
// its N_opt hosts, and the estimate scaled to each size.
type Estimator interface {
	Estimate(j *Job) float64
	Observe(j *Job, hosts int, run float64)
}

// ProfilerEstimator estimates each job as the historical profiler's upper
// confidence limit, Mean + HalfWidth, for its executable and user (the SWF
// numbers; -1, unknown, is estimated from the whole system) on its Min
// hosts (a moldable trace job's N_opt), and feeds the profiler each job as it ends. Give it a fresh
// memory-only profiler (profiler.New) so that a run learns from its own
// trace only.
func ProfilerEstimator(p *profiler.Profiler) Estimator { return profEst{p} }

type profEst struct{ p *profiler.Profiler }

func swfName(n int) string {
	if n < 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func (e profEst) Estimate(j *Job) float64 {
	est, ok := e.p.Estimate(swfName(j.Executable), swfName(j.User), j.size(), 0)
	if !ok {
		return 0
	}
	return est.Upper()
}

func (e profEst) Observe(j *Job, hosts int, run float64) {
	if err := e.p.Observe(swfName(j.Executable), swfName(j.User), hosts, run); err != nil {
		slog.Warn("sim: profiler rejected a run", "job", j.ID, "err", err)
	}
}
