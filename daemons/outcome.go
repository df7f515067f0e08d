package daemons

import (
	"context"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"msched/acct"
	"msched/spool"
)

// Outcome is how a job ended, as its accounting record says: the reaper's
// record once it is reaped, NewRecord of its job file in finished/ or
// rejected/ before. One reading of a record's outcome for the commands
// that wait for a job (msched submit --wait) and for sched's dependencies
// (after:, afterok:).
type Outcome struct {
	JID string
	// Exited: it was placed, and left through finished/ (it ran, or was
	// given up on after it was placed: Reason); else it was rejected
	// (invalid, cancelled before it ran, never placeable).
	Exited     bool
	ExitStatus *int   // nil: no exit status (killed, never started, rejected)
	Signal     string // the signal that killed it, e.g. SIGKILL
	Reason     string
	Cancelled  bool
}

// OutcomeOf reads r's outcome.
func OutcomeOf(r acct.Record) Outcome {
	return Outcome{JID: r.JID, Exited: r.State == spool.OutcomeExited, ExitStatus: r.ExitStatus, Signal: r.Signal,
		Reason: r.Reason, Cancelled: r.Cancelled}
}

// OK reports whether the job ran and exited by itself with status 0, what
// afterok: waits for.
func (o Outcome) OK() bool {
	return o.Exited && o.ExitStatus != nil && *o.ExitStatus == 0 && o.Signal == "" && o.Reason == "" && !o.Cancelled
}

// ExitCode is the job's exit status as a shell gives it: the status, or
// 128+N when signal N killed it; ok is false when it has neither (it was
// rejected, or never started).
func (o Outcome) ExitCode() (code int, ok bool) {
	if o.ExitStatus != nil {
		return *o.ExitStatus, true
	}
	if o.Signal != "" {
		if n := unix.SignalNum(o.Signal); n > 0 {
			return 128 + int(n), true
		}
	}
	return 0, false
}

// String says how the job ended: "exited with status 0", "killed by
// SIGKILL (walltime exceeded)", "cancelled", "rejected: …".
func (o Outcome) String() string {
	var s string
	switch {
	case o.Cancelled && o.ExitStatus == nil && o.Signal == "":
		return "cancelled"
	case !o.Exited:
		return "rejected: " + o.Reason
	case o.ExitStatus != nil:
		s = fmt.Sprintf("exited with status %d", *o.ExitStatus)
	case o.Signal != "":
		s = "killed by " + o.Signal
	default:
		return "failed: " + o.Reason
	}
	if o.Cancelled {
		s += " (cancelled)"
	} else if o.Reason != "" && o.Reason != fmt.Sprintf("exit status %d", deref(o.ExitStatus)) && o.Reason != "killed by "+o.Signal {
		s += " (" + o.Reason + ")"
	}
	return s
}

func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// JobStatus is where a job is, for whoever waits for it.
type JobStatus struct {
	// State is where its file is: submitted (claimed by init, not yet
	// queued) or a daemon's state; "" once reaped, or for no job.
	State spool.State
	// Ended: it is in finished/ or rejected/, or reaped; Outcome says how.
	Ended   bool
	Outcome Outcome
	// Missing: no such job anywhere, though its JID has been given (a JID
	// burned by a failed claim, or a job whose record retention has
	// dropped). A JID not given yet is Missing too, with Future.
	Missing, Future bool
}

// LookupJobs says where each of jids is and, for those that ended, how.
// It looks where a job passes, in its order, so that a job moving on
// while it looks is found: the JID counter, then init's claims, then the
// state directories (StateOf; a job in finished/ or rejected/ is read),
// then, for the rest, the accounting log and its rotated generations
// (ReadRecords), which the reaper appends to before it removes a job. A
// JID found nowhere is Missing; one above the counter read first is also
// Future. jids must be canonical (spool.ParseJID).
func LookupJobs(ctx context.Context, sp *spool.Spool, jids []string) (map[string]JobStatus, error) {
	out, gone, last, err := lookupSpool(sp, jids)
	if err != nil {
		return nil, err
	}
	if len(gone) > 0 {
		if err := lookupLog(ctx, sp, gone, last, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// lookupSpool is LookupJobs' look in the spool: the JID counter (last),
// init's claims, then the state directories. It returns the status of
// each of jids found there, and the others (gone), for lookupLog.
func lookupSpool(sp *spool.Spool, jids []string) (out map[string]JobStatus, gone []string, last int64, err error) {
	out = make(map[string]JobStatus, len(jids))
	if last, err = sp.LastJID(); err != nil {
		return nil, nil, 0, err
	}
	claimed, err := sp.ClaimedJIDs()
	if err != nil {
		return nil, nil, 0, err
	}
	for _, jid := range jids {
		if _, done := out[jid]; done {
			continue
		}
		if slices.Contains(claimed, jid) {
			out[jid] = JobStatus{State: spool.Submitted}
			continue
		}
		st, ok := sp.StateOf(jid)
		if !ok {
			gone = append(gone, jid)
			continue
		}
		if st != spool.Finished && st != spool.Rejected {
			out[jid] = JobStatus{State: st}
			continue
		}
		j, err := sp.Read(st, jid)
		if err != nil {
			gone = append(gone, jid) // reaped since: the log has it
			continue
		}
		out[jid] = JobStatus{State: st, Ended: true, Outcome: OutcomeOf(NewRecord(j))}
	}
	return out, gone, last, nil
}

// readRecords is acct.ReadRecords, which tests count.
var readRecords = acct.ReadRecords

// lookupLog is LookupJobs' look in the accounting log and its rotated
// generations, in one read, for gone, which lookupSpool found in no
// directory after reading the counter last: each is added to out, ended
// with its outcome, or Missing (and Future when above last).
func lookupLog(ctx context.Context, sp *spool.Spool, gone []string, last int64, out map[string]JobStatus) error {
	want := map[string]bool{}
	for _, jid := range gone {
		want[jid] = true
	}
	err := readRecords(ctx, sp.Path(spool.DirDB), func(r acct.Record) bool {
		if want[r.JID] {
			out[r.JID] = JobStatus{Ended: true, Outcome: OutcomeOf(r)}
			delete(want, r.JID)
		}
		return len(want) > 0
	})
	if err != nil {
		return err
	}
	for jid := range want {
		n, _ := spool.JIDNumber(jid)
		out[jid] = JobStatus{Missing: true, Future: n > last}
	}
	return nil
}
