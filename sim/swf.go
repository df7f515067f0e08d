package sim

import (
	"fmt"
	"iter"
	"math"
	"strconv"

	"msched/workload"
)

// EstimateKind is where the run time a policy is told comes from.
type EstimateKind int

const (
	// Exact tells the policy the actual run time.
	Exact EstimateKind = iota
	// Request tells it the user's requested time (SWF field 9).
	Request
	// Profiler leaves the estimate to Config.Estimator, asked at each
	// job's submission (see ProfilerEstimator); FromSWF sets it to 0.
	Profiler
)

// ParseEstimate reads "exact", "request" or "profiler".
func ParseEstimate(s string) (EstimateKind, error) {
	switch s {
	case "exact":
		return Exact, nil
	case "request":
		return Request, nil
	case "profiler":
		return Profiler, nil
	}
	return 0, fmt.Errorf("sim: unknown estimate %q (want exact, request or profiler)", s)
}

func (k EstimateKind) String() string {
	switch k {
	case Request:
		return "request"
	case Profiler:
		return "profiler"
	}
	return "exact"
}

// Trace is a workload read from SWF records.
type Trace struct {
	Jobs []Job
	// Skipped counts records left out (run time, processors or submit time
	// unknown or negative; never under pyss), Clamped the jobs that asked
	// for more processors than the machine has and were given all of it,
	// Tiny the records pyss turns into 1-s jobs.
	Skipped, Clamped, Tiny int
}

// FromSWF turns SWF records into rigid jobs for a machine of procs
// processors.
//
// With pyss, exactly as pyss does (../shared/data/README.md): a record
// whose run time ≤ 0, allocated processors ≤ 0 or submit time < 0 becomes a
// job of max(1, allocated) processors, run time 1 s and estimate 1 s,
// submitted at max(submit, 1) (counted in Tiny; of these only the
// 1-processor ones are left out of the statistics); otherwise processors = max(min(allocated, procs), 1),
// estimate = int(max(requested time, run time, 1)) and actual run time =
// int(max(min(requested time, run time), 1)), so a job never runs past its
// estimate; times are whole seconds. With est == Exact the estimate is then
// the actual run time.
//
// Otherwise: records whose run time, processors (allocated, else requested)
// or submit time are unknown are skipped; a job asking for more than procs
// gets procs; the run time is the trace's, so a job may run past a
// request; under Request a record without a requested time (-1) is told its
// actual run time.
func FromSWF(recs iter.Seq2[workload.Job, error], procs int, est EstimateKind, pyss bool) (*Trace, error) {
	return fromSWF(recs, procs, est, pyss, false)
}

// fromSWF is FromSWF; with multi, each job also gets the multicluster
// request its record holds (FromSWFHeader).
func fromSWF(recs iter.Seq2[workload.Job, error], procs int, est EstimateKind, pyss, multi bool) (*Trace, error) {
	if procs <= 0 {
		return nil, fmt.Errorf("sim: machine of %d processors", procs)
	}
	tr := &Trace{}
	for r, err := range recs {
		if err != nil {
			return tr, err
		}
		var j Job
		clamped := tr.Clamped
		if pyss {
			j = pyssJob(r, procs, est, tr)
		} else {
			p := r.P()
			if r.Run < 0 || p <= 0 || r.Submit < 0 {
				tr.Skipped++
				continue
			}
			if p > procs {
				p = procs
				tr.Clamped++
			}
			j = Job{Submit: r.Submit, Min: p, Max: p, Run: r.Run, Estimate: r.Run}
			if est == Request && r.ReqTime > 0 {
				j.Estimate = r.ReqTime
			}
		}
		if est == Profiler {
			j.Estimate = 0
		}
		j.ID = strconv.FormatInt(r.ID, 10)
		j.User, j.Executable = r.User, r.Executable
		if multi {
			whole, err := readRequest(&j, r)
			if err != nil {
				return tr, err
			}
			if whole {
				tr.Clamped = clamped // kept whole: not clamped, whatever the record's processors
			}
		}
		tr.Jobs = append(tr.Jobs, j)
	}
	return tr, nil
}

func pyssJob(r workload.Job, procs int, est EstimateKind, tr *Trace) Job {
	if r.Run <= 0 || r.Procs <= 0 || r.Submit < 0 {
		// pyss keeps the allocated processors (at least 1): only a
		// 1-processor one is left out of the statistics (pyssTiny). pyss
		// does not clamp them to the machine; a job wider than the machine
		// could never start here, so it gets the machine, and is counted
		// as clamped.
		tr.Tiny++
		p := max(r.Procs, 1)
		if p > procs {
			p = procs
			tr.Clamped++
		}
		return Job{Submit: math.Max(math.Trunc(r.Submit), 1), Min: p, Max: p, Run: 1, Estimate: 1}
	}
	p := r.Procs
	if p > procs {
		p = procs
		tr.Clamped++
	}
	p = max(p, 1)
	estimate := math.Trunc(math.Max(math.Max(r.ReqTime, r.Run), 1))
	actual := math.Trunc(math.Max(math.Min(r.ReqTime, r.Run), 1))
	if est == Exact {
		estimate = actual
	}
	return Job{Submit: math.Trunc(r.Submit), Min: p, Max: p, Run: actual, Estimate: estimate}
}
