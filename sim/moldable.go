package sim

import "msched/models"

// Moldable returns jobs with every rigid job made moldable after SCOJO-P
// (SEEDS.md §3) with the speedup curve curve gives (its zero value:
// SCOJO-P's efficiency model, models.Efficiency; or Downey's,
// models.DowneyCurve): the trace's size is the job's N_opt and its run time
// there the trace's run time; it may run on the curve's Min..Max hosts of a
// machine of procs, for Run·Factor(n) on n of them (Job.Mold). Its
// estimate, whatever it is (exact, the request, the profiler's), is scaled
// the same way: the policy is told Estimate·Factor(n) for n hosts. An
// unknown estimate (0: the profiler's before any job has ended) stays
// unknown, and the policy falls back on its own model of the job from Min
// and Max, whose N_opt may then differ from the trace's size when the
// machine cut Max. Jobs that are moldable already (Time or Mold set) and
// multicluster requests (their components fix their size) are kept as they
// are.
func Moldable(jobs []Job, procs int, curve models.MoldCurve) []Job {
	out := make([]Job, len(jobs))
	copy(out, jobs)
	for i := range out {
		j := &out[i]
		if j.Time != nil || j.Mold != nil || j.Request != 0 {
			continue
		}
		j.Mold = curve.For(j.Min, procs)
		j.Min, j.Max = j.Mold.Min(), j.Mold.Max()
	}
	return out
}
