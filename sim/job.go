package sim

import (
	"fmt"
	"time"

	"msched/hoststat"
	"msched/models"
	"msched/policy"
	"msched/workload"
)

// Job is one job of a simulated workload.
type Job struct {
	ID     string  // unique; the SWF job number for traces
	Submit float64 // seconds from the workload's origin
	// Min..Max is the host-count range; Min == Max for a rigid job.
	Min, Max int
	// Run is the actual run time, in seconds on hosts of speed 1, of a rigid
	// job, and of a moldable trace job (Mold) on its N_opt hosts. Jobs whose
	// time is a function of the hosts give Time instead.
	Run float64
	// Estimate is the run time the policy is told (seconds on speed-1
	// hosts): the actual one, the user's request, or a model's prediction.
	Estimate float64
	// User and Executable are the trace's numbers (SWF fields 12 and 14;
	// -1 unknown), for an Estimator such as the historical profiler.
	User, Executable int
	// Time, when set, is the job's actual run time on n hosts of speed 1
	// (a moldable job such as an Eq. 2 task). The policy's predictions of
	// such a job are exact: it sees Time itself.
	Time func(n int) float64
	// Mold, when set (and Time is not), is a trace's rigid job made
	// moldable (Moldable): Run and Estimate are its times on Mold.NOpt()
	// hosts, and on n hosts both scale by Mold.Factor(n), so a request or a
	// profiler's estimate is scaled as the run is.
	Mold models.Molding
	// Request and Components, when Request is not 0, make the job a
	// multicluster request, handed to the policy as they are
	// (policy.QueuedJob's fields of the same names): Min == Max == the
	// sum of Components (for a total request, Components may be nil).
	Request    workload.RequestType
	Components []int
}

// runOn is the job's actual run time on n hosts of speed 1.
func (j *Job) runOn(n int) float64 {
	switch {
	case j.Time != nil:
		return j.Time(n)
	case j.Mold != nil:
		return j.Run * j.Mold.Factor(n)
	}
	return j.Run
}

// estimateOn is the run time the policy is told for n hosts of speed 1.
func (j *Job) estimateOn(n int) float64 {
	switch {
	case j.Time != nil:
		return j.Time(n)
	case j.Mold != nil:
		return j.Estimate * j.Mold.Factor(n)
	}
	return j.Estimate
}

// size is the number of hosts Run and Estimate are for: a moldable trace
// job's N_opt, else Min.
func (j *Job) size() int {
	if j.Time == nil && j.Mold != nil {
		return j.Mold.NOpt()
	}
	return j.Min
}

// Machine is the set of hosts jobs run on, with each host's speed
// relative to the reference machine on which the trace's run times were
// measured.
type Machine struct {
	Hosts []policy.Host
	Speed []float64
}

// Identical returns n identical hosts of speed 1, named p0..p<n-1>, of
// architecture "generic".
func Identical(n int) Machine {
	m := Machine{Hosts: make([]policy.Host, n), Speed: make([]float64, n)}
	for i := range m.Hosts {
		m.Hosts[i] = policy.Host{Name: fmt.Sprintf("p%d", i), Arch: policy.GenericArch}
		m.Speed[i] = 1
	}
	return m
}

// FromHosts returns the hosts of a hosts file, each at the speed the
// hardware database gives its architecture (1 for an architecture it does
// not know, as the model predictor treats it). A rigid job then runs at the
// speed of the slowest of its hosts.
func FromHosts(hs []hoststat.Host, hw *models.Hardware) Machine {
	m := Machine{Hosts: make([]policy.Host, len(hs)), Speed: make([]float64, len(hs))}
	for i, h := range hs {
		m.Hosts[i] = policy.Host{Name: h.Name, Arch: h.Arch, Cluster: h.Cluster, Via: h.Launcher()}
		m.Speed[i] = 1
		if hw != nil {
			if a, err := hw.Lookup(h.Arch); err == nil && a.Speed > 0 {
				m.Speed[i] = a.Speed
			}
		}
	}
	return m
}

// Epoch is the snapshot clock's origin: time 0 of every workload.
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// At converts seconds from the origin to the snapshot clock.
func At(sec float64) time.Time { return Epoch.Add(dur(sec)) }

func dur(sec float64) time.Duration { return time.Duration(sec*1e9 + 0.5) }
