// Package policy holds msched's scheduling policies. A policy reads an
// immutable Snapshot of the system (hosts, running jobs, the queue) and
// returns a Plan (which jobs start now, on which hosts, and the predicted
// schedule for the rest). Policies never touch the spool: the sched daemon
// and the simulator both call the same code, which is what makes a
// simulated result describe the live system (after Nomad's scheduler:
// "business logic only, plumbing elsewhere").
package policy

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"msched/workload"
)

// Host is one host as a policy sees it.
type Host struct {
	Name    string
	Arch    string
	Cluster string
	// Via names the launcher that reaches the host (hoststat's
	// Address.Launcher: this machine, ssh, one Slurm cluster): a job runs
	// through one, so a co-allocated job's components are placed on
	// clusters reached the same way. "" for all alike (the simulator); an
	// empty Via beside others is a launcher of its own.
	Via  string
	Load float64
	// Speed is the host's speed relative to the reference machine, from
	// the hardware database (models.Hardware) for its architecture (the
	// load is in Load); 0 when unknown, taken as 1. Policies that choose hosts by
	// speed read it; run times still come from the Predictor.
	Speed float64
	// FreeAt is when the host's running work is predicted to end; zero or
	// before Now means free now.
	FreeAt time.Time
}

// RunningJob is a job already started; its hosts are busy until End.
type RunningJob struct {
	ID    string
	Name  string
	Hosts []string
	Start time.Time
	End   time.Time // predicted
}

// QueuedJob is a job waiting for hosts.
type QueuedJob struct {
	ID     string
	Name   string
	Submit time.Time
	// Min..Max is the allowed host count (Min == Max for a rigid job).
	Min, Max int
	// Arch and Cluster, when set, restrict the hosts the job may use.
	Arch, Cluster string
	// Model and Params name the performance model that predicts the run
	// time; without a model the Estimate is used.
	Model  string
	Params map[string]float64
	// Estimate is the user's or the profiler's estimate of the run time on
	// Min hosts of speed 1; 0 when unknown.
	Estimate time.Duration
	// User and Executable name the job's category in the historical
	// profiler (profiler.Predictor); "" when unknown.
	User, Executable string
	// Request and Components, when Request is not 0, make the job a
	// multicluster request (Bucur & Epema; workload.RequestType): Min ==
	// Max == the sum of Components. Total: that many hosts anywhere, across
	// clusters; Unordered: component i's hosts inside one cluster, each
	// component in a distinct cluster, chosen by the policy; Ordered:
	// component i inside the i-th cluster (ClusterOrder). A placement of
	// such a job names its hosts component by component, in Components'
	// order. Request 0 is an ordinary job, inside one cluster.
	Request    workload.RequestType
	Components []int
}

// Snapshot is what a policy reads: the state of the system at Now.
type Snapshot struct {
	Now     time.Time
	Hosts   []Host
	Running []RunningJob
	Queue   []QueuedJob // in arrival order
}

// Placement is one job placed on hosts at a predicted start.
type Placement struct {
	Job       string
	Hosts     []string
	Start     time.Time
	Predicted time.Duration
	// Why, when set, says why the policy chose this placement, in a
	// sentence for the user's report (a moldable job: the size chosen and
	// the reason).
	Why string
}

// Plan is a policy's answer: jobs to start now (all their hosts are free
// now), and the predicted placement of the others (for the Gantt chart).
type Plan struct {
	StartNow []Placement
	Later    []Placement
	// Reject lists jobs that can never be placed on these hosts (more hosts
	// than match the job's constraints), with the reason.
	Reject []Rejection
}

// Rejection is a job a policy cannot ever place, and why.
type Rejection struct {
	Job    string
	Reason string
}

// Policy decides a Plan from a Snapshot. A policy may keep state between
// calls (the GA keeps its population); it is called by one goroutine.
type Policy interface {
	Name() string
	// Reads is how many jobs from the head of the queue (arrival order)
	// the policy reads; 0 means the whole queue. Whoever calls Plan hands
	// it exactly that head (Head, Decider), the sched daemon and the
	// simulator alike, so that both show a policy the same queue.
	Reads() int
	Plan(ctx context.Context, s Snapshot) (Plan, error)
}

// Predictor gives a policy the predicted run time of a queued job on a set
// of hosts. The live system answers from performance models through the
// cached evaluator; the simulator from the trace.
type Predictor interface {
	Predict(ctx context.Context, job *QueuedJob, hosts []Host) (time.Duration, error)
}

// PredictorFunc adapts a function to a Predictor.
type PredictorFunc func(ctx context.Context, job *QueuedJob, hosts []Host) (time.Duration, error)

// Predict calls f.
func (f PredictorFunc) Predict(ctx context.Context, job *QueuedJob, hosts []Host) (time.Duration, error) {
	return f(ctx, job, hosts)
}

// Factory builds a policy from its options.
type Factory func(o Options) (Policy, error)

var registry = map[string]Factory{}

// register adds a policy by name; called from this package's files only,
// in variable initialisers (no init side effects elsewhere).
func register(name string, f Factory) bool {
	if _, dup := registry[name]; dup {
		panic("policy: duplicate policy " + name)
	}
	registry[name] = f
	return true
}

// New builds the named policy.
func New(name string, o Options) (Policy, error) {
	f, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("policy: unknown policy %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return f(o)
}

// Names lists the known policies, sorted.
func Names() []string {
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ClusterOrder lists the clusters of hs in the order they first appear
// (the hosts file's order): an ordered request's component i goes to the
// i-th of them.
func ClusterOrder(hs []Host) []string {
	var out []string
	for i := range hs {
		if !slices.Contains(out, hs[i].Cluster) {
			out = append(out, hs[i].Cluster)
		}
	}
	return out
}
