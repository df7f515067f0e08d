package sim

import "msched/models"

// Moldable returns jobs with every rigid job made moldable after SCOJO-P
// (models.Efficiency, SEEDS.md §3): the trace's size is the job's N_opt and
// its run time there the trace's run time; it may run on N_min..N_max hosts
// of a machine of procs, for Run·Factor(n) on n of them. Jobs that are
// moldable already (Time set) and multicluster requests (their components
// fix their size) are kept as they are.
//
// Estimates: a moldable job's predictions are its Time (Job.estimateOn), so
// the policy is told its exact run time on any number of hosts, whatever the
// trace's estimate was. Scaling a request or a profiler's estimate the same
// way would need a Job field for the estimate's curve (Time serves both the
// run and the estimate today).
func Moldable(jobs []Job, procs int) []Job {
	out := make([]Job, len(jobs))
	copy(out, jobs)
	for i := range out {
		j := &out[i]
		if j.Time != nil || j.Request != 0 {
			continue
		}
		e := models.Efficiency{Opt: j.Min, Machine: procs}
		run := j.Run
		j.Min, j.Max = e.Min(), e.Max()
		j.Time = func(n int) float64 { return run * e.Factor(n) }
	}
	return out
}
