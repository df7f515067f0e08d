package daemons

import (
	"fmt"
	"strings"
	"time"

	"msched/policy"
	"msched/spool"
)

// sched's plan-to-moves step: what it does with a checked plan, as a pure
// function of what it knows (no spool), so that a table can test it. The
// cycle reads the spool, takes the policy path (policy.Decider), calls
// planMoves, and makes the moves it returns.

// waitingJob is a waiting job the policy reads: its JID and the directory
// its file is in (queued/ or scheduling/).
type waitingJob struct {
	JID   string
	State spool.State
}

// movesIn is what planMoves decides from.
type movesIn struct {
	Now    time.Time
	Policy string // its name, for the notes and the jobs' Schedule
	// Read are the waiting jobs the policy reads, oldest first; Evict the
	// jobs in scheduling/ that it no longer reads (older jobs came back to
	// the queue: run re-queued them, or sched restarted).
	Read  []waitingJob
	Evict []string
	// Plan is the decision's plan; Faults are Check's faults of it, the
	// parts refused.
	Plan   policy.Plan
	Faults []policy.Fault
	// Admitted is when each job the policy read at the last cycle was
	// first read (the last planMoves' Admitted).
	Admitted map[string]time.Time
	// Window says the policy reads a window of the queue (Reads() > 0):
	// the jobs it reads wait in scheduling/. A policy that reads the whole
	// queue leaves them in queued/: moving every waiting job once more
	// would only cost a rewrite each, and queued/ already holds exactly
	// the jobs it reads.
	Window bool
	// EstimateSource says where a job's prediction came from
	// (spool.Schedule.EstimateSource); nil: not known.
	EstimateSource func(job string) string
}

// jobMove is one job file to move.
type jobMove struct {
	JID      string
	From, To spool.State
	Note     string
	// Reason is set on the job when it moves to rejected/; Schedule and
	// Placement when it moves to runnable/ (the placement is published).
	Reason    string
	Schedule  *spool.Schedule
	Placement policy.Placement
}

// movesOut is planMoves' answer.
type movesOut struct {
	Moves []jobMove
	// Later is the plan's sound predicted placements, to publish.
	Later []policy.Placement
	// Admitted is when each job still read and waiting was first read.
	Admitted map[string]time.Time
}

// planMoves turns a decision into moves. The parts Check refused are left
// out (Plan.Without): a refused start or rejection leaves its job waiting.
// In order:
//   - each job to evict goes from scheduling/ back to queued/;
//   - each job the plan rejects goes to rejected/ with the plan's reason;
//   - each job the plan starts now goes to runnable/ with its hosts and
//     predicted run time;
//   - each other job read stays waiting; with a window, one in queued/
//     moves to scheduling/ (the jobs the policy reads) once it has been
//     read for admitAfter: a job placed sooner goes from queued/ to
//     runnable/ in one move (in a burst, most jobs).
//
// A plan part naming a job that is not read is passed over, and a job is
// decided once (Check refuses both; planMoves does not rely on it).
func planMoves(in movesIn) movesOut {
	plan := in.Plan.Without(in.Faults)
	read := make(map[string]spool.State, len(in.Read))
	for _, w := range in.Read {
		read[w.JID] = w.State
	}
	out := movesOut{Later: plan.Later, Admitted: make(map[string]time.Time, len(in.Read))}
	for _, jid := range in.Evict {
		out.Moves = append(out.Moves, jobMove{JID: jid, From: spool.Scheduling, To: spool.Queued,
			Note: "evicted by an older job from the jobs " + in.Policy + " reads"})
	}
	decided := map[string]bool{}
	// decide reports where job waits, unless it is not read or is decided
	// already, and marks it decided.
	decide := func(job string) (spool.State, bool) {
		st, ok := read[job]
		if !ok || decided[job] {
			return "", false
		}
		decided[job] = true
		return st, true
	}
	for _, r := range plan.Reject {
		if st, ok := decide(r.Job); ok {
			out.Moves = append(out.Moves, jobMove{JID: r.Job, From: st, To: spool.Rejected,
				Note: "cannot be placed: " + r.Reason, Reason: r.Reason})
		}
	}
	for _, pl := range plan.StartNow {
		st, ok := decide(pl.Job)
		if !ok {
			continue
		}
		sch := &spool.Schedule{Hosts: pl.Hosts, PredictedSeconds: pl.Predicted.Seconds(), DecidedAt: in.Now, Policy: in.Policy, Why: pl.Why}
		if in.EstimateSource != nil {
			sch.EstimateSource = in.EstimateSource(pl.Job)
		}
		out.Moves = append(out.Moves, jobMove{JID: pl.Job, From: st, To: spool.Runnable,
			Note:      fmt.Sprintf("placed by %s on %s, predicted %s", in.Policy, strings.Join(pl.Hosts, ","), roundDur(pl.Predicted)),
			Schedule:  sch,
			Placement: pl})
	}
	for _, w := range in.Read {
		if decided[w.JID] {
			continue
		}
		since, ok := in.Admitted[w.JID]
		if !ok {
			since = in.Now
		}
		out.Admitted[w.JID] = since
		if in.Window && w.State == spool.Queued && in.Now.Sub(since) >= admitAfter {
			out.Moves = append(out.Moves, jobMove{JID: w.JID, From: spool.Queued, To: spool.Scheduling,
				Note: "read by " + in.Policy})
		}
	}
	return out
}
