package web

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"msched/spool"
)

// ownerOf is the owner uid of path (not following a link).
func ownerOf(t *testing.T, path string) int {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid)
}

// A job's captured output and report are its owner's: the page, which may
// run as root and answer every local user, shows them to the operator (a
// session logged in with web.token) and to nobody else, and says why.
func TestOutput_OperatorOnly(t *testing.T) {
	b := fixture{Jobs: 40, Hosts: 4, Now: testNow}.build(t)
	jid := b.byState[spool.Finished][0]
	out := filepath.Join(b.sp.Path(spool.DirOutput), jid)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(out, "stdout"), []byte("PRIVATE OUTPUT\n"), 0o644)
	os.WriteFile(filepath.Join(b.sp.Path(spool.DirReports), jid+".txt"), []byte("PRIVATE REPORT\n"), 0o644)

	withToken := handlerFor(b, testNow, "tok")
	sess := loginCookie(t, withToken)
	// A live session of a page with another token: only the MAC refuses it.
	otherCookie := liveSession(t, handlerFor(b, testNow, "other")).Value
	for _, c := range []struct {
		name    string
		h       http.Handler
		cookies []*http.Cookie
		want    int
	}{
		{"no token configured", handlerFor(b, testNow, ""), nil, http.StatusForbidden},
		{"not logged in", withToken, nil, http.StatusForbidden},
		{"session signed with another token", withToken, []*http.Cookie{{Name: sessionCookie, Value: otherCookie}}, http.StatusForbidden},
		{"operator", withToken, []*http.Cookie{sess}, http.StatusOK},
	} {
		for _, p := range []string{"/jobs/" + jid + "/output/stdout", "/jobs/" + jid + "/report"} {
			w := get(t, c.h, p, c.cookies...)
			body := w.Body.String()
			if w.Code != c.want {
				t.Errorf("%s: %s: %d, want %d", c.name, p, w.Code, c.want)
			}
			if c.want == http.StatusForbidden {
				if strings.Contains(body, "PRIVATE") {
					t.Errorf("%s: %s shows the job's output or report", c.name, p)
				}
				if !strings.Contains(body, "operator") || !strings.Contains(body, "msched status "+jid) {
					t.Errorf("%s: %s: the refusal does not say why or where the owner looks: %q", c.name, p, body)
				}
			} else if !strings.Contains(body, "PRIVATE") {
				t.Errorf("%s: %s: %q", c.name, p, body)
			}
		}
		page := get(t, c.h, "/jobs/"+jid, c.cookies...).Body.String()
		linked := strings.Contains(page, "/jobs/"+jid+"/output/stdout") || strings.Contains(page, "/jobs/"+jid+"/report\"")
		if linked != (c.want == http.StatusOK) {
			t.Errorf("%s: job page links the output: %v", c.name, linked)
		}
		if c.want == http.StatusForbidden && !strings.Contains(page, `id="output-private"`) {
			t.Errorf("%s: job page does not say the output is the operator's only", c.name)
		}
	}
}

// Resubmitting a job whose owner cannot be told (a job file from before
// msched recorded the uid, naming no user of this system) is refused: the
// file would be the page's own user's, root's when run by `msched up`.
func TestResubmit_UnknownOwnerRefused(t *testing.T) {
	b := fixture{Jobs: 40, Hosts: 4, Now: testNow}.build(t)
	jid := b.byState[spool.Queued][0]
	j, err := b.sp.Read(spool.Queued, jid)
	if err != nil {
		t.Fatal(err)
	}
	j.UID, j.User = nil, "no-such-user-msched-test"
	data, err := j.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := spool.WriteAtomic(b.sp.Dir(spool.Queued), jid, data); err != nil {
		t.Fatal(err)
	}
	h := handlerFor(b, testNow, "tok")
	sess := loginCookie(t, h)
	token := csrfRE.FindStringSubmatch(get(t, h, "/jobs/"+jid, sess).Body.String())[1]
	w := post(h, "/jobs/"+jid+"/resubmit", url.Values{"csrf": {token}}, nil, sess)
	if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "no-such-user-msched-test") {
		t.Errorf("resubmit of an ownerless job: %d %q", w.Code, w.Body)
	}
	es, _ := b.sp.List(spool.Submitted)
	for _, e := range es {
		if strings.HasPrefix(e.Name, "resubmit-") {
			t.Errorf("%s was submitted", e.Name)
		}
	}
}
