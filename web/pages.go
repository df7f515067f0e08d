package web

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"msched/acct"
	"msched/hoststat"
	"msched/spool"
)

// Overview is the data of the overview page.
type Overview struct {
	States   []StateJobs
	Total    int
	Hosts    []HostView
	Machines []MachineView
	Gantt    Gantt
	Sched    *spool.PublishedSchedule
	Stats    *SchedStats
	// Daemons is what the daemons' heartbeats say; Trouble names those
	// that are not up, for the banner at the top.
	Daemons []DaemonView
	Trouble []DaemonView
	// Recent are the latest jobs that ended (recent.go).
	Recent RecentList
	// Usage is the day's chart: on the page, not in its 5-second
	// refresh (the page fetches /usage once a minute).
	Usage  *Usage
	Errors []string // what could not be read (the page shows the rest)
}

// recentOverview is how many of the latest ended jobs the overview lists.
const recentOverview = 10

// DaemonView is one daemon's health, as the page and /api/daemons show it.
type DaemonView struct {
	Daemon string `json:"daemon"`
	// State is up, stale (no heartbeat for three beats: hung, or its host
	// down), down (its process gone), stopped (cleanly) or never (no
	// heartbeat on this spool).
	State     string    `json:"state"`
	PID       int       `json:"pid,omitempty"`
	Host      string    `json:"host,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	LastBeat  time.Time `json:"last_beat,omitzero"`
}

// daemons reads the daemons' heartbeats.
func (h *handler) daemons() ([]DaemonView, error) {
	hs, err := h.cfg.Spool.Health(h.cfg.Now())
	if err != nil {
		return nil, err
	}
	out := make([]DaemonView, len(hs))
	for i, d := range hs {
		out[i] = DaemonView{Daemon: d.Daemon, State: d.State}
		if b := d.Beat; b != nil {
			out[i].PID, out[i].Host = b.PID, b.Host
			out[i].StartedAt, out[i].LastBeat = b.StartedAt, b.At
		}
	}
	return out, nil
}

// overviewData reads everything the overview shows (the usage chart only
// when usage is a span: not for the 5-second refresh). A part that cannot
// be read is reported on the page, not turned into a 500: a status page is
// most needed when something is wrong.
func (h *handler) overviewData(limit int, usage string) Overview {
	var o Overview
	now := h.cfg.Now()
	sv, errs := readSpool(h.cfg.Spool, limit, now)
	for _, err := range errs {
		o.Errors = append(o.Errors, h.shown(err))
	}
	o.States, o.Total = sv.States, sv.Total
	sched, err := h.cfg.Spool.ReadSchedule()
	if err != nil {
		o.Errors = append(o.Errors, h.shown(err))
	}
	o.Sched = sched
	facts := factsOf(h.cfg.Spool, sched, sv.read(), sv.Where, now)
	if o.Hosts, err = h.hosts(sched, facts); err != nil {
		o.Errors = append(o.Errors, h.shown(err))
	}
	o.Machines = groupMachines(o.Hosts)
	stats := map[string]*hoststat.Stats{}
	for _, hv := range o.Hosts {
		stats[hv.Name] = hv.Stats
	}
	o.Gantt = layoutGanttWith(ganttInput{Sched: sched, Now: now, Facts: facts, Stats: stats})
	o.Stats = readSchedStats(h.cfg.Spool)
	if o.Daemons, err = h.daemons(); err != nil {
		o.Errors = append(o.Errors, h.shown(err))
	}
	for _, d := range o.Daemons {
		if d.State != spool.HealthUp {
			o.Trouble = append(o.Trouble, d)
		}
	}
	o.Recent = h.recent(RecentFilter{Page: 1}, recentOverview, &sv)
	o.Errors = append(o.Errors, o.Recent.Errors...)
	if usage != "" {
		u := h.usageData(usage, now, sv, sched, len(o.Hosts))
		o.Usage = &u
	}
	return o
}

func (h *handler) overview(w http.ResponseWriter, r *http.Request) {
	usage := usageSpan(r)
	if r.URL.Query().Get("fragment") == "1" {
		usage = ""
	}
	h.render(w, r, "overview", "msched", h.overviewData(h.cfg.OverviewLimit, usage))
}

func (h *handler) scheduleSVG(w http.ResponseWriter, r *http.Request) {
	sched, err := h.cfg.Spool.ReadSchedule()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "no-store")
	g := layoutGanttWith(ganttInput{Sched: sched, Now: h.cfg.Now(), Facts: h.scheduleFacts(sched)})
	g.Standalone = true
	if err := pages()["overview"].ExecuteTemplate(w, "gantt", ganttData{Base: h.cfg.Base, Gantt: g}); err != nil {
		h.log.Error("web: schedule.svg", "err", err)
	}
}

// JobList is one state's full list (/jobs?state=) or every state's.
type JobList struct {
	States []StateJobs
	Only   spool.State
}

// stateQuery reads the ?state= of /jobs and /api/jobs: every state when
// there is none (only ""), else that one. An unknown state is answered 400
// here, and ok is false.
func stateQuery(w http.ResponseWriter, r *http.Request) (states []spool.State, only spool.State, ok bool) {
	q := r.URL.Query().Get("state")
	if q == "" {
		return spool.States, "", true
	}
	if !spool.State(q).Valid() {
		http.Error(w, fmt.Sprintf("unknown state %q", q), http.StatusBadRequest)
		return nil, "", false
	}
	return []spool.State{spool.State(q)}, spool.State(q), true
}

func (h *handler) jobList(w http.ResponseWriter, r *http.Request) {
	var l JobList
	states, only, ok := stateQuery(w, r)
	if !ok {
		return
	}
	l.Only = only
	for _, st := range states {
		sj, err := readState(h.cfg.Spool, st, -1)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		for i := range sj.Jobs {
			sj.Jobs[i].SetClock(h.cfg.Now())
		}
		l.States = append(l.States, sj)
	}
	title := "Jobs"
	if l.Only != "" {
		title = "Jobs: " + string(l.Only)
	}
	h.render(w, r, "jobs", title, l)
}

// JobPage is the data of a job's page.
type JobPage struct {
	Job       JobView
	Outputs   []string // captured streams that exist: stdout, stderr
	Report    bool     // reports/<jid>.txt exists
	CanCancel bool
	CanResub  bool
	// ResubFrom says, for a reaped job, what Resubmit takes from its
	// record and report and what it cannot; ResubNot why it cannot at all.
	ResubFrom string
	ResubNot  string
	Message   string
}

func (h *handler) jobPage(w http.ResponseWriter, r *http.Request) {
	v, ok := h.lookupOr404(w, r, "no job %q in the spool or the accounting log")
	if !ok {
		return
	}
	p := JobPage{Job: v, Message: messages[r.URL.Query().Get("msg")]}
	stdout, stderr := spool.CapturedPaths(h.cfg.Spool.Path(spool.DirOutput), v.JID)
	for _, f := range []string{stdout, stderr} {
		if fi, err := os.Lstat(f); err == nil && fi.Mode().IsRegular() {
			p.Outputs = append(p.Outputs, filepath.Base(f)) // "stdout", "stderr"
		}
	}
	if _, err := os.Stat(filepath.Join(h.cfg.Spool.Path(spool.DirReports), v.JID+".txt")); err == nil {
		p.Report = true
	}
	switch v.State {
	case spool.Queued, spool.Scheduling, spool.Runnable, spool.Running:
		p.CanCancel = !v.CancelRequested
	}
	p.CanResub = v.job != nil && len(v.job.Command) > 0
	if v.Reaped && v.rec != nil {
		var head reportHead
		if v.head != nil {
			head = *v.head
		}
		req, err := reapedRequest(v.rec, head, v.head != nil)
		if err != nil {
			p.ResubNot = err.Error()
		} else {
			p.CanResub = true
			p.ResubFrom = reapedNote(req)
		}
	}
	v.SetClock(h.cfg.Now())
	p.Job = v
	h.render(w, r, "job", v.JID+" "+v.Name, p)
}

// messages are the notes a POST redirects back with (?msg=): a fixed set,
// so the query string cannot put text on the page.
var messages = map[string]string{
	"cancel":          "Cancel requested: the daemon that owns the job's state will act on it.",
	"resubmit":        "Resubmitted: a new job file is in submitted/.",
	"resubmit-reaped": "Resubmitted from its accounting record and report: a new job file is in submitted/, without what they do not keep (walltime, model, environment, notify).",
}

// reapedNote says what Resubmit of a reaped job submits.
func reapedNote(req spool.Job) string {
	n := "1 host"
	if req.Hosts != nil {
		n = fmt.Sprintf("%d hosts", req.Hosts.Count)
	}
	wd := "the owner's home directory (no workdir)"
	if req.Workdir != "" {
		wd = req.Workdir
	}
	return fmt.Sprintf("Resubmit submits, from the job's report and accounting record, its name, command line and %s, in %s. "+
		"Its walltime, model and parameters, environment, notify and mail settings are not kept: the new job runs without them (the profiler estimates it).", n, wd)
}

// output serves a job's captured stdout or stderr, read-only, as plain
// text. Only the two stream names are accepted and the JID must be a JID,
// so the path is always output/<JID>/stdout|stderr: no request can name
// another file. The file is opened without following a symbolic link (a
// job could replace its own output file with one) and must be a regular
// file.
func (h *handler) output(w http.ResponseWriter, r *http.Request) {
	jid := r.PathValue("jid")
	if !spool.ValidJID(jid) {
		http.NotFound(w, r)
		return
	}
	if !h.operator(w, r, jid) {
		return
	}
	stdout, stderr := spool.CapturedPaths(h.cfg.Spool.Path(spool.DirOutput), jid)
	for _, f := range []string{stdout, stderr} {
		if filepath.Base(f) == r.PathValue("stream") { // the page's link names
			h.serveFile(w, r, filepath.Dir(f), filepath.Base(f))
			return
		}
	}
	http.NotFound(w, r)
}

// report serves reports/<jid>.txt, the report the reaper wrote.
func (h *handler) report(w http.ResponseWriter, r *http.Request) {
	jid := r.PathValue("jid")
	if !spool.ValidJID(jid) {
		http.NotFound(w, r)
		return
	}
	if !h.operator(w, r, jid) {
		return
	}
	h.serveFile(w, r, h.cfg.Spool.Path(spool.DirReports), jid+".txt")
}

// operator lets through a request from a session logged in with web.token,
// and answers any other 403. A job's output and report are its owner's:
// the page may run as root and answer every local user (and the report
// files are the owner's alone, mode 0600), so it shows them to the
// operator only; the owner reads them with `msched status JID` or in the
// files.
func (h *handler) operator(w http.ResponseWriter, r *http.Request, jid string) bool {
	if _, ok := h.session(r); ok {
		return true
	}
	msg := fmt.Sprintf("forbidden: %s's output and report are shown here only to the operator (log in with web.token); "+
		"the job's owner reads them with `msched status %s` or in the spool's output/ and reports/ files", jid, jid)
	if h.key == nil {
		msg = fmt.Sprintf("forbidden: %s's output and report are shown only to the operator, and this page has no web.token to log in with; "+
			"the job's owner reads them with `msched status %s` or in the spool's output/ and reports/ files", jid, jid)
	}
	http.Error(w, msg, http.StatusForbidden)
	return false
}

// serveFile serves dir/name as text/plain. dir itself must not be a
// symbolic link either.
func (h *handler) serveFile(w http.ResponseWriter, r *http.Request, dir, name string) {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		http.Error(w, "no such output", http.StatusNotFound)
		return
	}
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
		http.Error(w, "no such output", http.StatusNotFound)
		return
	} else if err != nil {
		h.fail(w, r, err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		http.Error(w, "no such output", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", "inline")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	w.Header().Set("Cache-Control", "no-store")
	http.ServeContent(w, r, "", fi.ModTime(), io.NewSectionReader(f, 0, fi.Size()))
}

// HostsPage is the data of the hosts page.
type HostsPage struct {
	Hosts    []HostView
	Machines []MachineView
	Error    string
}

func (h *handler) hostsPage(w http.ResponseWriter, r *http.Request) {
	sched, err := h.cfg.Spool.ReadSchedule()
	var p HostsPage
	if err != nil {
		p.Error = h.shown(err)
	}
	hv, err := h.hosts(sched, h.scheduleFacts(sched))
	if err != nil {
		p.Error = h.shown(err)
	}
	p.Hosts, p.Machines = hv, groupMachines(hv)
	h.render(w, r, "hosts", "Hosts", p)
}

// ModelsPage is the data of the model accuracy page.
type ModelsPage struct {
	Rows    []ModelAccuracy
	Records int
	Recent  []acct.Record // the last jobs with a prediction and a run time
}

// recentAccuracy is how many of the latest finished jobs the accuracy page
// lists one by one.
const recentAccuracy = 20

func (h *handler) modelsPage(w http.ResponseWriter, r *http.Request) {
	rs, err := readAccounting(h.cfg.Spool)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := ModelsPage{Rows: accuracy(rs), Records: len(rs)}
	for i := len(rs) - 1; i >= 0 && len(p.Recent) < recentAccuracy; i-- {
		if rs[i].PredictedSeconds != nil && rs[i].ActualSeconds != nil {
			p.Recent = append(p.Recent, rs[i])
		}
	}
	h.render(w, r, "models", "Model accuracy", p)
}
