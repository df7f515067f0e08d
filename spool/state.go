package spool

import "fmt"

// State is a job's state: the name of the spool directory its job file is in.
// The directory is the truth; the job file's history only records the path.
type State string

// The states, in the order a job normally passes through them. This is the one
// list of states; doc.go describes each.
const (
	Submitted  State = "submitted"
	Queued     State = "queued"
	Scheduling State = "scheduling"
	Runnable   State = "runnable"
	Running    State = "running"
	Finished   State = "finished"
	Rejected   State = "rejected"
)

// States lists every state in pipeline order.
var States = []State{Submitted, Queued, Scheduling, Runnable, Running, Finished, Rejected}

// legacyExited was a state between finished and the reaper until the
// reaper took ended jobs from finished/ directly: sched moved each job
// finished → exited, then the reaper reported it from exited/. It is no
// state now, but a spool written by an older msched may still hold jobs in
// exited/ (the reaper moves them to finished/ at start: RecoverExited), and
// their histories end in it, which Parse accepts (recorded).
const legacyExited State = "exited"

// recorded reports whether s may stand in a job file's history: a state,
// or legacyExited.
func (s State) recorded() bool { return s.Valid() || s == legacyExited }

// The other spool directories. None of them is a state: a file in them is not a job.
const (
	DirTmp     = "tmp"     // staging for atomic writes and claimed submissions; same file system
	DirControl = "control" // requests to daemons (cancel.<JID>); read and removed by the addressee
	DirOutput  = "output"  // per-job stdout/stderr when the job names no destination
	DirReports = "reports" // rendered reports
	DirDB      = "db"      // JID counter, hosts, caches, histories, published schedule
)

var otherDirs = []string{DirTmp, DirControl, DirOutput, DirReports, DirDB}

// Valid reports whether s is one of the states.
func (s State) Valid() bool {
	for _, t := range States {
		if s == t {
			return true
		}
	}
	return false
}

func (s State) String() string { return string(s) }

// Daemon names the process that owns a directory. Only the owner edits or
// removes files in its directories; others may read, and add where the table says so.
type Daemon string

// The daemons, plus the submitters (users, `msched submit`).
const (
	Init      Daemon = "init"
	Sched     Daemon = "sched"
	Run       Daemon = "run"
	Reaper    Daemon = "reaper"
	Stats     Daemon = "stats" // owns no directory: it samples the hosts into db/
	Submitter Daemon = "submitter"
)

// Daemons are the five daemons, in pipeline order.
var Daemons = []Daemon{Init, Sched, Run, Reaper, Stats}

// Owner returns the daemon that owns state s: the only one that may edit,
// move out of, or remove files in that directory.
func Owner(s State) Daemon {
	switch s {
	case Submitted:
		return Init
	case Queued, Scheduling:
		return Sched
	case Runnable, Running:
		return Run
	case Finished, Rejected:
		return Reaper
	}
	return ""
}

// Transition is one legal move of a job file between two state directories.
// By is always Owner(From): the owner of the source performs the move.
type Transition struct {
	From, To State
	By       Daemon
	Why      string
}

// Transitions is the table of legal moves. doc.go mirrors it line for line
// (a test checks). Anything not listed is refused by Move.
var Transitions = []Transition{
	{Submitted, Queued, Init, "valid submission; JID, user, submitted_at added"},
	{Submitted, Rejected, Init, "unparseable or invalid; original bytes and reason kept"},
	{Queued, Scheduling, Sched, "taken into the optimiser's pool"},
	{Queued, Runnable, Sched, "placed directly (non-GA policy); schedule added"},
	{Queued, Rejected, Sched, "cancelled, or can never be placed"},
	{Scheduling, Queued, Sched, "recovery at start, or evicted from the window"},
	{Scheduling, Runnable, Sched, "hosts and prediction chosen; schedule added"},
	{Scheduling, Rejected, Sched, "cancelled, or can never be placed"},
	{Runnable, Running, Run, "about to start; run.started_at, attempts added"},
	{Runnable, Queued, Run, "could not start; attempts below the limit"},
	{Runnable, Rejected, Run, "cancelled before start, or attempts exhausted"},
	{Running, Finished, Run, "ended, killed, cancelled, or start failed for good"},
	{Running, Queued, Run, "start failed or job lost; attempts below the limit"},
}

// Removable lists the states whose files the reaper deletes after reporting:
// the states a job ends in, which nothing moves out of.
var Removable = []State{Finished, Rejected}

// How a job the reaper reports ended, in the words of its report and its
// accounting record (notify.Report.State, acct.Record.State): see
// Outcome.
const (
	OutcomeExited   = "exited"
	OutcomeRejected = "rejected"
)

// Outcome is how a job in state s ended, for its report and accounting
// record: OutcomeExited in finished/ (it ran, or was given up on after
// sched had placed it: its reason says why), OutcomeRejected in
// rejected/ (it never ran); "" in any other state. The word "exited" is
// older than the reaper's ownership of finished/ (see legacyExited), and
// accounting logs hold it, so a record says it still.
func Outcome(s State) string {
	switch s {
	case Finished:
		return OutcomeExited
	case Rejected:
		return OutcomeRejected
	}
	return ""
}

// Legal returns nil if a job may move from one state to another, else an
// error naming both states.
func Legal(from, to State) error {
	if !from.Valid() {
		return fmt.Errorf("spool: illegal move %s → %s: unknown state %q", from, to, from)
	}
	if !to.Valid() {
		return fmt.Errorf("spool: illegal move %s → %s: unknown state %q", from, to, to)
	}
	for _, t := range Transitions {
		if t.From == from && t.To == to {
			return nil
		}
	}
	return fmt.Errorf("spool: illegal move %s → %s", from, to)
}

func removable(s State) bool {
	for _, r := range Removable {
		if r == s {
			return true
		}
	}
	return false
}
