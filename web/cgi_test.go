package web

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"msched/spool"
)

// The CGI tests run the real msched binary as a web server runs a CGI
// program (RFC 3875): the request in environment variables and stdin, the
// response on stdout as CGI header lines, a blank line and the body.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	binDir    string
)

// TestMain removes the binary built for the CGI tests; it is built on first
// use, so that running only the other tests does not pay for a build.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func mschedBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "msched-cgi-test")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "msched")
		out, err := exec.Command("go", "build", "-o", binPath, "msched/cmd/msched").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

type cgiResponse struct {
	Status int
	Header textproto.MIMEHeader
	Body   string
}

// runCGI runs msched as a CGI program for one request. path is PATH_INFO
// (after the script name /cgi-bin/msched), query the QUERY_STRING.
func runCGI(t *testing.T, spoolDir, method, path, query, body string, extra map[string]string, args ...string) cgiResponse {
	t.Helper()
	cmd := exec.Command(mschedBinary(t), args...)
	env := map[string]string{
		"GATEWAY_INTERFACE": "CGI/1.1",
		"SERVER_SOFTWARE":   "test/1.0",
		"SERVER_NAME":       "status.example.org",
		"SERVER_PORT":       "80",
		"SERVER_PROTOCOL":   "HTTP/1.1",
		"REQUEST_METHOD":    method,
		"SCRIPT_NAME":       "/cgi-bin/msched",
		"PATH_INFO":         path,
		"QUERY_STRING":      query,
		"REQUEST_URI":       "/cgi-bin/msched" + path + map[bool]string{true: "?" + query}[query != ""],
		"REMOTE_ADDR":       "192.0.2.7",
		"REMOTE_PORT":       "40000",
		"HTTP_HOST":         "status.example.org",
		"MSCHED_SPOOL":      spoolDir,
		"MSCHED_LOG_LEVEL":  "warn",
		"PATH":              os.Getenv("PATH"),
	}
	if method == "POST" {
		env["CONTENT_LENGTH"] = strconv.Itoa(len(body))
		env["CONTENT_TYPE"] = "application/x-www-form-urlencoded"
	}
	for k, v := range extra {
		env[k] = v
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = strings.NewReader(body)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("msched as CGI %s %s: %v\nstderr: %s", method, path, err, stderr.String())
	}
	tp := textproto.NewReader(bufio.NewReader(&stdout))
	hdr, err := tp.ReadMIMEHeader()
	if err != nil {
		t.Fatalf("CGI response header: %v\n%s", err, stdout.String())
	}
	rest, _ := io.ReadAll(tp.R)
	r := cgiResponse{Status: 200, Header: hdr, Body: string(rest)}
	if s := hdr.Get("Status"); s != "" {
		r.Status, _ = strconv.Atoi(strings.Fields(s)[0])
	}
	if hdr.Get("Content-Type") == "" {
		t.Errorf("CGI response without Content-Type: %v", hdr)
	}
	return r
}

func TestCGI_RealInvocation(t *testing.T) {
	b := fixture{Jobs: 50, Hosts: 6, Now: testNow}.build(t)
	dir := b.sp.Root()
	token := map[string]string{"MSCHED_WEB_TOKEN": "tok"}

	r := runCGI(t, dir, "GET", "/", "", "", token)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %v", r.Status, r.Header)
	}
	if n := strings.Count(r.Body, `class="bar-rect" data-state="running"`); n != len(b.running) {
		t.Errorf("GET /: %d running bars, want %d", n, len(b.running))
	}
	if !strings.Contains(r.Body, `href="/cgi-bin/msched/hosts"`) {
		t.Error("links are not under SCRIPT_NAME")
	}

	// A query string without '=' is passed as arguments by some servers
	// (RFC 3875 4.4); msched ignores them under GATEWAY_INTERFACE.
	jid := b.byState[spool.Queued][0]
	r = runCGI(t, dir, "GET", "/api/jobs", "state=queued", "", nil, "queued")
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/json" || !strings.Contains(r.Body, `"jid": "`+jid+`"`) {
		t.Errorf("GET /api/jobs?state=queued: %d %v %.200s", r.Status, r.Header, r.Body)
	}
	for _, p := range []string{"/jobs/J123456/output/..", "/jobs/J123456/output/..%2f..%2fdb%2fhosts.yaml", "/jobs/../db/hosts.yaml"} {
		if r := runCGI(t, dir, "GET", p, "", "", nil); r.Status == 200 || strings.Contains(r.Body, "node0") {
			t.Errorf("GET %s: %d %.200s", p, r.Status, r.Body)
		}
	}

	// Log in: POST with a body on stdin; the session comes back as a cookie.
	r = runCGI(t, dir, "POST", "/login", "", url.Values{"token": {"tok"}, "next": {jid}}.Encode(), token)
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/cgi-bin/msched/jobs/"+jid {
		t.Fatalf("POST /login: %d %v %s", r.Status, r.Header, r.Body)
	}
	c, err := http.ParseSetCookie(r.Header.Get("Set-Cookie"))
	if err != nil || c.Name != sessionCookie || c.Path != "/cgi-bin/msched/" || c.SameSite != http.SameSiteStrictMode || !c.HttpOnly {
		t.Fatalf("session cookie %q: %v", r.Header.Get("Set-Cookie"), err)
	}
	cookie := map[string]string{"MSCHED_WEB_TOKEN": "tok", "HTTP_COOKIE": c.Name + "=" + c.Value}
	page := runCGI(t, dir, "GET", "/jobs/"+jid, "", "", cookie)
	m := csrfRE.FindStringSubmatch(page.Body)
	if m == nil {
		t.Fatalf("no CSRF field on the logged-in job page")
	}
	if r := runCGI(t, dir, "POST", "/jobs/"+jid+"/cancel", "", "", cookie); r.Status != http.StatusForbidden {
		t.Errorf("cancel without the CSRF token: %d", r.Status)
	}
	if cancelRequested(t, b.sp, jid) {
		t.Fatal("cancel request written without the CSRF token")
	}
	r = runCGI(t, dir, "POST", "/jobs/"+jid+"/cancel", "", url.Values{"csrf": {m[1]}}.Encode(), cookie)
	if r.Status != http.StatusSeeOther {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	if !cancelRequested(t, b.sp, jid) {
		t.Error("no cancel request in control/")
	}

	// A spool that is not there: a 500 the browser can read.
	r = runCGI(t, filepath.Join(dir, "nope"), "GET", "/", "", "", nil)
	if r.Status != 500 || !strings.Contains(r.Body, "not a spool") || strings.Contains(r.Body, dir) {
		t.Errorf("missing spool: %d %q (the answer must not name the path)", r.Status, r.Body)
	}
}

// TestCGI_LoginStateAcrossProcesses: a CGI program lives for one request,
// so the login limits and the revocation of a session must outlive it.
// And web.hosts, when set, holds under CGI too.
func TestCGI_LoginStateAcrossProcesses(t *testing.T) {
	b := fixture{Jobs: 20, Hosts: 2, Now: testNow}.build(t)
	dir := b.sp.Root()
	jid := b.byState[spool.Finished][0]
	os.WriteFile(filepath.Join(b.sp.Path(spool.DirReports), jid+".txt"), []byte("PRIVATE REPORT\n"), 0o644)
	from := func(addr string, more ...string) map[string]string {
		env := map[string]string{"MSCHED_WEB_TOKEN": "tok", "REMOTE_ADDR": addr}
		for i := 0; i+1 < len(more); i += 2 {
			env[more[i]] = more[i+1]
		}
		return env
	}
	for i := 0; i < loginPerClient.free; i++ {
		if r := runCGI(t, dir, "POST", "/login", "", url.Values{"token": {"wrong"}}.Encode(), from("192.0.2.7")); r.Status != http.StatusForbidden {
			t.Fatalf("failure %d: %d", i+1, r.Status)
		}
	}
	r := runCGI(t, dir, "POST", "/login", "", url.Values{"token": {"tok"}}.Encode(), from("192.0.2.7"))
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" || r.Header.Get("Set-Cookie") != "" {
		t.Errorf("after %d failures in as many processes: %d %v", loginPerClient.free, r.Status, r.Header)
	}

	r = runCGI(t, dir, "POST", "/login", "", url.Values{"token": {"tok"}}.Encode(), from("192.0.2.8"))
	c, err := http.ParseSetCookie(r.Header.Get("Set-Cookie"))
	if r.Status != http.StatusSeeOther || err != nil {
		t.Fatalf("login from another address: %d %v", r.Status, err)
	}
	cookie := from("192.0.2.8", "HTTP_COOKIE", c.Name+"="+c.Value)
	if r := runCGI(t, dir, "GET", "/jobs/"+jid+"/report", "", "", cookie); r.Status != 200 {
		t.Fatalf("report while logged in: %d", r.Status)
	}
	m := csrfRE.FindStringSubmatch(runCGI(t, dir, "GET", "/jobs/"+jid, "", "", cookie).Body)
	if m == nil {
		t.Fatal("no CSRF field on the logged-in job page")
	}
	if r := runCGI(t, dir, "POST", "/logout", "", url.Values{"csrf": {m[1]}}.Encode(), cookie); r.Status != http.StatusSeeOther {
		t.Fatalf("logout: %d %s", r.Status, r.Body)
	}
	if r := runCGI(t, dir, "GET", "/jobs/"+jid+"/report", "", "", cookie); r.Status != http.StatusForbidden || strings.Contains(r.Body, "PRIVATE") {
		t.Errorf("report with the cookie replayed after logout: %d", r.Status)
	}

	for host, want := range map[string]int{"status.example.org": 200, "evil.example": http.StatusMisdirectedRequest} {
		if r := runCGI(t, dir, "GET", "/", "", "", map[string]string{"MSCHED_WEB_HOSTS": "status.example.org", "HTTP_HOST": host}); r.Status != want {
			t.Errorf("web.hosts set, Host %s: %d, want %d", host, r.Status, want)
		}
	}
}

// TestCGI_BehindNetHTTPCGIHandler serves msched as a real web server
// would: net/http/cgi.Handler runs the binary per request.
func TestCGI_BehindNetHTTPCGIHandler(t *testing.T) {
	b := fixture{Jobs: 30, Hosts: 4, Now: testNow}.build(t)
	srv := httptest.NewServer(&cgi.Handler{Path: mschedBinary(t), Root: "/cgi-bin/msched",
		Env: []string{"MSCHED_SPOOL=" + b.sp.Root(), "MSCHED_LOG_LEVEL=warn"}})
	defer srv.Close()
	for path, want := range map[string]string{
		"/cgi-bin/msched/":             `id="gantt"`,
		"/cgi-bin/msched/hosts":        `data-host="node03"`,
		"/cgi-bin/msched/metrics":      `msched_jobs{state="running"} 2`,
		"/cgi-bin/msched/models":       `data-model="all"`,
		"/cgi-bin/msched/schedule.svg": `xmlns="http://www.w3.org/2000/svg"`,
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("%s: %d, want %q in %.300s", path, resp.StatusCode, want, body)
		}
	}
}
