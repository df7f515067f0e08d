package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"msched/acct"
	"msched/spool"
)

var testNow = time.Date(2026, 11, 2, 14, 30, 0, 0, time.UTC)

func get(t *testing.T, h http.Handler, path string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	for _, c := range cookies {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

var barRE = regexp.MustCompile(`class="bar-rect" data-state="(\w+)" data-jid="(J\d+)"`)

func TestOverview_GanttHasABarPerJobAndHost(t *testing.T) {
	b := fixture{Jobs: 200, Hosts: 16, Now: testNow}.build(t)
	h := handlerFor(b, testNow, "")
	for _, path := range []string{"/", "/?fragment=1", "/schedule.svg"} {
		w := get(t, h, path)
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
		body := w.Body.String()
		got := map[string]int{}
		for _, m := range barRE.FindAllStringSubmatch(body, -1) {
			got[m[1]]++
		}
		var sched spool.PublishedSchedule
		data, _ := os.ReadFile(filepath.Join(b.sp.Path(spool.DirDB), spool.ScheduleFile))
		if err := json.Unmarshal(data, &sched); err != nil {
			t.Fatal(err)
		}
		want := map[string]int{}
		for _, j := range sched.Jobs {
			want[j.State] += len(j.Hosts)
		}
		if want["running"] == 0 || want["planned"] == 0 {
			t.Fatalf("fixture has no running or planned jobs: %v", want)
		}
		if got["running"] != want["running"] || got["planned"] != want["planned"] {
			t.Errorf("%s: bars %v, want %v", path, got, want)
		}
		if !strings.Contains(body, `class="now"`) {
			t.Errorf("%s: no now line", path)
		}
		if path == "/schedule.svg" {
			if ct := w.Header().Get("Content-Type"); ct != "image/svg+xml" {
				t.Errorf("schedule.svg: Content-Type %q", ct)
			}
			continue
		}
		for _, st := range spool.States {
			if !strings.Contains(body, `data-state="`+string(st)+`"`) {
				t.Errorf("%s: no section for %s", path, st)
			}
		}
		if path == "/" && !strings.Contains(w.Header().Get("Content-Security-Policy"), "script-src 'nonce-") {
			t.Errorf("no CSP nonce: %q", w.Header().Get("Content-Security-Policy"))
		}
	}
}

func TestGantt_Layout(t *testing.T) {
	now := testNow
	s := &spool.PublishedSchedule{Hosts: []spool.PublishedHost{{Name: "a"}, {Name: "b"}}, Jobs: []spool.PublishedJob{
		{JID: "J000001", State: "running", Hosts: []string{"a"}, Start: now.Add(-10 * time.Hour), End: now.Add(time.Hour)},
		{JID: "J000002", State: "planned", Hosts: []string{"a", "b"}, Start: now.Add(time.Hour), End: now.Add(3 * time.Hour)},
		{JID: "J000003", State: "planned", Hosts: []string{"zz"}, Start: now, End: now.Add(time.Minute)}, // unknown host: no bar
	}}
	g := layoutGantt(s, now)
	if len(g.Bars) != 3 {
		t.Fatalf("%d bars, want 3 (one running, two for the 2-host plan)", len(g.Bars))
	}
	if !g.NowIn || g.NowX <= g.PlotX || g.NowX >= g.PlotX+g.PlotW {
		t.Errorf("now line at %v, outside the plot [%v, %v]", g.NowX, g.PlotX, g.PlotX+g.PlotW)
	}
	// A job that started 10 h ago does not squeeze the 3 h plan: now stays
	// in the first third.
	if frac := (g.NowX - g.PlotX) / g.PlotW; frac > 0.4 {
		t.Errorf("now at %.2f of the width; the past takes too much", frac)
	}
	if n := len(g.Ticks); n < 3 || n > maxTicks {
		t.Errorf("%d ticks", n)
	}
	for _, b := range g.Bars {
		if b.X < g.PlotX || b.X+b.W > g.PlotX+g.PlotW+0.01 || b.W < 2 {
			t.Errorf("bar %s outside the plot: x %v w %v", b.JID, b.X, b.W)
		}
	}
	if g := layoutGantt(nil, now); !g.Empty {
		t.Error("no schedule: want an empty chart")
	}
}

func TestJobPage_HistoryPredictedActualOutput(t *testing.T) {
	b := fixture{Jobs: 100, Hosts: 8, Now: testNow}.build(t)
	h := handlerFor(b, testNow, "tok")
	sess := loginCookie(t, h)
	jid := b.byState[spool.Finished][0]
	out := filepath.Join(b.sp.Path(spool.DirOutput), jid)
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(out, "stdout"), []byte("hello from the job\n"), 0o644)
	w := get(t, h, "/jobs/"+jid, sess)
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	body := w.Body.String()
	for _, want := range []string{`<tr data-state="queued">`, `<tr data-state="running">`, `<tr data-state="finished">`,
		`/jobs/` + jid + `/output/stdout`, "prediction error"} {
		if !strings.Contains(body, want) {
			t.Errorf("job page lacks %q", want)
		}
	}
	if strings.Contains(body, "/output/stderr") {
		t.Error("links a stderr that was not captured")
	}
	w = get(t, h, "/jobs/"+jid+"/output/stdout", sess)
	if w.Code != 200 || w.Body.String() != "hello from the job\n" || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		t.Errorf("stdout: %d %q %q", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	// A reaped job is shown from the accounting log.
	w = get(t, h, "/jobs/J100003")
	if w.Code != 200 || !strings.Contains(w.Body.String(), "accounting record") {
		t.Errorf("reaped job: %d", w.Code)
	}
	if w := get(t, h, "/jobs/J999999"); w.Code != 404 {
		t.Errorf("unknown job: %d", w.Code)
	}
}

func TestOutput_NoPathTraversal(t *testing.T) {
	b := fixture{Jobs: 20, Hosts: 2, Now: testNow}.build(t)
	h := handlerFor(b, testNow, "tok")
	sess := loginCookie(t, h) // the operator: past the 403 every other visitor gets
	secret := filepath.Join(b.sp.Root(), "secret")
	os.WriteFile(secret, []byte("SECRET"), 0o600)
	jid := b.byState[spool.Running][0]
	out := filepath.Join(b.sp.Path(spool.DirOutput), jid)
	os.MkdirAll(out, 0o755)
	// A job replaced its stderr with a link to a file it should not show.
	if err := os.Symlink(secret, filepath.Join(out, "stderr")); err != nil {
		t.Fatal(err)
	}
	// And a JID directory that is itself a link.
	os.Symlink(b.sp.Root(), filepath.Join(b.sp.Path(spool.DirOutput), "J777777"))
	os.WriteFile(filepath.Join(b.sp.Root(), "stdout"), []byte("SECRET"), 0o600)
	for _, p := range []string{
		"/jobs/" + jid + "/output/stderr",
		"/jobs/J777777/output/stdout",
		"/jobs/" + jid + "/output/..%2f..%2fsecret",
		"/jobs/" + jid + "/output/../../secret",
		"/jobs/..%2fsecret/output/stdout",
		"/jobs/" + jid + "/output/%2e%2e",
		"/jobs/" + jid + "/output/stdin",
		"/jobs/" + jid + "/report/../../secret",
	} {
		w := get(t, h, p, sess)
		if strings.Contains(w.Body.String(), "SECRET") || w.Code == 200 {
			t.Errorf("%s: %d %q", p, w.Code, w.Body)
		}
	}
}

func TestEscaping_ScriptInJobNameIsEscapedEverywhere(t *testing.T) {
	b := fixture{Jobs: 60, Hosts: 4, Now: testNow, Evil: true}.build(t)
	h := handlerFor(b, testNow, "tok")
	jid := b.byState[spool.Running][0]
	sess := loginCookie(t, h)
	paths := []string{"/", "/?fragment=1", "/jobs", "/jobs?state=queued", "/jobs/" + jid, "/jobs/" + jid + "?fragment=1",
		"/hosts", "/models", "/schedule.svg", "/api/jobs", "/api/jobs/" + jid, "/api/schedule", "/metrics"}
	for _, p := range paths {
		w := get(t, h, p, sess)
		if w.Code != 200 {
			t.Fatalf("%s: %d", p, w.Code)
		}
		body := w.Body.String()
		if strings.Contains(body, "<script>alert") {
			t.Errorf("%s: unescaped script", p)
		}
		if p != "/hosts" && strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") && !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s: the name is not shown escaped", p)
		}
	}
}

// loginCookie logs in with the token "tok" and returns the session cookie.
func loginCookie(t *testing.T, h http.Handler) *http.Cookie {
	t.Helper()
	r := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {"tok"}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("login: %d %s", w.Code, w.Body)
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == sessionCookie {
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
				t.Errorf("session cookie: HttpOnly %v SameSite %v", c.HttpOnly, c.SameSite)
			}
			return c
		}
	}
	t.Fatal("login set no session cookie")
	return nil
}

// liveSession makes a recorded session of h, as a login would, without a
// login: the session of another page when h has another token.
func liveSession(t *testing.T, h *handler) *http.Cookie {
	t.Helper()
	p, c := h.newSession()
	if err := h.recordSession(p); err != nil {
		t.Fatal(err)
	}
	return &http.Cookie{Name: sessionCookie, Value: c}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func post(h http.Handler, path string, form url.Values, hdr map[string]string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	for _, c := range cookies {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestCSRF_CancelNeedsSessionAndToken(t *testing.T) {
	b := fixture{Jobs: 40, Hosts: 4, Now: testNow}.build(t)
	h := handlerFor(b, testNow, "tok")
	jid := b.byState[spool.Queued][0]

	if w := post(h, "/login", url.Values{"token": {"wrong"}}, nil); w.Code != http.StatusForbidden || len(w.Result().Cookies()) != 0 {
		t.Errorf("wrong token: %d, cookies %v", w.Code, w.Result().Cookies())
	}
	sess := loginCookie(t, h)
	page := get(t, h, "/jobs/"+jid, sess).Body.String()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil || !strings.Contains(page, `id="cancel"`) {
		t.Fatalf("logged-in job page has no cancel form with a CSRF field")
	}
	token := m[1]
	other := liveSession(t, handlerFor(b, testNow, "tok"))
	forged := liveSession(t, handlerFor(b, testNow, "other-token"))
	for _, c := range []struct {
		name   string
		form   url.Values
		hdr    map[string]string
		cookie *http.Cookie
	}{
		{"no session, no token", url.Values{}, nil, nil},
		{"no session, token", url.Values{"csrf": {token}}, nil, nil},
		{"session, no token", url.Values{}, nil, sess},
		{"session, wrong token", url.Values{"csrf": {token[:len(token)-2] + "AA"}}, nil, sess},
		{"another session's token", url.Values{"csrf": {token}}, nil, other},
		{"session signed with another key", url.Values{"csrf": {token}}, nil, forged},
		{"cross-site origin", url.Values{"csrf": {token}}, map[string]string{"Origin": "http://evil.example"}, sess},
		{"cross-site fetch", url.Values{"csrf": {token}}, map[string]string{"Sec-Fetch-Site": "cross-site"}, sess},
	} {
		var cs []*http.Cookie
		if c.cookie != nil {
			cs = append(cs, c.cookie)
		}
		w := post(h, "/jobs/"+jid+"/cancel", c.form, c.hdr, cs...)
		if w.Code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", c.name, w.Code)
		}
		if cancelRequested(t, b.sp, jid) {
			t.Fatalf("%s: the cancel request was written", c.name)
		}
	}
	if w := get(t, h, "/jobs/"+jid+"/cancel", sess); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET cancel: %d, want 405", w.Code)
	}
	w := post(h, "/jobs/"+jid+"/cancel", url.Values{"csrf": {token}}, map[string]string{"Origin": "http://example.com"}, sess)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("cancel with the token: %d %s", w.Code, w.Body)
	}
	if !cancelRequested(t, b.sp, jid) {
		t.Fatal("no cancel request in control/")
	}
	cs, _ := b.sp.Controls()
	if len(cs) != 1 || cs[0].JID != jid || cs[0].Kind != spool.Cancel {
		t.Errorf("controls %+v", cs)
	}
	// An expired session is refused.
	late := handlerFor(b, testNow.Add(sessionTTL+time.Minute), "tok")
	if w := post(late, "/jobs/"+jid+"/cancel", url.Values{"csrf": {token}}, nil, sess); w.Code != http.StatusForbidden {
		t.Errorf("expired session: %d", w.Code)
	}
}

func TestResubmit_UserFieldsOnly(t *testing.T) {
	b := fixture{Jobs: 40, Hosts: 4, Now: testNow}.build(t)
	h := handlerFor(b, testNow, "tok")
	jid := b.byState[spool.Running][0]
	sess := loginCookie(t, h)
	token := csrfRE.FindStringSubmatch(get(t, h, "/jobs/"+jid, sess).Body.String())[1]
	w := post(h, "/jobs/"+jid+"/resubmit", url.Values{"csrf": {token}}, nil, sess)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("resubmit: %d %s", w.Code, w.Body)
	}
	es, _ := b.sp.List(spool.Submitted)
	var found *spool.Job
	for _, e := range es {
		if strings.HasPrefix(e.Name, "resubmit-"+jid) {
			j, err := b.sp.Read(spool.Submitted, e.Name)
			if err != nil {
				t.Fatal(err)
			}
			found = j
		}
	}
	if found == nil {
		t.Fatal("no resubmission in submitted/")
	}
	_, orig, _ := b.sp.Find(jid)
	if found.JID != "" || found.History != nil || found.Run != nil || found.Schedule != nil || found.User != "" {
		t.Errorf("resubmission carries daemon sections: %+v", found)
	}
	if found.Name != orig.Name || strings.Join(found.Command, " ") != strings.Join(orig.Command, " ") || found.Model.Name != orig.Model.Name {
		t.Errorf("resubmission %+v differs from %+v", found, orig)
	}
	// Init runs a job as its file's owner: the resubmission is the job
	// owner's, not the page's (root's, in this test).
	if os.Geteuid() == 0 {
		if uid := ownerOf(t, filepath.Join(b.sp.Dir(spool.Submitted), found.File())); uid != fixtureUID {
			t.Errorf("resubmitted file owned by uid %d, want the job's owner %d", uid, fixtureUID)
		}
	}
}

func TestReadOnly_WithoutToken(t *testing.T) {
	b := fixture{Jobs: 20, Hosts: 2, Now: testNow}.build(t)
	h := handlerFor(b, testNow, "")
	jid := b.byState[spool.Queued][0]
	page := get(t, h, "/jobs/"+jid).Body.String()
	if strings.Contains(page, "<form") || strings.Contains(page, "Log in") {
		t.Error("read-only page shows forms or a login link")
	}
	if w := post(h, "/jobs/"+jid+"/cancel", nil, nil); w.Code != http.StatusForbidden {
		t.Errorf("cancel without token configured: %d", w.Code)
	}
	if w := post(h, "/login", url.Values{"token": {""}}, nil); w.Code != http.StatusForbidden {
		t.Errorf("login with no token configured: %d", w.Code)
	}
}

func TestAPI(t *testing.T) {
	b := fixture{Jobs: 100, Hosts: 8, Now: testNow}.build(t)
	h := handlerFor(b, testNow, "")
	var jobs APIJobs
	decode(t, get(t, h, "/api/jobs"), &jobs)
	if jobs.Counts[spool.Queued] != len(b.byState[spool.Queued]) || len(jobs.Jobs) != 100 {
		t.Errorf("api/jobs: counts %v, %d jobs", jobs.Counts, len(jobs.Jobs))
	}
	decode(t, get(t, h, "/api/jobs?state=running"), &jobs)
	if len(jobs.Jobs) != len(b.byState[spool.Running]) || jobs.Jobs[0].State != spool.Running {
		t.Errorf("api/jobs?state=running: %d jobs", len(jobs.Jobs))
	}
	var j JobView
	jid := b.byState[spool.Finished][0]
	decode(t, get(t, h, "/api/jobs/"+jid), &j)
	if j.JID != jid || j.State != spool.Finished || j.PredictedSeconds == nil || j.ActualSeconds == nil || len(j.History) < 5 {
		t.Errorf("api/jobs/%s: %+v", jid, j)
	}
	var hosts []HostView
	decode(t, get(t, h, "/api/hosts"), &hosts)
	if len(hosts) != 8 || hosts[0].Stats == nil {
		t.Errorf("api/hosts: %d hosts", len(hosts))
	}
	var s spool.PublishedSchedule
	decode(t, get(t, h, "/api/schedule"), &s)
	if len(s.Hosts) != 8 || len(s.Jobs) != len(b.running)+len(b.planned) {
		t.Errorf("api/schedule: %d hosts %d jobs", len(s.Hosts), len(s.Jobs))
	}
	if w := get(t, h, "/api/jobs?state=nope"); w.Code != 400 {
		t.Errorf("bad state: %d", w.Code)
	}
}

func decode(t *testing.T, w *httptest.ResponseRecorder, v any) {
	t.Helper()
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("%d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	if err := json.Unmarshal(w.Body.Bytes(), v); err != nil {
		t.Fatal(err)
	}
}

func TestMetrics(t *testing.T) {
	b := fixture{Jobs: 100, Hosts: 8, Now: testNow}.build(t)
	w := get(t, handlerFor(b, testNow, ""), "/metrics")
	if !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", w.Header().Get("Content-Type"))
	}
	got := map[string]string{}
	line := regexp.MustCompile(`^([a-z_]+(?:\{[^}]*\})?) (\S+)$`)
	for _, l := range strings.Split(strings.TrimSpace(w.Body.String()), "\n") {
		if strings.HasPrefix(l, "# HELP ") || strings.HasPrefix(l, "# TYPE ") {
			continue
		}
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("not exposition format: %q", l)
		}
		got[m[1]] = m[2]
	}
	for k, v := range map[string]string{
		`msched_jobs{state="queued"}`:                   "40",
		`msched_jobs{state="running"}`:                  "7",
		`msched_evaluator_cache_hit_ratio`:              "0.9",
		`msched_ga_generations_total`:                   "12345",
		`msched_ga_generations_per_second`:              "20.575",
		`msched_prediction_jobs{model="exe:particles"}`: "8",
		`msched_schedule_jobs{kind="running"}`:          "7",
		`msched_evaluator_hits_total{level="disk"}`:     "200",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %s", k, got[k], v)
		}
	}
	if _, ok := got[`msched_prediction_mape_ratio{model="exe:particles"}`]; !ok {
		t.Error("no MAPE")
	}
}

func TestAccuracy(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	rs := []acct.Record{
		{JID: "J1", Model: "m", PredictedSeconds: f(110), ActualSeconds: f(100)},
		{JID: "J2", Model: "m", PredictedSeconds: f(90), ActualSeconds: f(100)},
		{JID: "J3", Executable: "/bin/x", PredictedSeconds: f(10), ActualSeconds: f(20)},
		{JID: "J4", Model: "m", PredictedSeconds: f(10)}, // never ran
	}
	a := accuracy(rs)
	if len(a) != 3 || a[0].Model != "all" || a[0].Count != 3 {
		t.Fatalf("%+v", a)
	}
	m := a[2]
	if m.Model != "m" || m.Count != 2 || m.MeanErrorS != 0 || m.MeanAbsErrS != 10 || m.MAPE != 0.1 {
		t.Errorf("m: %+v", m)
	}
	if a[1].Model != "exe:x" || a[1].MAPE != 0.5 || a[1].MeanErrorS != -10 {
		t.Errorf("exe: %+v", a[1])
	}
}

func TestBase_UnderACGIScriptName(t *testing.T) {
	b := fixture{Jobs: 20, Hosts: 2, Now: testNow}.build(t)
	h := New(Config{Spool: b.sp, Base: "/cgi-bin/msched/", Now: func() time.Time { return testNow }})
	w := get(t, h, "/cgi-bin/msched/")
	if w.Code != 200 || !strings.Contains(w.Body.String(), `href="/cgi-bin/msched/hosts"`) {
		t.Fatalf("%d; links not under the base", w.Code)
	}
	if w := get(t, h, "/cgi-bin/msched"); w.Code != 200 {
		t.Errorf("base without slash: %d", w.Code)
	}
	for _, p := range []string{"/", "/hosts", "/cgi-bin/mschedX/hosts"} {
		if w := get(t, h, p); w.Code != 404 {
			t.Errorf("%s outside the base: %d", p, w.Code)
		}
	}
}

// A prediction's error is a percentage only for a job of at least
// learn.PercentFloor; a shorter one's is in seconds.
func TestErrPct_ShortJobsInSeconds(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		pred, act float64
		want      string
	}{{120, 100, "+20.0% of actual"}, {3, 0.000338, "+3.0 s"}, {5, 9.5, "-4.5 s"}, {10, 10, "+0.0% of actual"}} {
		if got := errPct(f(c.pred), f(c.act)); got != c.want {
			t.Errorf("errPct(%v, %v) = %q, want %q", c.pred, c.act, got, c.want)
		}
	}
	if got := errPct(nil, f(1)); got != "" {
		t.Errorf("no prediction: %q", got)
	}
}
