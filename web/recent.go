package web

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"msched/acct"
	"msched/spool"
)

// Recent jobs: the jobs that have ended, newest first. The reaper takes a
// job out of finished/ or rejected/ moments after it lands there, so these
// are the accounting log's records (read from the log's end: scanBack),
// after the few jobs still waiting for the reaper in those two directories.

// RecentJob is one ended job in the recent jobs list and /api/recent.
type RecentJob struct {
	JID  string `json:"jid"`
	Name string `json:"name,omitempty"`
	User string `json:"user,omitempty"`
	// State is where the job ended: exited (it ran) or rejected.
	State string `json:"state"`
	// Class sorts outcomes: ok (exit 0), failed (another status, a signal
	// or a reason), cancelled, rejected.
	Class   string `json:"class"`
	Outcome string `json:"outcome,omitempty"` // "exit 0", "signal KILL", the reason
	// Command is the command line from the job's report, or the executable
	// alone when the report is gone or not readable (CommandWhole false).
	Command          []string  `json:"command,omitempty"`
	CommandWhole     bool      `json:"command_whole,omitempty"`
	Hosts            []string  `json:"hosts,omitempty"`
	SubmittedAt      time.Time `json:"submitted_at,omitzero"`
	StartedAt        time.Time `json:"started_at,omitzero"`
	EndedAt          time.Time `json:"ended_at,omitzero"`
	WaitSeconds      *float64  `json:"wait_seconds,omitempty"`
	PredictedSeconds *float64  `json:"predicted_seconds,omitempty"`
	ActualSeconds    *float64  `json:"actual_seconds,omitempty"`
	// Reaped: from the accounting log; false: still in finished/ or
	// rejected/, about to be reaped.
	Reaped bool `json:"reaped"`
	// executable is the record's command[0], for the search.
	executable string
}

// Outcome classes (RecentJob.Class) and the state filter's other values.
const (
	classOK        = "ok"
	classFailed    = "failed"
	classCancelled = "cancelled"
	classRejected  = "rejected"
)

// recentStates are the values of the state filter: the two states jobs end
// in, then the outcome classes.
var recentStates = []string{spool.OutcomeExited, spool.OutcomeRejected, classOK, classFailed, classCancelled}

func recentFromRecord(r *acct.Record) RecentJob {
	x := RecentJob{JID: r.JID, Name: r.Name, User: r.User, State: r.State, Hosts: r.Hosts,
		SubmittedAt: r.SubmittedAt, StartedAt: r.StartedAt, EndedAt: r.EndedAt, WaitSeconds: r.WaitSeconds,
		PredictedSeconds: r.PredictedSeconds, ActualSeconds: r.ActualSeconds, Reaped: true, executable: r.Executable}
	if r.Executable != "" {
		x.Command = []string{r.Executable}
	}
	x.Class, x.Outcome = classify(r.State, r.Cancelled, r.ExitStatus, r.Signal, r.Reason)
	return x
}

func recentFromView(v JobView) RecentJob {
	x := RecentJob{JID: v.JID, Name: v.Name, User: v.User, State: spool.Outcome(v.State), Hosts: v.Hosts,
		SubmittedAt: v.SubmittedAt, StartedAt: v.StartedAt, EndedAt: v.EndedAt, PredictedSeconds: v.PredictedSeconds,
		ActualSeconds: v.ActualSeconds, Command: v.Command, CommandWhole: len(v.Command) > 0}
	if len(v.Command) > 0 {
		x.executable = v.Command[0]
	}
	if !v.StartedAt.IsZero() && !v.SubmittedAt.IsZero() {
		x.WaitSeconds = ptr(v.StartedAt.Sub(v.SubmittedAt).Seconds())
	}
	x.Class, x.Outcome = classify(x.State, v.CancelRequested, v.ExitStatus, v.Signal, v.Reason)
	return x
}

// classify is an ended job's outcome class and what the page says of it.
func classify(state string, cancelled bool, exit *int, signal, reason string) (class, outcome string) {
	switch {
	case exit != nil:
		outcome = fmt.Sprintf("exit %d", *exit)
	case signal != "":
		outcome = "signal " + signal
	}
	if reason != "" {
		first, _, _ := strings.Cut(reason, "\n")
		if outcome != "" {
			outcome += ": "
		}
		outcome += first
	}
	switch acct.EndOf(state, cancelled, exit, signal, reason) {
	case acct.EndCancelled:
		return classCancelled, outcome
	case acct.EndRejected:
		return classRejected, outcome
	case acct.EndCompleted:
		return classOK, outcome
	}
	return classFailed, outcome
}

// RecentFilter selects recent jobs: every non-empty field must match.
type RecentFilter struct {
	User  string `json:"user,omitempty"`
	State string `json:"state,omitempty"` // exited, rejected, ok, failed or cancelled
	Name  string `json:"name,omitempty"`
	// Q is searched for, case-insensitively, in the JID, name, user,
	// executable and hosts.
	Q    string `json:"q,omitempty"`
	Page int    `json:"page"` // from 1
}

// recentPerPage is the recent list's page length.
const recentPerPage = 25

// recentFilter reads the filter from a request's query; an unknown state
// is an error.
func recentFilter(q url.Values) (RecentFilter, error) {
	f := RecentFilter{User: strings.TrimSpace(q.Get("user")), State: q.Get("state"), Name: strings.TrimSpace(q.Get("name")),
		Q: strings.TrimSpace(q.Get("q")), Page: 1}
	if f.State != "" && !slices.Contains(recentStates, f.State) {
		return f, fmt.Errorf("unknown state %q (want one of %s)", f.State, strings.Join(recentStates, ", "))
	}
	if p := q.Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 1<<20 {
			return f, fmt.Errorf("page %q is not a page number", p)
		}
		f.Page = n
	}
	for _, s := range []string{f.User, f.Name, f.Q} {
		if len(s) > 256 {
			return f, fmt.Errorf("a filter of %d bytes is too long", len(s))
		}
	}
	return f, nil
}

// Active says whether the filter selects anything less than every job.
func (f RecentFilter) Active() bool {
	return f.User != "" || f.State != "" || f.Name != "" || f.Q != ""
}

// Query is the filter as a query string, with page p ("" when it is the
// whole list's first page).
func (f RecentFilter) Query(p int) string {
	v := url.Values{}
	for k, s := range map[string]string{"user": f.User, "state": f.State, "name": f.Name, "q": f.Q} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if p > 1 {
		v.Set("page", strconv.Itoa(p))
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

func (f RecentFilter) match(x *RecentJob) bool {
	if f.User != "" && x.User != f.User {
		return false
	}
	if f.Name != "" && x.Name != f.Name {
		return false
	}
	switch f.State {
	case "":
	case spool.OutcomeExited, spool.OutcomeRejected:
		if x.State != f.State {
			return false
		}
	default:
		if x.Class != f.State {
			return false
		}
	}
	if f.Q != "" {
		q := strings.ToLower(f.Q)
		hay := strings.ToLower(strings.Join(append([]string{x.JID, x.Name, x.User, x.executable}, x.Hosts...), "\x00"))
		if !strings.Contains(hay, q) {
			return false
		}
	}
	return true
}

// plainSearch are the characters a search may hold for the prefilter to
// look for it in a record's raw JSON: none of them is escaped there.
const plainSearch = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:@+ "

// prefilter is a cheap test on a raw log line: false only when the record
// cannot match, so that a scan decodes only the lines that may.
func (f RecentFilter) prefilter(line []byte) bool {
	field := func(key, v string) bool {
		b, _ := json.Marshal(v)
		return bytes.Contains(line, append([]byte(`"`+key+`":`), b...))
	}
	if f.User != "" && !field("user", f.User) {
		return false
	}
	if f.Name != "" && !field("name", f.Name) {
		return false
	}
	if f.Q != "" && strings.Trim(f.Q, plainSearch) == "" && !bytes.Contains(bytes.ToLower(line), []byte(strings.ToLower(f.Q))) {
		return false
	}
	return true
}

// RecentList is one page of recent jobs.
type RecentList struct {
	Filter RecentFilter `json:"filter"`
	Jobs   []RecentJob  `json:"jobs"`
	// Older: there are more matching jobs after this page.
	Older bool `json:"older"`
	// Waiting is how many jobs are still in finished/ and rejected/.
	Waiting int      `json:"waiting_for_reaper"`
	Users   []string `json:"-"` // users seen on this page, for the filter's choices
	Errors  []string `json:"errors,omitempty"`
}

// recentSpoolLimit bounds the jobs read from finished/ and rejected/: the
// reaper empties them within a scan, so more means it is down, and the
// overview's boxes list them.
const recentSpoolLimit = 200

// recent reads one page of recent jobs: first those still in finished/
// and rejected/ (newest first), then the accounting log from its end,
// each line decoded only if the filter's prefilter lets it through, until
// the page and one more job are found. A job both in the spool and in the
// log (recorded, not yet removed) is listed once. perPage 0: recentPerPage.
// Each listed reaped job's command line is read from its report.
//
// sv, if not nil, is what the request already read of the spool: its
// finished and rejected jobs are used instead of reading them again when
// it read enough of them.
func (h *handler) recent(f RecentFilter, perPage int, sv *spoolView) RecentList {
	if perPage <= 0 {
		perPage = recentPerPage
	}
	l := RecentList{Filter: f, Jobs: []RecentJob{}}
	skip := (f.Page - 1) * perPage
	seen := map[string]bool{}
	users := map[string]bool{}
	add := func(x RecentJob) bool {
		if seen[x.JID] {
			return true
		}
		seen[x.JID] = true
		if !f.match(&x) {
			return true
		}
		users[x.User] = true
		if skip > 0 {
			skip--
			return true
		}
		if len(l.Jobs) == perPage {
			l.Older = true
			return false
		}
		l.Jobs = append(l.Jobs, x)
		return true
	}
	var spooled []JobView
	need := min(skip+perPage+1, recentSpoolLimit)
	for _, st := range []spool.State{spool.Finished, spool.Rejected} {
		var sj StateJobs
		var err error
		if i := slices.Index(spool.States, st); sv != nil && i < len(sv.States) && sv.States[i].State == st &&
			(len(sv.States[i].Jobs) >= need || sv.States[i].More == 0) {
			sj = sv.States[i]
		} else if sj, err = readState(h.cfg.Spool, st, need); err != nil {
			l.Errors = append(l.Errors, h.shown(err))
		}
		l.Waiting += sj.Count
		for _, v := range sj.Jobs {
			if v.JID != "" && v.Invalid == "" {
				spooled = append(spooled, v)
			}
		}
	}
	// Newest first across both directories: by the end, else the JID.
	sortNewest(spooled)
	more := true
	for _, v := range spooled {
		if more = add(recentFromView(v)); !more {
			break
		}
	}
	if more {
		_, err := scanBack(h.cfg.Spool, 0, func(line []byte) bool {
			if !f.prefilter(line) {
				return true
			}
			r, ok := acct.ParseRecordLine(line)
			if !ok {
				return true
			}
			return add(recentFromRecord(&r))
		})
		if err != nil {
			l.Errors = append(l.Errors, h.shown(err))
		}
	}
	for i := range l.Jobs {
		x := &l.Jobs[i]
		if !x.Reaped {
			continue
		}
		if head, err := readReportHead(h.cfg.Spool, x.JID); err == nil && len(head.Command) > 0 && !head.Clipped {
			x.Command, x.CommandWhole = head.Command, true
		}
	}
	for u := range users {
		if u != "" {
			l.Users = append(l.Users, u)
		}
	}
	return l
}

// sortNewest orders ended jobs newest first: by their end (a rejected
// submission has none: its submission), then by JID.
func sortNewest(vs []JobView) {
	at := func(v JobView) time.Time {
		if !v.EndedAt.IsZero() {
			return v.EndedAt
		}
		if n := len(v.History); n > 0 {
			return v.History[n-1].At
		}
		return v.SubmittedAt
	}
	slices.SortStableFunc(vs, func(a, b JobView) int {
		return cmp.Or(at(b).Compare(at(a)), spool.CompareJID(b.JID, a.JID))
	})
}

// RecentPage is the data of /recent.
type RecentPage struct {
	List   RecentList
	States []string
	Error  string
	Prev   string // the newer page's query, "" on the first
	Next   string // the older page's query, "" on the last
}

func (h *handler) recentPage(w http.ResponseWriter, r *http.Request) {
	f, err := recentFilter(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p := RecentPage{List: h.recent(f, 0, nil), States: recentStates}
	if f.Page > 1 {
		p.Prev = f.Query(f.Page - 1)
		if p.Prev == "" {
			p.Prev = "?"
		}
	}
	if p.List.Older {
		p.Next = f.Query(f.Page + 1)
	}
	h.render(w, r, "recent", "Recent jobs", p)
}

func (h *handler) apiRecent(w http.ResponseWriter, r *http.Request) {
	f, err := recentFilter(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, h.recent(f, 0, nil))
}
