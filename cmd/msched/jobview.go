package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"msched/acct"
	"msched/notify"
	"msched/spool"
)

// jobView is the one JSON object of a job that msched prints: each job of
// `status --json`, `status JID --json`, and each line of `history --json`.
// Its keys are those of the status page's API job object (web.JobView, of
// /api/jobs and /api/jobs/JID: snake_case, times RFC 3339 in UTC,
// durations in seconds; TestJobView_KeysAreTheAPIs checks they agree),
// with what the command line adds for a waiting job: why it waits and when
// the published schedule expects it to start. A job that has left the
// spool comes from its accounting record, with "reaped": true and the state
// the record gives (exited or rejected).
//
// One fact, one home: the type belongs in a package both web and this
// command import (web may import neither cmd nor daemons); until it moves
// there, the test keeps the two the same object.
type jobView struct {
	JID              string        `json:"jid,omitempty"`
	File             string        `json:"file,omitempty"` // the ticket, in submitted/
	State            spool.State   `json:"state"`
	Name             string        `json:"name,omitempty"`
	User             string        `json:"user,omitempty"`
	Command          []string      `json:"command,omitempty"` // reaped: the executable alone
	Workdir          string        `json:"workdir,omitempty"`
	Notify           string        `json:"notify,omitempty"`
	Request          string        `json:"request,omitempty"` // hosts asked for: "2–8 hosts, arch sparc"
	Model            *modelView    `json:"model,omitempty"`
	WalltimeSeconds  *float64      `json:"walltime_seconds,omitempty"`
	SubmittedAt      time.Time     `json:"submitted_at,omitzero"`
	Hosts            []string      `json:"hosts,omitempty"`
	Policy           string        `json:"policy,omitempty"`
	PredictedSeconds *float64      `json:"predicted_seconds,omitempty"`
	ActualSeconds    *float64      `json:"actual_seconds,omitempty"`
	StartedAt        time.Time     `json:"started_at,omitzero"`
	EndedAt          time.Time     `json:"ended_at,omitzero"`
	ExitStatus       *int          `json:"exit_status,omitempty"`
	Signal           string        `json:"signal,omitempty"`
	Attempts         int           `json:"attempts,omitempty"`
	Reason           string        `json:"reason,omitempty"`
	CancelRequested  bool          `json:"cancel_requested,omitempty"`
	History          []spool.Event `json:"history,omitempty"`
	Stdout           string        `json:"stdout,omitempty"` // the job's own destination, if it named one
	Stderr           string        `json:"stderr,omitempty"`
	Invalid          string        `json:"invalid,omitempty"` // why the file could not be read
	Reaped           bool          `json:"reaped,omitempty"`  // left the spool; from the accounting log
	// A running job's clock, as of the command (setClock): time since it
	// started, predicted time left (0 once past its prediction), how far
	// past its prediction it is, and its walltime left.
	ElapsedSeconds      *float64 `json:"elapsed_seconds,omitempty"`
	RemainingSeconds    *float64 `json:"remaining_seconds,omitempty"`
	OverrunSeconds      *float64 `json:"overrun_seconds,omitempty"`
	WalltimeLeftSeconds *float64 `json:"walltime_left_seconds,omitempty"`
	// PendingReason says why a job that has not started waits (set in
	// submitted, queued, scheduling and runnable only).
	PendingReason string `json:"pending_reason,omitempty"`
	// ExpectedStart is when the schedule sched published last starts a
	// waiting job; zero when it does not plan the job.
	ExpectedStart time.Time `json:"expected_start,omitzero"`

	hosts string // the table's HOSTS: the hosts given, else the request ("2..4")
}

// modelView is a job's performance model (spool.Model has YAML names only).
type modelView struct {
	Name   string             `json:"name"`
	Params map[string]float64 `json:"params,omitempty"`
}

// setClock fills in a running job's elapsed time, predicted time left,
// overrun and walltime left as of now.
func (v *jobView) setClock(now time.Time) {
	if v.State != spool.Running || v.StartedAt.IsZero() || !v.EndedAt.IsZero() {
		return
	}
	e := max(now.Sub(v.StartedAt).Seconds(), 0)
	v.ElapsedSeconds = &e
	if p := v.PredictedSeconds; p != nil {
		v.RemainingSeconds = ptr(max(*p-e, 0))
		if e > *p {
			v.OverrunSeconds = ptr(e - *p)
		}
	}
	if w := v.WalltimeSeconds; w != nil {
		v.WalltimeLeftSeconds = ptr(max(*w-e, 0))
	}
}

// waiting reports whether a job in st has not started yet.
func waiting(st spool.State) bool {
	return st == spool.Submitted || st == spool.Queued || st == spool.Scheduling || st == spool.Runnable
}

// viewJob is the object of a job file read from state st.
func viewJob(st spool.State, j *spool.Job) jobView {
	v := jobView{JID: j.JID, State: st, Name: j.Name, User: j.User, Command: j.Command,
		Workdir: j.Workdir, Notify: j.Notify, SubmittedAt: utc(j.SubmittedAt), Reason: j.Reason,
		CancelRequested: j.CancelRequested, History: j.History, Stdout: j.Stdout, Stderr: j.Stderr}
	if j.Model != nil {
		v.Model = &modelView{Name: j.Model.Name, Params: j.Model.Params}
	}
	if st == spool.Submitted {
		v.File = j.File()
	}
	if len(j.Command) > 0 {
		v.Request = requestText(j)
	}
	if j.Walltime > 0 {
		v.WalltimeSeconds = ptr(time.Duration(j.Walltime).Seconds())
	}
	v.hosts = hostRange(j)
	if s := j.Schedule; s != nil {
		v.Hosts, v.Policy = s.Hosts, s.Policy
		v.hosts = strings.Join(s.Hosts, ",")
	}
	if p, ok := notify.Predicted(j); ok {
		v.PredictedSeconds = ptr(p.Seconds())
	}
	if a, ok := notify.Actual(j); ok {
		v.ActualSeconds = ptr(a.Seconds())
	}
	if r := j.Run; r != nil {
		v.StartedAt, v.EndedAt, v.ExitStatus, v.Signal, v.Attempts = utc(r.StartedAt), utc(r.EndedAt), r.ExitStatus, r.Signal, r.Attempts
	}
	return v
}

// viewRecord is the object of a job that has left the spool, from its
// accounting record.
func viewRecord(r acct.Record) jobView {
	v := jobView{JID: r.JID, State: spool.State(r.State), Name: r.Name, User: r.User,
		Hosts: r.Hosts, PredictedSeconds: r.PredictedSeconds, ActualSeconds: r.ActualSeconds,
		SubmittedAt: utc(r.SubmittedAt), StartedAt: utc(r.StartedAt), EndedAt: utc(r.EndedAt),
		ExitStatus: r.ExitStatus, Signal: r.Signal, Attempts: r.Attempts, Reason: r.Reason,
		CancelRequested: r.Cancelled, Reaped: true}
	if r.Executable != "" {
		v.Command = []string{r.Executable} // the record keeps command[0] only
	}
	if r.Model != "" {
		v.Model = &modelView{Name: r.Model}
	}
	v.hosts = strings.Join(r.Hosts, ",")
	return v
}

// viewInvalid is the object of a job file that cannot be read as one.
func viewInvalid(st spool.State, name string, err error) jobView {
	v := jobView{State: st}
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

// requestText is the hosts a job asks for, in the API's words: "1 host",
// "2–8 hosts, arch sparc", "4 or more hosts in components 2+2 (unordered)".
func requestText(j *spool.Job) string {
	lo, hi := j.HostRange()
	var s string
	switch {
	case lo == hi && lo == 1:
		s = "1 host"
	case lo == hi:
		s = fmt.Sprintf("%d hosts", lo)
	case hi == 0:
		s = fmt.Sprintf("%d or more hosts", lo)
	default:
		s = fmt.Sprintf("%d–%d hosts", lo, hi)
	}
	if len(j.Components) > 0 {
		s += fmt.Sprintf(" in components %s (%s)", spool.ComponentsText(j.Components), j.RequestType())
	}
	if h := j.Hosts; h != nil && h.Arch != "" {
		s += ", arch " + h.Arch
	}
	if h := j.Hosts; h != nil && h.Cluster != "" {
		s += ", cluster " + h.Cluster
	}
	return s
}

// hostRange is the table's short form of the hosts a job asks for: 1, 4,
// 2..8, 2.. (no upper bound).
func hostRange(j *spool.Job) string {
	switch min, max := j.HostRange(); {
	case min == max:
		return fmt.Sprint(min)
	case max == 0:
		return fmt.Sprintf("%d..", min)
	default:
		return fmt.Sprintf("%d..%d", min, max)
	}
}

func ptr[T any](v T) *T { return &v }

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

// readPublished reads the schedule sched last published (db/schedule.json);
// nil before its first decision.
func readPublished(sp *spool.Spool) (*spool.PublishedSchedule, error) {
	b, err := os.ReadFile(filepath.Join(sp.Path(spool.DirDB), spool.ScheduleFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var s spool.PublishedSchedule
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", spool.ScheduleFile, err)
	}
	return &s, nil
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
func (w waitInfo) explain(v *jobView, st spool.State, j *spool.Job) {
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
func (f jobFilter) match(v jobView, extra ...string) bool {
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
