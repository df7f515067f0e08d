package web

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"msched/acct"
	"msched/spool"
)

// The tests of issue 13's web items: the Host header (DNS rebinding),
// login rate limits, logout revoking the session, and error pages without
// absolute paths. They send real HTTP requests to a server on loopback.

// testClock is a settable Config.Now.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// clientFrom is an HTTP client whose connections come from the loopback
// address ip (Linux answers all of 127.0.0.0/8), so that one test server
// sees several client addresses. It does not follow redirects.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{
		Transport:     &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type reply struct {
	Code   int
	Header http.Header
	Body   string
}

func do(t *testing.T, c *http.Client, method, u, host string, form url.Values, cookies ...*http.Cookie) reply {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if host != "" {
		req.Host = host
	}
	for _, ck := range cookies {
		req.AddCookie(ck)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

func sessionFrom(r reply) *http.Cookie {
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == sessionCookie && c.Value != "" {
			return c
		}
	}
	return nil
}

// A request whose Host is not a name the page answers to is refused
// before anything is read: a DNS-rebinding page (evil.example re-pointed
// at 127.0.0.1) is same-origin with the status page for the browser, but
// not for the Host header.
func TestHost_RealServerRefusesOtherNames(t *testing.T) {
	b := fixture{Jobs: 20, Hosts: 2, Now: testNow}.build(t)
	hosts, err := AllowHosts("127.0.0.1:0", []string{"status.example.org"})
	if err != nil {
		t.Fatal(err)
	}
	h := New(Config{Spool: b.sp, Token: "tok", Hosts: hosts, Now: func() time.Time { return testNow },
		Log: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	addrc, errc := make(chan net.Addr, 1), make(chan error, 1)
	go func() {
		errc <- ListenAndServe(ctx, "127.0.0.1:0", h, slog.New(slog.DiscardHandler), func(a net.Addr) { addrc <- a })
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-errc:
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Error(err)
		}
	})
	port := addr.(*net.TCPAddr).Port
	base := "http://" + addr.String()
	c := clientFrom("127.0.0.1")
	for host, want := range map[string]int{
		"":                                             200, // the client's own: 127.0.0.1:port
		"localhost":                                    200,
		"LOCALHOST.:" + strconv.Itoa(port):             200,
		"[::1]:" + strconv.Itoa(port):                  200,
		"status.example.org":                           200,
		"Status.Example.Org:443":                       200,
		"evil.example:" + strconv.Itoa(port):           421,
		"127.0.0.1.evil.example":                       421,
		"10.0.0.1:" + strconv.Itoa(port):               421, // listening on loopback only
		"status.example.org.evil.example":              421,
		"localhost.evil.example:" + strconv.Itoa(port): 421,
	} {
		for _, path := range []string{"/", "/api/jobs", "/login"} {
			r := do(t, c, "GET", base+path, host, nil)
			if r.Code != want {
				t.Errorf("Host %q %s: %d, want %d", host, path, r.Code, want)
			}
			if want == 421 && (strings.Contains(r.Body, "evil") || strings.Contains(r.Body, "node0") || !strings.Contains(r.Body, "web.hosts")) {
				t.Errorf("Host %q %s: body %q", host, path, r.Body)
			}
		}
	}
	// A login from a rebinding page gets no session.
	r := do(t, c, "POST", base+"/login", "evil.example:"+strconv.Itoa(port), url.Values{"token": {"tok"}})
	if r.Code != 421 || sessionFrom(r) != nil {
		t.Errorf("login under another Host: %d, cookie %v", r.Code, sessionFrom(r))
	}
}

func TestAllowHosts_ByListenAddress(t *testing.T) {
	hn, _ := os.Hostname()
	for _, c := range []struct {
		listen string
		names  []string
		yes    []string
		no     []string
	}{
		{"127.0.0.1:8080", nil, []string{"127.0.0.1:8080", "localhost:8080", "[::1]:8080"}, []string{"evil.example", "10.1.1.1:8080", ""}},
		{"localhost:8080", nil, []string{"localhost", "127.0.0.1:8080"}, []string{"evil.example"}},
		{"[::1]:8080", nil, []string{"[::1]:8080", "localhost"}, []string{"evil.example"}},
		{"192.0.2.5:8080", nil, []string{"192.0.2.5:8080"}, []string{"localhost", "127.0.0.1", "192.0.2.6", "evil.example"}},
		{"sched.example.org:8080", []string{"sched"}, []string{"sched.example.org:8080", "sched:8080"}, []string{"localhost", "evil.example"}},
		{":8080", nil, []string{"192.0.2.5:8080", "[2001:db8::1]:8080", "localhost:8080", hn}, []string{"evil.example"}},
		{"0.0.0.0:8080", []string{"status.example.org"}, []string{"10.0.0.1", "status.example.org"}, []string{"evil.example"}},
		{"", []string{"status.example.org"}, []string{"status.example.org"}, []string{"localhost", "127.0.0.1", "evil.example"}},
	} {
		a, err := AllowHosts(c.listen, c.names)
		if err != nil {
			t.Fatalf("%q: %v", c.listen, err)
		}
		for _, h := range c.yes {
			if !a.Allows(h) {
				t.Errorf("listen %q %v: %q refused", c.listen, c.names, h)
			}
		}
		for _, h := range c.no {
			if a.Allows(h) {
				t.Errorf("listen %q %v: %q allowed", c.listen, c.names, h)
			}
		}
	}
	for _, bad := range []string{"", "*.example.org", "a b"} {
		if _, err := AllowHosts("", []string{bad}); err == nil {
			t.Errorf("web.hosts entry %q accepted", bad)
		}
	}
}

// Failed logins lock a client address after loginPerClient.free of them,
// and every address once loginPerAccount.free failures have been made from
// anywhere; a locked login is answered 429 with Retry-After, whatever the
// token, and a lock ends after its time.
func TestLogin_RateLimitedPerClientAndAccount(t *testing.T) {
	b := fixture{Jobs: 20, Hosts: 2, Now: testNow}.build(t)
	clk := &testClock{t: testNow}
	srv := httptest.NewServer(New(Config{Spool: b.sp, Token: "tok", Now: clk.Now, Log: slog.New(slog.DiscardHandler)}))
	defer srv.Close()
	login := func(ip, token string) reply {
		t.Helper()
		return do(t, clientFrom(ip), "POST", srv.URL+"/login", "", url.Values{"token": {token}})
	}
	for i := 0; i < loginPerClient.free; i++ {
		if r := login("127.0.0.1", "wrong"); r.Code != http.StatusForbidden {
			t.Fatalf("failure %d: %d %q", i+1, r.Code, r.Body)
		}
	}
	r := login("127.0.0.1", "tok")
	if r.Code != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "60" || sessionFrom(r) != nil {
		t.Fatalf("after %d failures, the right token: %d Retry-After %q cookie %v", loginPerClient.free, r.Code, r.Header.Get("Retry-After"), sessionFrom(r))
	}
	if !strings.Contains(r.Body, "Too many failed logins") {
		t.Errorf("429 body: %q", r.Body)
	}
	if r := login("127.0.0.2", "tok"); r.Code != http.StatusSeeOther || sessionFrom(r) == nil {
		t.Errorf("another address: %d", r.Code)
	}
	clk.Add(59 * time.Second)
	if r := login("127.0.0.1", "tok"); r.Code != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "1" {
		t.Errorf("59 s later: %d Retry-After %q", r.Code, r.Header.Get("Retry-After"))
	}
	clk.Add(time.Second)
	// The lock is over; one more failure locks again, for twice as long.
	if r := login("127.0.0.1", "wrong"); r.Code != http.StatusForbidden {
		t.Errorf("after the lock, a wrong token: %d", r.Code)
	}
	if r := login("127.0.0.1", "tok"); r.Code != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "120" {
		t.Errorf("a failure after a lock: %d Retry-After %q, want 429 for 120 s", r.Code, r.Header.Get("Retry-After"))
	}
	clk.Add(2 * time.Minute)
	if r := login("127.0.0.1", "tok"); r.Code != http.StatusSeeOther {
		t.Errorf("after the second lock, the right token: %d", r.Code)
	}

	// Failures from many addresses lock the account: a guesser cannot go
	// on by changing address. 6 so far (the success forgave .1's own).
	clk.Add(2 * forgetFailures) // and old failures are forgotten
	for i := 0; i < loginPerAccount.free; i++ {
		ip := "127.0.1." + strconv.Itoa(10+i/(loginPerClient.free-1)) // below each address's own limit
		if r := login(ip, "wrong"); r.Code != http.StatusForbidden {
			t.Fatalf("account failure %d from %s: %d", i+1, ip, r.Code)
		}
	}
	r = login("127.0.2.1", "tok")
	if r.Code != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "60" {
		t.Errorf("after %d failures from several addresses, a new one: %d Retry-After %q", loginPerAccount.free, r.Code, r.Header.Get("Retry-After"))
	}
}

// Attempts made at the same time count too: of a burst of wrong tokens
// from one address, at most loginPerClient.free are checked.
func TestLogin_ParallelBurstIsLimited(t *testing.T) {
	b := fixture{Jobs: 10, Hosts: 2, Now: testNow}.build(t)
	srv := httptest.NewServer(New(Config{Spool: b.sp, Token: "tok", Now: func() time.Time { return testNow }, Log: slog.New(slog.DiscardHandler)}))
	defer srv.Close()
	const burst = 30
	codes := make(chan int, burst)
	var wg sync.WaitGroup
	for i := 0; i < burst; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := clientFrom("127.0.0.1").PostForm(srv.URL+"/login", url.Values{"token": {"wrong"}})
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	n := map[int]int{}
	for c := range codes {
		n[c]++
	}
	if n[http.StatusForbidden] > loginPerClient.free || n[http.StatusForbidden]+n[http.StatusTooManyRequests] != burst {
		t.Errorf("burst of %d wrong tokens: %v, want at most %d checked (403), the rest 429", burst, n, loginPerClient.free)
	}
}

// After logout the session's cookie is worth nothing, even replayed.
func TestLogout_RevokesTheSession(t *testing.T) {
	b := fixture{Jobs: 40, Hosts: 4, Now: testNow}.build(t)
	jid := b.byState[spool.Queued][0]
	out := filepath.Join(b.sp.Path(spool.DirOutput), jid)
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(out, "stdout"), []byte("PRIVATE OUTPUT\n"), 0o644)
	srv := httptest.NewServer(handlerFor(b, testNow, "tok"))
	defer srv.Close()
	c := clientFrom("127.0.0.1")

	sess := sessionFrom(do(t, c, "POST", srv.URL+"/login", "", url.Values{"token": {"tok"}}))
	if sess == nil {
		t.Fatal("login set no session cookie")
	}
	page := do(t, c, "GET", srv.URL+"/jobs/"+jid, "", nil, sess)
	m := csrfRE.FindStringSubmatch(page.Body)
	if m == nil {
		t.Fatal("no CSRF field on the logged-in job page")
	}
	if r := do(t, c, "GET", srv.URL+"/jobs/"+jid+"/output/stdout", "", nil, sess); r.Code != 200 {
		t.Fatalf("output while logged in: %d", r.Code)
	}
	r := do(t, c, "POST", srv.URL+"/logout", "", url.Values{"csrf": {m[1]}}, sess)
	if r.Code != http.StatusSeeOther {
		t.Fatalf("logout: %d %q", r.Code, r.Body)
	}

	// The copy of the cookie kept from before the logout.
	if r := do(t, c, "GET", srv.URL+"/jobs/"+jid+"/output/stdout", "", nil, sess); r.Code != http.StatusForbidden || strings.Contains(r.Body, "PRIVATE") {
		t.Errorf("output with the cookie after logout: %d %q", r.Code, r.Body)
	}
	if r := do(t, c, "GET", srv.URL+"/jobs/"+jid, "", nil, sess); csrfRE.MatchString(r.Body) {
		t.Error("the job page after logout still shows the logged-in forms")
	}
	if r := do(t, c, "POST", srv.URL+"/jobs/"+jid+"/cancel", "", url.Values{"csrf": {m[1]}}, sess); r.Code != http.StatusForbidden {
		t.Errorf("cancel with the cookie after logout: %d %q", r.Code, r.Body)
	}
	if cancelRequested(t, b.sp, jid) {
		t.Error("a cancel request was written for a revoked session")
	}
	// Logging in again gives a new session that works.
	sess2 := sessionFrom(do(t, c, "POST", srv.URL+"/login", "", url.Values{"token": {"tok"}}))
	if sess2 == nil || sess2.Value == sess.Value {
		t.Fatalf("second login: %v", sess2)
	}
	if r := do(t, c, "GET", srv.URL+"/jobs/"+jid+"/output/stdout", "", nil, sess2); r.Code != 200 {
		t.Errorf("output with a new session: %d", r.Code)
	}
}

// Errors reach the browser without the spool's or any other absolute path;
// the log has them whole.
func TestErrors_NoAbsolutePathsInPages(t *testing.T) {
	b := fixture{Jobs: 20, Hosts: 2, Now: testNow}.build(t)
	root := b.sp.Root()
	db := b.sp.Path(spool.DirDB)
	// Files the page reads that cannot be read: a directory in their place.
	for _, f := range []string{spool.ScheduleFile, acct.JSONL} {
		os.Remove(filepath.Join(db, f))
		if err := os.Mkdir(filepath.Join(db, f), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var logBuf bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logBuf}, nil))
	srv := httptest.NewServer(New(Config{Spool: b.sp, Token: "tok", HostsFile: "/nonexistent/etc/msched/hosts.yaml",
		Now: func() time.Time { return testNow }, Log: log}))
	defer srv.Close()
	c := clientFrom("127.0.0.1")
	for _, path := range []string{"/", "/?fragment=1", "/hosts", "/models", "/schedule.svg",
		"/api/schedule", "/api/hosts", "/api/models", "/metrics"} {
		r := do(t, c, "GET", srv.URL+path, "", nil)
		if r.Code == 200 && path != "/" && path != "/?fragment=1" && path != "/hosts" && path != "/metrics" {
			t.Errorf("%s: 200 with an unreadable file", path)
		}
		for _, leak := range []string{root, filepath.Dir(root), "/nonexistent"} {
			if strings.Contains(r.Body, leak) {
				t.Errorf("%s: %d, the body names %s: %.400s", path, r.Code, leak, r.Body)
			}
		}
		if path == "/api/schedule" && !strings.Contains(r.Body, "schedule.json") {
			t.Errorf("%s: the error no longer says what failed: %q", path, r.Body)
		}
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logBuf.String(), filepath.Join(db, spool.ScheduleFile)) {
		t.Errorf("the log lacks the full path: %s", logBuf.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestPublicMessage(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"web: schedule: read /srv/spool/db/schedule.json: is a directory", "web: schedule: read <spool>/db/schedule.json: is a directory"},
		{"spool: /srv/spool: not a spool", "spool: <spool>: not a spool"},
		{`open "/etc/msched/hosts.yaml": permission denied`, `open ".../hosts.yaml": permission denied`},
		{"rename /srv/spool/tmp/x /srv/spool/control/cancel.J000001: no space", "rename <spool>/tmp/x <spool>/control/cancel.J000001: no space"},
		{"path=/srv/spoolother/x", "path=.../x"},
		{"J000001 is running: nothing to cancel", "J000001 is running: nothing to cancel"},
	} {
		if got := PublicMessage(errors.New(c.in), "/srv/spool/"); got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}
