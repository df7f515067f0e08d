package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"msched/acct"
	"msched/evaluator"
	"msched/hoststat"
	"msched/learn"
	"msched/spool"
)

// schedStatsFile is a file sched publishes under db/ besides the schedule
// (spool.ScheduleFile). It mirrors daemons.SchedStatsFile, which web may
// not import; a test checks they agree. The accounting log is acct.JSONL.
const schedStatsFile = "evaluator.json"

// SchedStats is what sched publishes of its evaluator and GA
// (db/evaluator.json).
type SchedStats struct {
	GeneratedAt time.Time       `json:"generated_at"`
	StartedAt   time.Time       `json:"started_at"`
	Evaluator   evaluator.Stats `json:"evaluator"`
	Generations *int64          `json:"ga_generations,omitempty"` // nil: the policy is not a GA
}

// readSchedStats reads db/evaluator.json; nil if sched does not publish it.
func readSchedStats(sp *spool.Spool) *SchedStats {
	b, err := os.ReadFile(filepath.Join(sp.Path(spool.DirDB), schedStatsFile))
	if err != nil {
		return nil
	}
	var s SchedStats
	if json.Unmarshal(b, &s) != nil {
		return nil
	}
	return &s
}

// ModelAccuracy is the prediction error of one model over the jobs that
// used it and ran: Count jobs, mean signed error (predicted − actual) in
// seconds, mean absolute error and MAPE (mean |predicted − actual| / actual).
type ModelAccuracy struct {
	Model        string  `json:"model"`
	Count        int     `json:"count"`
	MeanErrorS   float64 `json:"mean_error_s"`
	MeanAbsErrS  float64 `json:"mean_abs_error_s"`
	MAPE         float64 `json:"mape"`       // a fraction: 0.12 is 12 %
	MAPECount    int     `json:"mape_count"` // jobs with a measurable actual time
	MeanActualS  float64 `json:"mean_actual_s"`
	MeanPredictS float64 `json:"mean_predicted_s"`
}

// modelKey is what a record's prediction is attributed to: its model when
// the log records one, else its executable (the profiler estimates jobs
// without a model, by executable).
func modelKey(r acct.Record) string {
	switch {
	case r.Model != "":
		return strings.ToValidUTF8(r.Model, "\uFFFD")
	case r.Executable != "":
		// A metrics label too: the exposition must be UTF-8 whatever
		// bytes a user's command[0] holds.
		return "exe:" + strings.ToValidUTF8(filepath.Base(r.Executable), "\uFFFD")
	}
	return "(unknown)"
}

// accuracy groups the records that have both a prediction and an actual run
// time, by model; the "all" row comes first. The mean absolute percentage
// error counts the jobs that ran at least learn.PercentFloor.
func accuracy(rs []acct.Record) []ModelAccuracy {
	type acc struct {
		n, nPct                         int
		sum, sumAbs, sumPct, sumA, sumP float64
	}
	by := map[string]*acc{}
	all := &acc{}
	for _, r := range rs {
		if r.PredictedSeconds == nil || r.ActualSeconds == nil {
			continue
		}
		p, a := *r.PredictedSeconds, *r.ActualSeconds
		if math.IsNaN(p) || math.IsInf(p, 0) || math.IsNaN(a) || a < 0 {
			continue
		}
		k := modelKey(r)
		if by[k] == nil {
			by[k] = &acc{}
		}
		for _, x := range []*acc{by[k], all} {
			x.n++
			x.sum += p - a
			x.sumAbs += math.Abs(p - a)
			x.sumA += a
			x.sumP += p
			if a >= learn.PercentFloor.Seconds() {
				// A percentage only where it means something: a 0.01 s job
				// predicted 1 s is not 9,900 % worse than one predicted 2 s
				// for 1 s (the mean absolute error in seconds covers it).
				x.nPct++
				x.sumPct += math.Abs(p-a) / a
			}
		}
	}
	row := func(name string, x *acc) ModelAccuracy {
		m := ModelAccuracy{Model: name, Count: x.n, MAPECount: x.nPct}
		if x.n > 0 {
			n := float64(x.n)
			m.MeanErrorS, m.MeanAbsErrS, m.MeanActualS, m.MeanPredictS = x.sum/n, x.sumAbs/n, x.sumA/n, x.sumP/n
		}
		if x.nPct > 0 {
			m.MAPE = x.sumPct / float64(x.nPct)
		}
		return m
	}
	var out []ModelAccuracy
	for k, x := range by {
		out = append(out, row(k, x))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	return append([]ModelAccuracy{row("all", all)}, out...)
}

// JobView is a job as the pages and the API show it. Every JSON name is
// snake_case, as in every other object of the API; times are RFC 3339,
// durations seconds.
type JobView struct {
	JID              string        `json:"jid,omitempty"`
	File             string        `json:"file,omitempty"` // the file name in submitted/
	State            spool.State   `json:"state"`
	Name             string        `json:"name,omitempty"`
	User             string        `json:"user,omitempty"`
	Command          []string      `json:"command,omitempty"`
	Workdir          string        `json:"workdir,omitempty"`
	Notify           string        `json:"notify,omitempty"`
	Request          string        `json:"request,omitempty"` // hosts requested, e.g. "2–8 hosts, arch sparc"
	Model            *ModelView    `json:"model,omitempty"`
	WalltimeSeconds  *float64      `json:"walltime_seconds,omitempty"`
	SubmittedAt      time.Time     `json:"submitted_at,omitzero"`
	Hosts            []string      `json:"hosts,omitempty"`
	Policy           string        `json:"policy,omitempty"`
	EstimateSource   string        `json:"estimate_source,omitempty"` // where predicted_seconds came from
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
	// A running job's clock, as of the request (setClock): time since it
	// started, predicted time left (0 once past its prediction), how far
	// past its prediction it is, and its walltime left.
	ElapsedSeconds      *float64 `json:"elapsed_seconds,omitempty"`
	RemainingSeconds    *float64 `json:"remaining_seconds,omitempty"`
	OverrunSeconds      *float64 `json:"overrun_seconds,omitempty"`
	WalltimeLeftSeconds *float64 `json:"walltime_left_seconds,omitempty"`
	// PendingReason says why a job that has not started waits, and
	// ExpectedStart when the schedule sched published last starts it (zero:
	// it does not plan the job); the command line fills them in.
	PendingReason string       `json:"pending_reason,omitempty"`
	ExpectedStart time.Time    `json:"expected_start,omitzero"`
	job           *spool.Job   // in the spool: its file
	rec           *acct.Record // reaped: its accounting record
	head          *reportHead  // reaped: its report's header, if it could be read
}

// ModelView is a job's performance model in the API: spool.Model has
// YAML names only.
type ModelView struct {
	Name   string             `json:"name"`
	Params map[string]float64 `json:"params,omitempty"`
}

// ViewJob is the object of job file j read from state st: the one job
// object of the API and the command line. Times are UTC.
func ViewJob(st spool.State, j *spool.Job) JobView {
	v := JobView{JID: j.JID, State: st, Name: j.Name, User: j.User, Command: j.Command, Workdir: j.Workdir,
		Notify: j.Notify, SubmittedAt: j.SubmittedAt.UTC(), Reason: j.Reason,
		CancelRequested: j.CancelRequested, History: j.History, Stdout: j.Stdout, Stderr: j.Stderr, job: j}
	if st == spool.Submitted {
		v.File = j.File()
	}
	if j.Model != nil {
		v.Model = &ModelView{Name: j.Model.Name, Params: j.Model.Params}
	}
	if len(j.Command) > 0 {
		v.Request = requestText(j)
	}
	if j.Walltime > 0 {
		v.WalltimeSeconds = ptr(time.Duration(j.Walltime).Seconds())
	}
	if s := j.Schedule; s != nil {
		v.Hosts, v.Policy, v.EstimateSource = s.Hosts, s.Policy, s.EstimateSource
	}
	if p, ok := j.Predicted(); ok {
		v.PredictedSeconds = ptr(p.Seconds())
	}
	if a, ok := j.Actual(); ok {
		v.ActualSeconds = ptr(a.Seconds())
	}
	if r := j.Run; r != nil {
		v.StartedAt, v.EndedAt, v.ExitStatus, v.Signal, v.Attempts = r.StartedAt.UTC(), r.EndedAt.UTC(), r.ExitStatus, r.Signal, r.Attempts
	}
	return v
}

// SetClock fills in a running job's elapsed time, predicted time left,
// overrun and walltime left as of now.
func (v *JobView) SetClock(now time.Time) {
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

// ViewRecord is the object of a job that has left the spool, from its
// accounting record alone (its command is the executable).
func ViewRecord(r *acct.Record) JobView { return viewRecord(r, nil) }

// viewRecord is a reaped job from its accounting record; head, when its
// report could be read, gives its command line and workdir (else the
// command is the executable alone).
func viewRecord(r *acct.Record, head *reportHead) JobView {
	v := JobView{JID: r.JID, State: spool.State(r.State), Name: r.Name, User: r.User, Hosts: r.Hosts,
		PredictedSeconds: r.PredictedSeconds, ActualSeconds: r.ActualSeconds, StartedAt: r.StartedAt.UTC(),
		EndedAt: r.EndedAt.UTC(), ExitStatus: r.ExitStatus, Signal: r.Signal, Reason: r.Reason, Attempts: r.Attempts,
		CancelRequested: r.Cancelled, SubmittedAt: r.SubmittedAt.UTC(), Reaped: true, rec: r, head: head}
	if r.Model != "" {
		v.Model = &ModelView{Name: r.Model}
	}
	switch {
	case head != nil && len(head.Command) > 0:
		v.Command, v.Workdir, v.Stdout = head.Command, head.Workdir, head.Stdout
	case r.Executable != "":
		v.Command = []string{r.Executable}
	}
	return v
}

func requestText(j *spool.Job) string {
	h := j.Hosts
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
	if h != nil && h.Arch != "" {
		s += ", arch " + h.Arch
	}
	if h != nil && h.Cluster != "" {
		s += ", cluster " + h.Cluster
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// StateJobs is one state's jobs: all of them counted, the first Limit read.
type StateJobs struct {
	State spool.State `json:"state"`
	Count int         `json:"count"`
	Jobs  []JobView   `json:"jobs"`
	More  int         `json:"more,omitempty"` // listed but not read (over the limit)
}

// readState lists a state and reads up to limit of its jobs (all if limit
// < 0). Running and waiting states show the oldest first; the states jobs
// leave by (finished, rejected) the newest first. A file that moved
// on between List and Read is skipped; one that cannot be parsed is shown
// with why.
func readState(sp *spool.Spool, st spool.State, limit int) (StateJobs, error) {
	sj, _, err := readStateEntries(sp, st, limit)
	return sj, err
}

// readStateEntries is readState that also returns the state's listing.
func readStateEntries(sp *spool.Spool, st spool.State, limit int) (StateJobs, []spool.Entry, error) {
	es, err := sp.List(st)
	if err != nil {
		return StateJobs{State: st}, nil, err
	}
	if st == spool.Finished || st == spool.Rejected {
		for i, j := 0, len(es)-1; i < j; i, j = i+1, j-1 {
			es[i], es[j] = es[j], es[i]
		}
	}
	sj := StateJobs{State: st, Count: len(es)}
	for i, e := range es {
		if limit >= 0 && i >= limit {
			sj.More = len(es) - i
			break
		}
		j, err := sp.Read(st, e.Name)
		var pe *spool.ParseError
		switch {
		case errors.Is(err, spool.ErrNotFound):
			continue
		case errors.As(err, &pe):
			v := JobView{State: st, Invalid: pe.Detail()}
			if spool.ValidJID(e.Name) {
				v.JID = e.Name
			} else {
				v.File = e.Name
			}
			sj.Jobs = append(sj.Jobs, v)
			continue
		case err != nil:
			return sj, es, err
		}
		sj.Jobs = append(sj.Jobs, ViewJob(st, j))
	}
	return sj, es, nil
}

// spoolView is what a request read of the spool's states: each state's
// count and first jobs, and where each listed file is.
type spoolView struct {
	States  []StateJobs
	Total   int
	Where   map[string]spool.State
	Entries map[spool.State][]spool.Entry
}

// readSpool lists every state (or those given) and reads the first limit jobs of each, with
// running jobs' clocks set as of now. Errors are returned, each for the
// page to show; what was read is kept.
func readSpool(sp *spool.Spool, limit int, now time.Time, states ...spool.State) (spoolView, []error) {
	v := spoolView{Where: map[string]spool.State{}, Entries: map[spool.State][]spool.Entry{}}
	var errs []error
	if len(states) == 0 {
		states = spool.States
	}
	for _, st := range states {
		sj, es, err := readStateEntries(sp, st, limit)
		if err != nil {
			errs = append(errs, err)
		}
		v.Entries[st] = es
		for _, e := range es {
			v.Where[e.Name] = st
		}
		for i := range sj.Jobs {
			sj.Jobs[i].SetClock(now)
		}
		v.States = append(v.States, sj)
		v.Total += sj.Count
	}
	return v, errs
}

// read is every job view read, for factsOf.
func (v spoolView) read() []JobView {
	var out []JobView
	for _, sj := range v.States {
		out = append(out, sj.Jobs...)
	}
	return out
}

// scheduleFacts reads what the hosts page, /api/hosts and /schedule.svg
// need besides the schedule (factsOf), listing only the states a job in
// the schedule can be in.
func (h *handler) scheduleFacts(sched *spool.PublishedSchedule) map[string]jobFacts {
	if sched == nil {
		return nil
	}
	where := map[string]spool.State{}
	for _, st := range []spool.State{spool.Queued, spool.Scheduling, spool.Runnable, spool.Running} {
		names, err := h.cfg.Spool.Names(st)
		if err != nil {
			h.log.Warn("web: list", "state", st, "err", err)
		}
		for _, n := range names {
			where[n] = st
		}
	}
	return factsOf(h.cfg.Spool, sched, nil, where, h.cfg.Now())
}

// HostView is one host with its latest sample, whether it is up, and what
// runs on it.
type HostView struct {
	Name    string `json:"name"`
	Machine string `json:"machine"` // the machine it is a CPU slot of, or its own name (machines.go)
	Arch    string `json:"arch,omitempty"`
	Cluster string `json:"cluster,omitempty"`
	Address string `json:"address,omitempty"`
	// Kind is how jobs reach the host (hoststat.KindLocal, KindSSH or
	// KindSlurm: a node of a Slurm cluster); "" when the hosts file could
	// not be read and the host is known from the schedule or samples only.
	Kind string `json:"kind,omitempty"`
	// State is "up", or "down" while db/health/ holds a record of the
	// host (Down: why, since when).
	State   string             `json:"state"`
	Down    *hoststat.DownInfo `json:"down,omitempty"`
	Stats   *hoststat.Stats    `json:"stats,omitempty"`   // nil: no sample yet; the machine's, on a CPU slot
	Running []string           `json:"running,omitempty"` // JIDs running on it (schedule)
	Planned int                `json:"planned"`           // planned jobs on it (schedule)
	// FreeAt is when its running work is predicted to end; zero when a
	// job on it has run past its prediction (Overrun names them): then
	// nobody knows.
	FreeAt  time.Time `json:"free_at,omitzero"`
	Overrun []string  `json:"overrun,omitempty"`
}

// hosts merges the hosts file, the schedule's hosts, the stats store and
// the record of down hosts (hoststat.Down). The hosts file is the
// configured truth; the schedule's hosts stand in when it cannot be read (a
// CGI program with no config). facts (factsOf; nil: the schedule alone)
// give running jobs' predicted ends.
func (h *handler) hosts(sched *spool.PublishedSchedule, facts map[string]jobFacts) ([]HostView, error) {
	var hv []HostView
	index := map[string]int{}
	add := func(v HostView) {
		if _, ok := index[v.Name]; ok {
			return
		}
		v.Machine, _ = machineOf(v.Name)
		index[v.Name] = len(hv)
		hv = append(hv, v)
	}
	if h.cfg.HostsFile != "" {
		hs, err := hoststat.LoadHosts(h.cfg.HostsFile)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, x := range hs {
			v := HostView{Name: x.Name, Arch: x.Arch, Cluster: x.Cluster, Address: x.Address}
			if a, err := x.Addr(); err == nil {
				v.Kind = a.Kind
			}
			add(v)
		}
	}
	if sched != nil {
		for _, x := range sched.Hosts {
			add(HostView{Name: x.Name, Arch: x.Arch, Cluster: x.Cluster})
		}
		now := h.cfg.Now()
		for _, j := range sched.Jobs {
			f := facts[j.JID]
			for _, n := range j.Hosts {
				i, ok := index[n]
				if !ok {
					continue
				}
				if j.State != "running" {
					hv[i].Planned++
					continue
				}
				if f.Gone {
					continue
				}
				hv[i].Running = append(hv[i].Running, j.JID)
				end, overrun := runningEnd(j, f, sched.GeneratedAt, now)
				if overrun {
					hv[i].Overrun = append(hv[i].Overrun, j.JID)
				} else if end.After(hv[i].FreeAt) {
					hv[i].FreeAt = end
				}
			}
		}
		for i := range hv {
			if len(hv[i].Overrun) > 0 {
				hv[i].FreeAt = time.Time{}
			}
		}
	}
	stats, serr := hoststat.ReadLatest(h.statsDir())
	for n, s := range stats {
		i, ok := index[n]
		if !ok {
			add(HostView{Name: n})
			i = index[n]
		}
		s := s
		hv[i].Stats = &s
	}
	down, derr := hoststat.Down(h.cfg.Spool.Path(spool.DirDB))
	for i := range hv {
		hv[i].State = "up"
		if d, ok := down[hv[i].Name]; ok {
			hv[i].State, hv[i].Down = "down", &d
		}
	}
	return hv, errors.Join(serr, derr)
}
