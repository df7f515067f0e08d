package daemons

import (
	"context"
	"fmt"

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
	End        acct.End // the record's End
}

// OutcomeOf reads r's outcome.
func OutcomeOf(r acct.Record) Outcome {
	return Outcome{JID: r.JID, Exited: r.State == spool.OutcomeExited, ExitStatus: r.ExitStatus, Signal: r.Signal,
		Reason: r.Reason, Cancelled: r.Cancelled, End: r.End()}
}

// OK reports whether the job ran and exited by itself with status 0
// (acct.EndCompleted), what afterok: waits for.
func (o Outcome) OK() bool { return o.End == acct.EndCompleted }

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
	// Missing: no such job anywhere: a JID burned by a failed claim, a job
	// whose record retention has dropped, or a JID not given yet.
	Missing bool
}

// LookupJobs says where each of jids is and, for those that ended, how.
// It looks where a job passes, in its order, so that a job moving on
// while it looks is found: init's claims, then the state directories
// (StateOf; a job in finished/ or rejected/ is read), then, for the rest,
// the accounting log and its rotated generations (ReadRecords), which the
// reaper appends to before it removes a job. A JID found nowhere is
// Missing. jids must be canonical (spool.ParseJID).
func LookupJobs(ctx context.Context, sp *spool.Spool, jids []string) (map[string]JobStatus, error) {
	out, gone, err := lookupSpool(sp, new(claims), jids)
	if err != nil {
		return nil, err
	}
	if len(gone) > 0 {
		if err := lookupLog(ctx, sp, gone, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// claimedJIDs is spool.ClaimedJIDs, which tests count.
var claimedJIDs = (*spool.Spool).ClaimedJIDs

// claims are init's claims in tmp/ (spool.ClaimedJIDs, array members
// included) as a set, read the first time a lookup asks and then kept.
// They are read before the state directories are looked in, so a job that
// leaves its claim for queued/ meanwhile is found in one or the other.
// LookupJobs reads them once a call, sched once a cycle (holdCycle),
// however many jobs it looks up.
type claims struct {
	read bool
	set  map[string]bool
	err  error
}

// has reports whether jid is claimed, reading the claims if they have not
// been read (a failed read fails every later ask too).
func (c *claims) has(sp *spool.Spool, jid string) (bool, error) {
	if !c.read {
		c.read = true
		jids, err := claimedJIDs(sp)
		if err != nil {
			c.err = err
		} else {
			c.set = make(map[string]bool, len(jids))
			for _, j := range jids {
				c.set[j] = true
			}
		}
	}
	return c.set[jid], c.err
}

// lookupSpool is LookupJobs' look in the spool: init's claims (read
// through cl), then the state directories. It returns the status of each
// of jids found there, and the others (gone), for lookupLog.
func lookupSpool(sp *spool.Spool, cl *claims, jids []string) (out map[string]JobStatus, gone []string, err error) {
	out = make(map[string]JobStatus, len(jids))
	for _, jid := range jids {
		if _, done := out[jid]; done {
			continue
		}
		claimed, err := cl.has(sp, jid)
		if err != nil {
			return nil, nil, err
		}
		if claimed {
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
	return out, gone, nil
}

// readRecords is acct.ReadRecordsOf, which tests count.
var readRecords = acct.ReadRecordsOf

// lookupLog is LookupJobs' look in the accounting log and its rotated
// generations, in one read, for gone, which lookupSpool found in no
// directory: each is added to out, ended with its outcome, or Missing.
// Only the lines that mention one of gone are decoded (ReadRecordsOf).
func lookupLog(ctx context.Context, sp *spool.Spool, gone []string, out map[string]JobStatus) error {
	want := map[string]bool{}
	for _, jid := range gone {
		want[jid] = true
	}
	err := readRecords(ctx, sp.Path(spool.DirDB), gone, func(r acct.Record) bool {
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
		out[jid] = JobStatus{Missing: true}
	}
	return nil
}
