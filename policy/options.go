package policy

import (
	"log/slog"
	"time"
)

// Options configure a policy. Zero values take the defaults below.
type Options struct {
	// Predictor answers run-time questions; nil means every job takes its
	// Estimate (or Fallback).
	Predictor Predictor
	// Fallback is the run time assumed for a job whose prediction fails and
	// that has no estimate.
	Fallback time.Duration
	// Seed seeds every random choice of the policy; log it to replay.
	Seed int64
	Log  *slog.Logger

	// GA settings.
	Population  int           // individuals; default 60 (the paper's)
	Window      int           // queued jobs in the live population; default 20
	Generations int           // generations per decision (simulation); default 50 when TimeBudget is 0
	TimeBudget  time.Duration // wall time per decision (live); 0: use Generations
	// MaxJumps is how many times a job may be overtaken by later jobs
	// (FPFS's MaxJumps) before it must be placed next: nil:
	// DefaultMaxJumps; 0: at once (fpfs is then fcfs; the GA places the
	// oldest waiting job first, and later jobs may still start on hosts it
	// does not need); < 0: unbounded.
	MaxJumps *int
	// Stall ends a decision's evolution early, within TimeBudget, once the
	// best schedule has not improved for this many generations, when the
	// decision follows the previous one within 200 ms: under a burst
	// decisions come every few tens of milliseconds, the population carries
	// over from one to the next, and the rest of each budget would mostly
	// be spent confirming the best. Replans of a quiet queue keep the whole
	// budget. 0: DefaultStall; < 0: never. Not used with Generations
	// (simulation), which stays a fixed count. (ga-plan has its own:
	// PlanOptions.Stall.)
	Stall int
	// LocalSearch is the share of the MS GA policies' offspring (ga-ms,
	// ga-xms, ga-xms-continuous) improved by the GA's local search
	// (ga.Config.LocalSearch); 0: none.
	LocalSearch float64

	// Fit is how fcfs, fcfs-fill and fpfs place the components of an
	// unordered multicluster request (coalloc.go): FirstFit (the zero
	// value, the default, as in Bucur and Epema) or WorstFit.
	Fit Fit

	// Plan configures ga-plan.
	Plan PlanOptions
}

// PlanOptions configure the schedule-based GA (ga-plan). Zero values take
// the defaults below.
type PlanOptions struct {
	// Objective is what it minimises over the plan's predicted times:
	// ObjectiveMixed (default), ObjectiveWait, ObjectiveBSLD or
	// ObjectiveResponse.
	Objective string
	// Slack is how much later than its start in the plan when first seen a
	// job may be planned (the starvation bound); 0: DefaultSlack; < 0: no
	// bound.
	Slack time.Duration
	// IdleWeight weighs the share of hosts the plan leaves idle over its
	// first IdleHorizon (an XMS-like term); < 0: not counted. 0: automatic,
	// DefaultIdleWeight on hosts of one speed and not counted on hosts of
	// several, where it fills idle slow hosts now with jobs that would end
	// sooner on fast hosts later (docs/ga-plan.md measures it).
	IdleWeight float64
	// Population is the number of individuals; default
	// DefaultPlanPopulation.
	Population int
	// Stall ends a decision's evolution after this many generations without
	// improvement, within Options.Generations (simulation) or
	// Options.TimeBudget (live); default DefaultPlanStall; < 0: never.
	Stall int
	// DomainGenes gives each job a host-domain gene (the MS paper's
	// two-part coding: order and mapping) that the mutation sets to a fixed
	// domain or "auto". Off (the default), every gene is "auto": the
	// chromosome is the order and the decoder puts each job where it is
	// expected to end first. On three-speed hosts the genes made the plans
	// worse and the results depend on the seed (docs/ga-plan.md).
	DomainGenes bool
}

// The objectives of ga-plan, over the plan's predicted starts and run
// times: mean wait in WaitUnit; mean bounded slowdown (10-s bound); mixed,
// their sum (the default); response, the mean of wait plus run time in
// WaitUnit. docs/ga-plan.md compares them.
const (
	ObjectiveBSLD     = "bsld"
	ObjectiveWait     = "wait"
	ObjectiveMixed    = "mixed"
	ObjectiveResponse = "response"
)

// Objectives lists ga-plan's objectives.
func Objectives() []string {
	return []string{ObjectiveWait, ObjectiveBSLD, ObjectiveMixed, ObjectiveResponse}
}

// ga-plan's defaults: its starvation slack, the weight of its idle term,
// and its population and stall (smaller and longer than the MS GA's: a
// decode plans the whole queue, and a small population evolved for more
// generations found better plans for the same time).
const (
	DefaultSlack          = 12 * time.Hour
	DefaultIdleWeight     = 1.0 // on hosts of one speed; see PlanOptions.IdleWeight
	DefaultPlanPopulation = 30
	DefaultPlanStall      = 20
)

// Defaults used when an option is zero.
const (
	DefaultPopulation = 60
	DefaultWindow     = 20
	DefaultMaxJumps   = 7
	DefaultGens       = 50
	DefaultStall      = 10
)

func (o Options) withDefaults() Options {
	if o.Population <= 0 {
		o.Population = DefaultPopulation
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.MaxJumps == nil {
		o.MaxJumps = new(DefaultMaxJumps)
	}
	if o.Generations <= 0 && o.TimeBudget <= 0 {
		o.Generations = DefaultGens
	}
	if o.Stall == 0 {
		o.Stall = DefaultStall
	}
	if o.Plan.Objective == "" {
		o.Plan.Objective = ObjectiveMixed
	}
	if o.Plan.Slack == 0 {
		o.Plan.Slack = DefaultSlack
	}
	if o.Plan.Population <= 0 {
		o.Plan.Population = DefaultPlanPopulation
	}
	if o.Plan.Stall == 0 {
		o.Plan.Stall = DefaultPlanStall
	}
	if o.Fallback <= 0 {
		o.Fallback = time.Hour
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return o
}

// window is the head of the queue that the GA and list policies plan.
func (o Options) window(queue []QueuedJob) []QueuedJob {
	return queue[:min(len(queue), o.Window)]
}
