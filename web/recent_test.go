package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"msched/acct"
	"msched/daemons"
	"msched/notify"
	"msched/spool"
)

// recentLog writes n records of the daemons' type, oldest first: users
// alice, bob, carol in turn, every 7th failed, every 11th cancelled, every
// 13th rejected.
func recentLog(t *testing.T, sp *spool.Spool, n int, now time.Time) []acct.Record {
	t.Helper()
	var rs []acct.Record
	var data []byte
	for i := 0; i < n; i++ {
		end := now.Add(-time.Duration(n-i) * time.Minute)
		r := acct.Record{JID: spool.FormatJID(int64(1000 + i)), Name: []string{"render", "nbody", "fft <2048>"}[i%3],
			User: []string{"alice", "bob", "carol"}[i%3], Executable: "/opt/bin/" + []string{"render", "nbody", "fft"}[i%3],
			Hosts: []string{fmt.Sprintf("node%02d/cpu%d", i%4, i%2)}, SubmittedAt: end.Add(-3 * time.Minute),
			StartedAt: end.Add(-2 * time.Minute), EndedAt: end, State: spool.OutcomeExited, ExitStatus: ptr(0)}
		switch {
		case i%13 == 0:
			r.State, r.StartedAt, r.EndedAt, r.ExitStatus, r.Reason = spool.OutcomeRejected, time.Time{}, time.Time{}, nil, "hosts: no such arch"
		case i%11 == 0:
			r.Cancelled, r.Reason, r.ExitStatus, r.Signal = true, "cancelled", nil, "TERM"
		case i%7 == 0:
			r.ExitStatus = ptr(3)
		}
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		data = append(append(data, line...), '\n')
		rs = append(rs, r)
	}
	writeLog(t, sp, data)
	return rs
}

func TestRecent_FilterAndPages(t *testing.T) {
	sp := newSpool(t)
	rs := recentLog(t, sp, 400, testNow)
	h := New(Config{Spool: sp, Now: func() time.Time { return testNow }}).(*handler)
	class := func(r acct.Record) string {
		c, _ := classify(r.State, r.Cancelled, r.ExitStatus, r.Signal, r.Reason)
		return c
	}
	for _, f := range []RecentFilter{
		{}, {User: "bob"}, {State: "failed"}, {State: "rejected"}, {State: "cancelled"}, {State: "exited"}, {State: "ok", User: "carol"},
		{Name: "fft <2048>"}, {Q: "NBODY"}, {Q: "j0013"}, {Q: "node03/cpu1"}, {Q: "<2048"}, {User: "nobody"},
	} {
		var want []string
		for i := len(rs) - 1; i >= 0; i-- {
			r := rs[i]
			ok := (f.User == "" || r.User == f.User) && (f.Name == "" || r.Name == f.Name)
			switch f.State {
			case "":
			case "exited", "rejected":
				ok = ok && r.State == f.State
			default:
				ok = ok && class(r) == f.State
			}
			if q := strings.ToLower(f.Q); q != "" {
				ok = ok && strings.Contains(strings.ToLower(r.JID+" "+r.Name+" "+r.User+" "+r.Executable+" "+strings.Join(r.Hosts, " ")), q)
			}
			if ok {
				want = append(want, r.JID)
			}
		}
		var got []string
		for page := 1; ; page++ {
			f.Page = page
			l := h.recent(f, 30, nil)
			for _, x := range l.Jobs {
				got = append(got, x.JID)
			}
			if !l.Older {
				break
			}
			if len(l.Jobs) != 30 {
				t.Fatalf("%+v: page %d of %d jobs before the last", f, page, len(l.Jobs))
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("filter %+v: %d jobs %v…, want %d %v…", f, len(got), head(got), len(want), head(want))
		}
	}
}

func head(s []string) []string { return s[:min(len(s), 4)] }

// The prefilter never drops a record the filter matches.
func TestRecent_PrefilterIsSound(t *testing.T) {
	sp := newSpool(t)
	rs := recentLog(t, sp, 100, testNow)
	for _, f := range []RecentFilter{{User: "alice"}, {Name: "fft <2048>"}, {Q: "fft <"}, {Q: "Render"}, {Q: "/opt/bin/nb"}, {Q: "J001042"}} {
		for _, r := range rs {
			line, _ := json.Marshal(r)
			rec, _ := acct.ParseRecordLine(line)
			x := recentFromRecord(&rec)
			if f.match(&x) && !f.prefilter(line) {
				t.Errorf("%+v: the prefilter drops %s", f, r.JID)
			}
		}
	}
}

// The overview and /recent list the jobs that ended, with user and
// command; /api/recent answers the same in snake_case.
func TestRecent_PageAndAPI(t *testing.T) {
	b := fixture{Jobs: 40, Hosts: 4, Now: testNow}.build(t)
	h := handlerFor(b, testNow, "")
	body := get(t, h, "/recent?user=alice&state=exited").Body.String()
	if n := strings.Count(body, `<tr data-jid=`); n != recentPerPage {
		t.Errorf("/recent lists %d jobs, want a page of %d", n, recentPerPage)
	}
	for _, s := range []string{`data-user="alice"`, `./sweep3d -n`, `id="older"`, `href="/recent?name=`} {
		if !strings.Contains(body, s) {
			t.Errorf("/recent lacks %q", s)
		}
	}
	var l RecentList
	decode(t, get(t, h, "/api/recent?page=2&user=alice"), &l)
	if l.Filter.Page != 2 || len(l.Jobs) == 0 || l.Jobs[0].User != "alice" {
		t.Errorf("/api/recent page 2: %+v", l)
	}
	for _, state := range []string{"nope", "ok+failed", "exited+rejected"} {
		if w := get(t, h, "/recent?state="+state); w.Code != http.StatusBadRequest {
			t.Errorf("unknown state %q: %d", state, w.Code)
		}
	}
	ov := get(t, h, "/").Body.String()
	if i := strings.Index(ov, `id="recent"`); i < 0 || strings.Count(ov[i:], `<tr data-jid=`) != recentOverview {
		t.Errorf("the overview does not list the %d latest ended jobs", recentOverview)
	}
}

// reapedJob writes, as the reaper would, the report and the accounting
// record of a job that has left the spool, owned by user.
func reapedJob(t *testing.T, sp *spool.Spool, jid, user string, j spool.Job) {
	t.Helper()
	at := testNow.Add(-time.Hour)
	j.JID, j.User, j.SubmittedAt = jid, user, at
	j.Schedule = &spool.Schedule{Hosts: []string{"node00", "node01"}, PredictedSeconds: 50, Policy: "easy"}
	j.Run = &spool.RunInfo{StartedAt: at.Add(time.Minute), EndedAt: at.Add(2 * time.Minute), ExitStatus: ptr(0), Attempts: 1}
	j.History = []spool.Event{{State: spool.Queued, At: at}, {State: spool.Finished, At: at.Add(2 * time.Minute)}}
	rep := notify.Render(&j, sp.Path(spool.DirOutput))
	text := fmt.Sprintf("To: %s\nSubject: %s\n\n%s", rep.To, rep.Subject, rep.Body) // as daemons.Reaper writes it
	if err := os.WriteFile(filepath.Join(sp.Path(spool.DirReports), jid+".txt"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	line, _ := json.Marshal(daemons.NewRecord(&j))
	f, err := os.OpenFile(filepath.Join(sp.Path(spool.DirDB), acct.JSONL), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	jidsGiven(t, sp, jid)
}

// A reaped job is resubmitted from its record and report, as its owner;
// one whose request cannot be rebuilt is refused, and says why.
func TestResubmit_ReapedJob(t *testing.T) {
	me := spool.UserName(os.Geteuid())
	b := fixture{Jobs: 20, Hosts: 4, Now: testNow}.build(t)
	reapedJob(t, b.sp, "J500001", me, spool.Job{Name: "sweep", Command: []string{"/bin/sh", "-c", "echo 'a b'"}, Workdir: "/tmp",
		Walltime: spool.Duration(time.Hour), Model: &spool.Model{Name: "sleep", Params: map[string]float64{"T1": 3}}})
	reapedJob(t, b.sp, "J500002", me, spool.Job{Name: "rel", Command: []string{"./a.out"}, SubmitDir: "/home/x"})
	h := handlerFor(b, testNow, "tok")
	sess := loginCookie(t, h)

	page := get(t, h, "/jobs/J500001", sess).Body.String()
	for _, s := range []string{`id="resubmit"`, `id="resubmit-from"`, `<code>/bin/sh -c &#39;echo &#39;\&#39;&#39;a b&#39;\&#39;&#39;&#39;</code>`, `<th>User</th><td>` + me} {
		if !strings.Contains(page, s) {
			t.Errorf("reaped job page lacks %q", s)
		}
	}
	token := csrfRE.FindStringSubmatch(page)[1]
	w := post(h, "/jobs/J500001/resubmit", url.Values{"csrf": {token}}, nil, sess)
	if w.Code != http.StatusSeeOther || !strings.Contains(w.Header().Get("Location"), "msg=resubmit-reaped") {
		t.Fatalf("resubmit: %d %s %s", w.Code, w.Header().Get("Location"), w.Body)
	}
	var got *spool.Job
	es, _ := b.sp.List(spool.Submitted)
	for _, e := range es {
		if strings.HasPrefix(e.Name, "resubmit-J500001") {
			if got, _ = b.sp.Read(spool.Submitted, e.Name); got != nil {
				if uid := ownerOf(t, filepath.Join(b.sp.Dir(spool.Submitted), e.Name)); uid != os.Geteuid() {
					t.Errorf("resubmission owned by %d, want the job's owner %d", uid, os.Geteuid())
				}
			}
		}
	}
	if got == nil {
		t.Fatal("no resubmission in submitted/")
	}
	if got.Name != "sweep" || !slices.Equal(got.Command, []string{"/bin/sh", "-c", "echo 'a b'"}) || got.Workdir != "/tmp" ||
		got.Hosts == nil || got.Hosts.Count != 2 || got.JID != "" || got.History != nil {
		t.Errorf("resubmission %+v (hosts %+v)", got, got.Hosts)
	}

	page = get(t, h, "/jobs/J500002", sess).Body.String()
	if strings.Contains(page, `id="resubmit"`) || !strings.Contains(page, `id="resubmit-not"`) {
		t.Error("a job with relative paths offers Resubmit")
	}
	if w := post(h, "/jobs/J500002/resubmit", url.Values{"csrf": {token}}, nil, sess); w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "relative") {
		t.Errorf("resubmit of a relative job: %d %s", w.Code, w.Body)
	}
	os.Remove(filepath.Join(b.sp.Path(spool.DirReports), "J500001.txt"))
	if w := post(h, "/jobs/J500001/resubmit", url.Values{"csrf": {token}}, nil, sess); w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "report") {
		t.Errorf("resubmit without a report: %d %s", w.Code, w.Body)
	}
}

// A reaped job is resubmitted as the uid it ran as, which its record
// keeps: its user's name may be gone or reused since (found in review).
func TestResubmit_ReapedJobByUID(t *testing.T) {
	b := fixture{Jobs: 5, Hosts: 4, Now: testNow}.build(t)
	uid := os.Geteuid()
	reapedJob(t, b.sp, "J500003", "msched-gone-user", spool.Job{Name: "sweep", Command: []string{"/bin/true"}, Workdir: "/tmp", UID: &uid})
	h := handlerFor(b, testNow, "tok")
	sess := loginCookie(t, h)
	page := get(t, h, "/jobs/J500003", sess).Body.String()
	token := csrfRE.FindStringSubmatch(page)[1]
	w := post(h, "/jobs/J500003/resubmit", url.Values{"csrf": {token}}, nil, sess)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("resubmit: %d %s", w.Code, w.Body)
	}
	es, _ := b.sp.List(spool.Submitted)
	found := false
	for _, e := range es {
		if strings.HasPrefix(e.Name, "resubmit-J500003") {
			found = true
			if got := ownerOf(t, filepath.Join(b.sp.Dir(spool.Submitted), e.Name)); got != uid {
				t.Errorf("resubmission owned by %d, want %d", got, uid)
			}
		}
	}
	if !found {
		t.Error("no resubmission in submitted/")
	}
}
