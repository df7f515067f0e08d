package web

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"msched/notify"
	"msched/spool"
)

// Config says what the handler serves.
type Config struct {
	Spool *spool.Spool // required
	// HostsFile is the hosts file (hoststat.LoadHosts); "" or missing: the
	// hosts of the published schedule and of the stats store.
	HostsFile string
	// StatsDir is the stats daemon's store; "": the spool's db/.
	StatsDir string
	// Token enables cancel and resubmit for whoever logs in with it
	// (config key web.token). "": the page is read-only.
	Token string
	// Base is the URL path the handler is mounted at, without a trailing
	// slash: "" at the root, a CGI program's SCRIPT_NAME ("/cgi-bin/msched").
	Base string
	// Refresh is how often the pages re-fetch their live part; 0: 5 s.
	Refresh time.Duration
	// OverviewLimit is how many jobs of each state the overview lists
	// (the count is always complete; /jobs?state= lists all); 0: 25.
	OverviewLimit int
	// Hosts are the names the Host header may carry (AllowHosts); a
	// request for another name is answered 421. nil: any name (a CGI
	// program whose web server's virtual hosts already chose).
	Hosts *HostNames
	Log   *slog.Logger     // nil: slog.Default()
	Now   func() time.Time // nil: time.Now
}

// defaultRefresh: often enough that a job's move shows within a few
// seconds, rarely enough that a CGI program per refresh costs nothing.
const defaultRefresh = 5 * time.Second

// defaultOverviewLimit keeps the overview a page, not a dump: the
// interesting jobs of a state are its first (oldest waiting, newest done).
const defaultOverviewLimit = 25

//go:embed templates/*.html
var templateFS embed.FS

// pages are parsed once per process, on first use (base.html with each
// page's file): not at package init, because every msched process pays
// for package init, the shepherd of every job among them.
var pages = sync.OnceValue(parsePages)

// shared are the templates every page is parsed with; the others are one
// page each.
var shared = map[string]bool{"base.html": true, "gantt.html": true, "hosttable.html": true, "usagechart.html": true, "recentrows.html": true}

func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"dur":         dur,
		"secs":        func(p *float64) string { return optSecs(p) },
		"stamp":       stamp,
		"clock":       clock,
		"ago":         ago,
		"pct":         func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
		"f1":          func(f float64) string { return fmt.Sprintf("%.1f", f) },
		"f2":          func(f float64) string { return fmt.Sprintf("%.2f", f) },
		"px":          func(f float64) string { return fmt.Sprintf("%.1f", f) },
		"join":        strings.Join,
		"argv":        argv,
		"errpct":      errPct,
		"outcome":     viewOutcome,
		"idle":        idle,
		"sub":         func(a, b float64) float64 { return a - b },
		"machinerows": func(base string, now time.Time, ms []MachineView) machineRows { return machineRows{base, now, ms} },
		"hostnow":     func(now time.Time, h HostView) hostNow { return hostNow{now, h} },
		"hostwork":    func(base string, now time.Time, h HostView) hostWork { return hostWork{base, now, h} },
		"slot":        slotName,
		"add":         func(a, b float64) float64 { return a + b },
		"mul":         func(a, b float64) float64 { return a * b },
		"minus1":      func(n int) int { return n - 1 },
		"recentrows": func(base string, now time.Time, l RecentList) recentRows {
			return recentRows{base, now, l.Jobs, l.Filter}
		},
		"usagebox": func(base string, u *Usage, keep bool) usageBox { return usageBox{base, u, keep} },
		"pctp":     func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) },
		"since":    since,
		"modelkey": modelKey,
		"chart":    func(base string, g Gantt) ganttData { return ganttData{Base: base, Gantt: g} },
	}
	m := map[string]*template.Template{}
	names, err := templateFS.ReadDir("templates")
	if err != nil {
		panic(err)
	}
	for _, n := range names {
		if shared[n.Name()] {
			continue
		}
		t := template.Must(template.New("base.html").Funcs(funcs).ParseFS(templateFS, "templates/base.html", "templates/gantt.html",
			"templates/hosttable.html", "templates/usagechart.html", "templates/recentrows.html", "templates/"+n.Name()))
		m[strings.TrimSuffix(n.Name(), ".html")] = t
	}
	return m
}

type handler struct {
	cfg Config
	mux *http.ServeMux
	log *slog.Logger
	key []byte // session MAC key, derived from the token
}

// New returns the web page's handler: pages, JSON API, metrics, and, when
// cfg.Token is set, login, cancel and resubmit. It serves the same way
// behind net/http and as a CGI program (cgi.Serve).
func New(cfg Config) http.Handler {
	if cfg.Refresh <= 0 {
		cfg.Refresh = defaultRefresh
	}
	if cfg.OverviewLimit == 0 {
		cfg.OverviewLimit = defaultOverviewLimit
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Base = strings.TrimRight(cfg.Base, "/")
	h := &handler{cfg: cfg, mux: http.NewServeMux(), log: cfg.Log}
	if h.log == nil {
		h.log = slog.Default()
	}
	if cfg.Token != "" {
		h.key = sessionKey(cfg.Token)
	}
	m := h.mux
	m.HandleFunc("GET /{$}", h.overview)
	m.HandleFunc("GET /jobs", h.jobList)
	m.HandleFunc("GET /jobs/{jid}", h.jobPage)
	m.HandleFunc("GET /jobs/{jid}/output/{stream}", h.output)
	m.HandleFunc("GET /jobs/{jid}/report", h.report)
	m.HandleFunc("GET /recent", h.recentPage)
	m.HandleFunc("GET /usage", h.usagePage)
	m.HandleFunc("GET /hosts", h.hostsPage)
	m.HandleFunc("GET /models", h.modelsPage)
	m.HandleFunc("GET /schedule.svg", h.scheduleSVG)
	m.HandleFunc("GET /api/jobs", h.apiJobs)
	m.HandleFunc("GET /api/jobs/{jid}", h.apiJob)
	m.HandleFunc("GET /api/hosts", h.apiHosts)
	m.HandleFunc("GET /api/schedule", h.apiSchedule)
	m.HandleFunc("GET /api/models", h.apiModels)
	m.HandleFunc("GET /api/daemons", h.apiDaemons)
	m.HandleFunc("GET /api/recent", h.apiRecent)
	m.HandleFunc("GET /api/usage", h.apiUsage)
	m.HandleFunc("GET /metrics", h.metrics)
	m.HandleFunc("GET /login", h.loginPage)
	m.HandleFunc("POST /login", h.login)
	m.HandleFunc("POST /logout", h.logout)
	m.HandleFunc("POST /jobs/{jid}/cancel", h.cancel)
	m.HandleFunc("POST /jobs/{jid}/resubmit", h.resubmit)
	return h
}

// ServeHTTP strips the base path, sets the headers every response gets and
// dispatches.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Hosts != nil && !h.cfg.Hosts.Allows(r.Host) {
		// Not echoed: the name is the requester's, and nothing here needs it.
		h.log.Warn("web: refused a request for another host name (DNS rebinding?)", "host", r.Host, "remote", r.RemoteAddr)
		http.Error(w, "misdirected request: this status page does not answer to that host name (config key web.hosts)", http.StatusMisdirectedRequest)
		return
	}
	if h.cfg.Base != "" {
		p, ok := strings.CutPrefix(r.URL.Path, h.cfg.Base)
		if !ok || (p != "" && p[0] != '/') {
			http.NotFound(w, r)
			return
		}
		if p == "" {
			p = "/"
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath = p, ""
		r = r2
	}
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("X-Frame-Options", "DENY")
	h.mux.ServeHTTP(w, r)
}

// ganttData is what the "gantt" template draws.
type ganttData struct {
	Base  string
	Gantt Gantt
}

// hostNow is a host for the "hoststate" template.
type hostNow struct {
	Now time.Time
	HostView
}

// hostWork is a host for the "hostwork" template.
type hostWork struct {
	Base string
	Now  time.Time
	H    HostView
}

// recentRows is what the "recentrows" template draws.
type recentRows struct {
	Base   string
	Now    time.Time
	Jobs   []RecentJob
	Filter RecentFilter
}

// usageBox is what the "usagechart" template draws; Keep marks it to be
// kept as it is when the overview's live part is refreshed (the chart has
// its own, slower refresh).
type usageBox struct {
	Base string
	U    *Usage
	Keep bool
}

// since is the time from history event i-1 to event i.
func since(h []spool.Event, i int) string {
	if i <= 0 || i >= len(h) {
		return ""
	}
	return dur(h[i].At.Sub(h[i-1].At).Seconds())
}

// page is what every HTML template gets.
type page struct {
	Base      string
	Nonce     string
	Title     string
	Nav       string
	Now       time.Time
	Refresh   int64 // milliseconds; 0: no live part
	Token     bool  // actions are configured
	Authed    bool
	CSRF      string
	Data      any
	Path      string
	RefreshAt string // URL of the live part
}

func newNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)
}

// render executes a page, or only its live part ("live" template) when the
// request asks for the fragment (?fragment=1, sent by the refresh script).
// It renders into a buffer first, so a template error is a clean 500.
func (h *handler) render(w http.ResponseWriter, r *http.Request, name, title string, data any) {
	h.renderCode(w, r, http.StatusOK, name, title, data)
}

func (h *handler) renderCode(w http.ResponseWriter, r *http.Request, code int, name, title string, data any) {
	t := pages()[name]
	p := page{Base: h.cfg.Base, Nonce: newNonce(), Title: title, Nav: name, Now: h.cfg.Now(),
		Refresh: h.cfg.Refresh.Milliseconds(), Token: h.cfg.Token != "", Data: data, Path: r.URL.Path}
	// The live part is fetched with the page's own query (a state, the
	// recent list's filter and page), re-encoded.
	q := r.URL.Query()
	q.Set("fragment", "1") // replaces any fragment= the request had
	p.RefreshAt = h.cfg.Base + r.URL.Path + "?" + q.Encode()
	if sess, ok := h.session(r); ok {
		p.Authed, p.CSRF = true, h.csrfToken(sess)
	}
	var buf bytes.Buffer
	tmpl := "base.html"
	if r.URL.Query().Get("fragment") == "1" {
		tmpl = "live"
	}
	if err := t.ExecuteTemplate(&buf, tmpl, p); err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", fmt.Sprintf(
		"default-src 'none'; script-src 'nonce-%[1]s'; style-src 'nonce-%[1]s'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'", p.Nonce))
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// fail logs an error whole and answers 500 with its message without
// absolute paths (errors.go).
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	h.log.Error("web: request failed", "path", r.URL.Path, "err", err)
	http.Error(w, "internal error: "+h.public(err), http.StatusInternalServerError)
}

// refuse is fail for an error that is the request's, answered with code.
func (h *handler) refuse(w http.ResponseWriter, r *http.Request, code int, err error) {
	h.log.Warn("web: request refused", "path", r.URL.Path, "err", err)
	http.Error(w, h.public(err), code)
}

// shown logs an error a page shows in place of what could not be read,
// and returns its message without absolute paths.
func (h *handler) shown(err error) string {
	h.log.Warn("web: shown on a page", "err", err)
	return h.public(err)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		// Only a type that cannot be encoded gets here: a fault of this
		// package, with no path in it.
		http.Error(w, "internal error: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(b, '\n'))
}

func (h *handler) statsDir() string {
	if h.cfg.StatsDir != "" {
		return h.cfg.StatsDir
	}
	return h.cfg.Spool.Path(spool.DirDB)
}

// lookupOr404 is lookup of the request's {jid}. When there is no such job
// it answers 404 with notFound (a format taking the JID, %q), on an error
// 500, and ok is false.
func (h *handler) lookupOr404(w http.ResponseWriter, r *http.Request, notFound string) (JobView, bool) {
	jid := r.PathValue("jid")
	v, ok, err := h.lookup(jid)
	if err != nil {
		h.fail(w, r, err)
		return JobView{}, false
	}
	if !ok {
		http.Error(w, fmt.Sprintf(notFound, jid), http.StatusNotFound)
	}
	return v, ok
}

// lookup finds a job in the spool, else in the accounting log (reaped).
func (h *handler) lookup(jid string) (JobView, bool, error) {
	if !spool.ValidJID(jid) {
		return JobView{}, false, nil
	}
	st, j, err := h.cfg.Spool.Find(jid)
	var pe *spool.ParseError
	switch {
	case err == nil:
		return ViewJob(st, j), true, nil
	case errors.As(err, &pe):
		return JobView{JID: jid, Invalid: pe.Detail()}, true, nil
	case !errors.Is(err, spool.ErrNotFound):
		return JobView{}, false, err
	}
	rec, err := findRecord(h.cfg.Spool, jid)
	if err != nil || rec == nil {
		return JobView{}, false, err
	}
	var head *reportHead
	if rh, err := readReportHead(h.cfg.Spool, jid); err == nil {
		head = &rh
	} else if !errors.Is(err, errNoReport) {
		h.log.Warn("web: report not read", "jid", jid, "err", err)
	}
	return viewRecord(rec, head), true, nil
}

// Template helpers.

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + dur((-d).Seconds())
	}
	return dur(d.Seconds()) + " ago"
}

func optSecs(p *float64) string {
	if p == nil {
		return "—"
	}
	return dur(*p)
}

// errPct is a prediction's error (notify.PredictionError, as the job's
// report gives it): as a percentage of the actual run time, or in seconds
// for a job that ran less than learn.PercentFloor; "" without both times.
func errPct(pred, act *float64) string {
	if pred == nil || act == nil || *act < 0 {
		return ""
	}
	s := notify.PredictionError(duration(*pred), duration(*act))
	if strings.HasSuffix(s, "%") {
		s += " of actual"
	}
	return s
}

// duration is s seconds to the nearest nanosecond: rounded, not cut, so
// that a time kept with up to nine decimals gives back the same seconds
// (2.05 s is 2049999999.9999998 ns as a float64).
func duration(s float64) time.Duration {
	return time.Duration(math.Round(s * float64(time.Second)))
}

// argv shows a command as the user would type it, quoting where needed.
func argv(a []string) string {
	q := make([]string, len(a))
	for i, s := range a {
		if s == "" || strings.ContainsAny(s, " \t\n'\"\\$`") {
			q[i] = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		} else {
			q[i] = s
		}
	}
	return strings.Join(q, " ")
}

// viewOutcome is how a job ended, in a few words.
func viewOutcome(v JobView) string {
	switch {
	case v.ExitStatus != nil:
		return fmt.Sprintf("exit %d", *v.ExitStatus)
	case v.Signal != "":
		return "signal " + v.Signal
	case v.Reason != "":
		return v.Reason
	}
	return ""
}

func idle(s float64) string {
	if s < 0 {
		return "no user"
	}
	return dur(s)
}
