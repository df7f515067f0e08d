package main

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"msched/spool"
	"msched/web"
)

// The command line prints a job as the status page's API does: one object,
// web.JobView (web.ViewJob for a job file, web.ViewRecord for a job that
// has left the spool), with what only the command line fills in: why a
// waiting job waits and when the published schedule starts it (waitInfo).

// waiting reports whether a job in st has not started yet: st is one of
// pendingStates.
func waiting(st spool.State) bool {
	return slices.Contains(pendingStates, string(st))
}

// viewInvalid is the object of a job file that cannot be read as one.
func viewInvalid(st spool.State, name string, err error) web.JobView {
	v := web.JobView{State: st}
	var pe *spool.ParseError
	if errors.As(err, &pe) {
		v.Invalid = pe.Detail()
	} else {
		v.Invalid = err.Error()
	}
	if spool.ValidJID(name) {
		v.JID = name
	} else {
		v.File = name
	}
	return v
}

// hostsCell is the table's HOSTS of v: the hosts given, else the hosts
// asked for.
func hostsCell(v web.JobView) string {
	if len(v.Hosts) > 0 {
		return strings.Join(v.Hosts, ",")
	}
	return v.Request
}

func ptr[T any](v T) *T { return &v }

// cell is s for one cell of a table the command prints: a value its
// submitter wrote (a name, a file name) that holds a character that is not
// printable (a control character, an escape sequence's ESC, a tab, a line
// break, a bidirectional override) or a byte that is not UTF-8 is shown
// Go-quoted, so that it reaches
// the reader's terminal as text and cannot forge rows or drive the
// terminal.
func cell(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s) // a stray byte such as 0x9b, a C1 CSI
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// visibleText is cell for a block of lines a user may have written (a
// reaped job's report, which its owner can edit): line breaks and tabs are
// kept, and every other rune that is not printable (an escape sequence's
// ESC, a carriage return, a bidirectional override), and every byte that
// is not UTF-8, is shown as its Go escape (\x1b, \r, \u202e, \xff), so
// that the text reaches the reader's terminal as text.
func visibleText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\n' || r == '\t' || strconv.IsPrint(r) && (r != utf8.RuneError || size > 1):
			b.WriteString(s[i : i+size])
		case r == utf8.RuneError:
			fmt.Fprintf(&b, `\x%02x`, s[i]) // not UTF-8
		default:
			q := strconv.QuoteRune(r) // '\x1b'
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// utc is t in UTC, the zero time kept zero. Every time msched prints is in
// UTC (clock): the spool, the reports, the accounting log and the status
// page are, and daemons on several hosts agree on it.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// clock is how msched writes a time for people: UTC, to the second, and
// saying so ("2006-01-02 15:04:05 UTC"), as the status page and reports
// do; "" for the zero time.
func clock(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05") + " UTC"
}

// waitInfo is what explains the waits of jobs: the published schedule and
// the daemons' health.
type waitInfo struct {
	plan   *spool.PublishedSchedule
	placed map[string]spool.PublishedJob // the plan's jobs by JID
	health map[string]string             // daemon → health state
}

func newWaitInfo(plan *spool.PublishedSchedule, health []spool.Health) waitInfo {
	w := waitInfo{plan: plan, placed: map[string]spool.PublishedJob{}, health: map[string]string{}}
	if plan != nil {
		for _, p := range plan.Jobs {
			w.placed[p.JID] = p
		}
	}
	for _, h := range health {
		w.health[h.Daemon] = h.State
	}
	return w
}

// down is why daemon d does not move jobs on, or "" when it is up (or its
// health is not known).
func (w waitInfo) down(d string) string {
	switch w.health[d] {
	case spool.HealthNever:
		return d + " has never run on this spool"
	case spool.HealthStale:
		return d + " is not answering"
	case spool.HealthDown, spool.HealthStopped:
		return d + " is " + w.health[d]
	}
	return "" // up, or not known
}

// explain sets v's pending reason and expected start, for a job waiting in
// state st (j: its job file).
func (w waitInfo) explain(v *web.JobView, st spool.State, j *spool.Job) {
	if !waiting(st) {
		return
	}
	p, planned := w.placed[j.JID]
	if planned {
		v.ExpectedStart = utc(p.Start)
	}
	reason := ""
	switch {
	case j.CancelRequested:
		reason = "cancel requested"
	case st == spool.Submitted:
		reason = "waiting for init to take it"
		if d := w.down("init"); d != "" {
			reason = d + ": submissions are not taken"
		}
	case st == spool.Runnable:
		reason = "placed on " + strings.Join(v.Hosts, ",") + "; starting"
		if d := w.down("run"); d != "" {
			reason = "placed, but " + d + ": placed jobs do not start"
		}
	case w.down("sched") != "":
		reason = w.down("sched") + ": nothing is scheduled"
	case w.plan.HeldReason(j) != "":
		reason = w.plan.HeldReason(j) // a dependency, an array's limit
	case planned && p.State == "planned":
		reason = "waiting for hosts " + strings.Join(p.Hosts, ",")
	case planned:
		reason = "being placed on " + strings.Join(p.Hosts, ",")
	case w.plan == nil:
		reason = "not planned yet: sched has published no schedule"
	case len(j.History) > 0 && j.History[len(j.History)-1].At.After(w.plan.GeneratedAt):
		reason = "not planned yet: queued after the last schedule"
	default:
		reason = fmt.Sprintf("not in %s's plan: it plans only part of the queue, or the hosts it needs are down", w.plan.Policy)
	}
	if j.Run != nil && j.Run.Attempts > 0 && st != spool.Runnable && reason != "cancel requested" {
		reason += fmt.Sprintf(" (after %d failed start", j.Run.Attempts)
		if j.Run.Attempts > 1 {
			reason += "s"
		}
		reason += ")"
	}
	v.PendingReason = reason
}

// jobFilter selects jobs by user, state and name (each a list: a job
// matches one of its entries; users and names are shell patterns) and,
// for the accounting log, by time.
type jobFilter struct {
	users, states, names []string
	since, until         time.Time // history: when the job left (ended, else submitted)
}

// match reports whether v passes the filter; extra are the names its
// states may also be given by (history's completed, failed, cancelled).
func (f jobFilter) match(v web.JobView, extra ...string) bool {
	if len(f.users) > 0 && !globAny(f.users, v.User) {
		return false
	}
	if len(f.names) > 0 && !globAny(f.names, v.Name) {
		return false
	}
	if len(f.states) > 0 && !slices.Contains(f.states, string(v.State)) &&
		!slices.ContainsFunc(extra, func(s string) bool { return slices.Contains(f.states, s) }) {
		return false
	}
	return true
}

func globAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

// splitList splits comma-separated flag values ("alice,bob"), as squeue's
// lists are given.
func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// checkStates refuses a state that is not one of known (a usage error),
// naming them all.
func checkStates(flag string, states, known []string) error {
	for _, s := range states {
		if !slices.Contains(known, s) {
			return codef(exitUsage, "%s: %q is not one of %s", flag, s, strings.Join(known, ", "))
		}
	}
	return nil
}

// checkPatterns refuses a malformed shell pattern (a usage error).
func checkPatterns(flag string, ps []string) error {
	for _, p := range ps {
		if _, err := path.Match(p, ""); err != nil {
			return codef(exitUsage, "%s: %q: %v", flag, p, err)
		}
	}
	return nil
}
