package sim

import (
	"fmt"
	"math"
	"slices"
)

// BoundedSlowdownFloor is the run time below which bounded slowdown
// counts a job as running this long (seconds), the usual 10 s.
const BoundedSlowdownFloor = 10

// Metrics summarise one Result. Times are seconds.
type Metrics struct {
	Policy string `json:"policy"`

	MeanWait     float64 `json:"mean_wait_s"`
	MedianWait   float64 `json:"median_wait_s"`
	P95Wait      float64 `json:"p95_wait_s"`
	MeanResponse float64 `json:"mean_response_s"`
	MedianResp   float64 `json:"median_response_s"`
	P95Response  float64 `json:"p95_response_s"`
	MeanSlowdown float64 `json:"mean_slowdown"`
	MedianSlow   float64 `json:"median_slowdown"`
	P95Slowdown  float64 `json:"p95_slowdown"`
	MeanBSD      float64 `json:"mean_bounded_slowdown"`
	MedianBSD    float64 `json:"median_bounded_slowdown"`
	P95BSD       float64 `json:"p95_bounded_slowdown"`

	Utilization float64 `json:"utilization"`
	Makespan    float64 `json:"makespan_s"`
	Throughput  float64 `json:"throughput_per_h"` // jobs finished per hour of the span

	Jobs     int `json:"jobs"`          // jobs counted in the means
	Of       int `json:"jobs_of"`       // jobs eligible (pyss: not tiny)
	Finished int `json:"jobs_finished"` // jobs that ran to completion
	Rejected int `json:"jobs_rejected"`

	Decisions      int     `json:"decisions"`
	MeanDecisionMS float64 `json:"mean_decision_ms"` // wall time per Plan call
	GensPerDecide  float64 `json:"generations_per_decision,omitempty"`
	WallS          float64 `json:"wall_s"`
}

// Compute summarises r. With pyss, the jobs counted are pyss's (see
// countedPyss); otherwise every job that ran to completion. Slowdown
// divides by the run time, at least one second.
func Compute(r *Result, pyss bool) Metrics {
	m := Metrics{Policy: r.Policy, Decisions: r.Decisions, WallS: r.Wall.Seconds()}
	if r.Decisions > 0 {
		m.MeanDecisionMS = r.DecisionTime.Seconds() * 1000 / float64(r.Decisions)
		if r.Generations > 0 {
			m.GensPerDecide = float64(r.Generations) / float64(r.Decisions)
		}
	}
	var counted []int
	if pyss {
		counted, m.Of = countedPyss(r)
	} else {
		for k, st := range r.Status {
			if st == Done {
				counted = append(counted, k)
			}
		}
		m.Of = len(r.Jobs)
	}
	m.Jobs = len(counted)
	wait := make([]float64, 0, len(counted))
	resp := make([]float64, 0, len(counted))
	slow := make([]float64, 0, len(counted))
	bsd := make([]float64, 0, len(counted))
	for _, k := range counted {
		w := r.Start[k] - r.Jobs[k].Submit
		run := r.End[k] - r.Start[k]
		wait = append(wait, w)
		resp = append(resp, w+run)
		slow = append(slow, (w+run)/math.Max(run, 1))
		bsd = append(bsd, math.Max(1, (w+run)/math.Max(run, BoundedSlowdownFloor)))
	}
	m.MeanWait, m.MedianWait, m.P95Wait = summary(wait)
	m.MeanResponse, m.MedianResp, m.P95Response = summary(resp)
	m.MeanSlowdown, m.MedianSlow, m.P95Slowdown = summary(slow)
	m.MeanBSD, m.MedianBSD, m.P95BSD = summary(bsd)

	// Span: from the first submission (or 0 under a horizon) to the last
	// end, or to where the run stopped.
	from, to := math.Inf(1), math.Inf(-1)
	busy := 0.0
	for k, j := range r.Jobs {
		if r.Horizon <= 0 {
			from = math.Min(from, j.Submit)
		}
		switch r.Status[k] {
		case Done:
			m.Finished++
			to = math.Max(to, r.End[k])
			busy += float64(r.NHosts[k]) * (r.End[k] - r.Start[k])
		case Rejected:
			m.Rejected++
		case Pending:
			if !math.IsNaN(r.Start[k]) { // running when the run stopped
				busy += float64(r.NHosts[k]) * (r.Stop - r.Start[k])
			}
		}
	}
	if r.Horizon > 0 {
		from, to = 0, r.Stop
	}
	if span := to - from; span > 0 && !math.IsInf(span, 0) {
		m.Makespan = span
		m.Utilization = busy / (float64(r.Hosts) * span)
		m.Throughput = float64(m.Finished) / span * 3600
	}
	return m
}

// countedPyss returns the jobs pyss counts, in its order, and the number of
// jobs that are not tiny: jobs sorted by finish time; tiny jobs (estimate
// 1 s on 1 processor) left out, each lowering the count; the first 1 % of
// the count (integer part of count/100, recomputed as tiny jobs lower it,
// and only when the count is at least 100) skipped, the position counting
// tiny jobs too; counting stops at the first job that finishes after the
// last submission. This is pyss's print_statistics loop, step for step.
func countedPyss(r *Result) ([]int, int) {
	var fin []int
	for k, st := range r.Status {
		if st == Done {
			fin = append(fin, k)
		}
	}
	slices.SortStableFunc(fin, func(a, b int) int {
		if r.End[a] < r.End[b] {
			return -1
		}
		if r.End[a] > r.End[b] {
			return 1
		}
		return 0
	})
	size := len(fin)
	pct := size / 100
	seen := 0
	var out []int
	for _, k := range fin {
		seen++
		if r.Jobs[k].pyssTiny() {
			size--
			pct = size / 100
			continue
		}
		if size >= 100 && seen <= pct {
			continue
		}
		if r.End[k] > r.LastSubmit {
			break
		}
		out = append(out, k)
	}
	// The count of non-tiny jobs over all finished jobs.
	of := 0
	for _, k := range fin {
		if !r.Jobs[k].pyssTiny() {
			of++
		}
	}
	return out, of
}

// RejectionSummary says how many jobs the policy rejected, and the reason
// of the first of them ("" when none was). Reasons name each job's own
// request, so they seldom repeat word for word.
func (r *Result) RejectionSummary() string {
	if len(r.Reasons) == 0 {
		return ""
	}
	for k, st := range r.Status {
		if st == Rejected {
			id := r.Jobs[k].ID
			return fmt.Sprintf("%d of %d jobs rejected; the first, %s: %s", len(r.Reasons), len(r.Jobs), id, r.Reasons[id])
		}
	}
	return fmt.Sprintf("%d of %d jobs rejected", len(r.Reasons), len(r.Jobs))
}

// pyssTiny tells a job pyss leaves out of its statistics: a rigid job of
// estimate 1 s on 1 processor (what FromSWF makes of a record pyss cannot
// use).
func (j *Job) pyssTiny() bool {
	return j.Estimate == 1 && j.Min == 1 && j.Time == nil && j.Mold == nil
}

// summary returns the mean, median and 95th percentile (nearest rank) of v.
func summary(v []float64) (mean, median, p95 float64) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	n := len(s)
	mean = sum / float64(n)
	if n%2 == 1 {
		median = s[n/2]
	} else {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	p95 = s[int(math.Ceil(0.95*float64(n)))-1]
	return
}
