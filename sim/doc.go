// Package sim is msched's discrete-event simulator: it replays a workload
// (an SWF trace or a generated stream of Eq. 2 tasks) on a machine of
// identical or heterogeneous hosts and drives any policy.Policy over it, the
// same policy code that the sched daemon runs live, so a simulated result
// describes the live system.
//
// # Events
//
// Three kinds of event happen at an instant, in this order (the order of
// pyss, the Hebrew University simulator, ../shared/data/README.md):
// submissions, then terminations, then starts. The policy is asked for a
// Plan after each submission and after each termination, through the path
// the live sched daemon takes (policy.Decider): it reads the head of the
// queue it asks for (Policy.Reads), and its plan is checked by
// policy.Check; a plan with a fault fails the run. The jobs a Plan starts
// now start at that instant. A plan
// that starts or rejects a job is followed at once by another, at the same
// instant, as the live sched daemon plans again on the wake-up its own
// moves cause: a policy that sees only a window of the queue (the GA's)
// sees the jobs that entered it. A policy that plans over the whole queue
// starts nothing more then, so pyss's results are unchanged. A decision is
// skipped, as it could start nothing, when the queue is empty or no host is
// free.
//
// A running job ends at its actual run time. The policy sees it end at its
// estimate; a job that runs past its estimate keeps running, and the
// policy is then shown it ending policy.OverrunMargin after now, by the
// rule the live sched daemon applies to a job that has overrun its
// prediction (policy.ShowOverruns).
//
// # Conventions
//
// Times are seconds (float64) from the workload's origin; the snapshot's
// clock is Epoch plus that. Under the pyss conventions (Pyss in
// FromSWF and Metrics) jobs and statistics follow pyss exactly, so that
// the figures can be compared with its published output.
package sim
