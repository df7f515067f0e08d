package notify_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"msched/daemons"
	"msched/notify"
	"msched/spool"
)

// ended is the state the reaper reports ended jobs from (spool.Removable:
// exited/ before the reaper took finished/ over, finished/ since).
var ended = spool.Removable[0]

// waitBound bounds every wait of these tests; the deliveries they wait for
// take milliseconds, but CI is a loaded machine: the bound is generous.
const waitBound = 30 * time.Second

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// fastRetry makes the retry schedule milliseconds long.
var fastRetry = notify.Retry{First: 20 * time.Millisecond, MaxDelay: time.Second, Attempts: 5, MaxAge: time.Hour}

func configFor(s *smtpServer) notify.MailConfig {
	return notify.MailConfig{Host: s.Host, Port: s.Port, From: "msched@example.org", Hostname: "msched.test",
		Timeout: waitBound, Retry: fastRetry}
}

// openMailer opens a Mailer on db (a fresh directory when ""), closed when
// the test ends.
func openMailer(t *testing.T, cfg notify.MailConfig, db string) (*notify.Mailer, string) {
	t.Helper()
	if db == "" {
		db = t.TempDir()
	}
	m, err := notify.OpenMailer(cfg, db, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, db
}

// report renders the report of a job that exited with status 3.
func report(jid, name, to string) notify.Report {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	three := 3
	return notify.Render(&spool.Job{JID: jid, Name: name, User: "alice", Notify: to, Command: []string{"./sim"},
		SubmittedAt: t0, Run: &spool.RunInfo{StartedAt: t0.Add(time.Second), EndedAt: t0.Add(time.Minute), ExitStatus: &three}},
		os.TempDir())
}

func failures(t *testing.T, db string) []notify.MailFailure {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(db, notify.MailFailures))
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	var fs []notify.MailFailure
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" {
			continue
		}
		var f notify.MailFailure
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatalf("bad failure line %q: %v", l, err)
		}
		fs = append(fs, f)
	}
	return fs
}

func queueFiles(t *testing.T, db string) []string {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(db, notify.MailQueueDir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		// Not sent/ (the marks of reports done with), nor the dot-file
		// staging of a queue file being rewritten.
		if !de.IsDir() && !strings.HasPrefix(de.Name(), ".") {
			names = append(names, de.Name())
		}
	}
	return names
}

// parse reads a received message and decodes its body.
func parse(t *testing.T, data []byte) (*mail.Message, string) {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("received message does not parse: %v\n%s", err, data)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "text/plain" || !strings.EqualFold(params["charset"], "utf-8") {
		t.Errorf("Content-Type %q, want text/plain; charset=utf-8", msg.Header.Get("Content-Type"))
	}
	var body io.Reader = msg.Body
	switch cte := strings.ToLower(msg.Header.Get("Content-Transfer-Encoding")); cte {
	case "quoted-printable":
		body = quotedprintable.NewReader(msg.Body)
	case "", "7bit", "8bit":
	default:
		t.Fatalf("unexpected Content-Transfer-Encoding %q", cte)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	return msg, string(b)
}

func TestMailer_DeliversReportWithHeadersAndBody(t *testing.T) {
	s := startSMTP(t, plainServer, nil)
	m, db := openMailer(t, configFor(s), "")
	// A name that is not ASCII and tries to smuggle in a header.
	rep := report("J000042", "Partikel ü\nBcc: eve@example.org", "bob@example.org")
	before := time.Now().Add(-time.Second)
	if err := m.Notify(context.Background(), rep); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the message arrives", func() bool { return len(s.messages()) == 1 })
	got := s.messages()[0]
	if got.From != "msched@example.org" || len(got.To) != 1 || got.To[0] != "bob@example.org" {
		t.Errorf("envelope from %q to %q", got.From, got.To)
	}
	msg, body := parse(t, got.Data)
	h := msg.Header
	if a, err := mail.ParseAddress(h.Get("From")); err != nil || a.Address != "msched@example.org" {
		t.Errorf("From %q (%v)", h.Get("From"), err)
	}
	if a, err := mail.ParseAddress(h.Get("To")); err != nil || a.Address != "bob@example.org" {
		t.Errorf("To %q (%v)", h.Get("To"), err)
	}
	head, _, _ := strings.Cut(string(got.Data), "\r\n\r\n")
	if h.Get("Bcc") != "" || strings.Contains(head, "\nBcc:") {
		t.Errorf("the job name injected a header:\n%s", got.Data)
	}
	raw := h.Get("Subject")
	if !strings.Contains(raw, "=?") {
		t.Errorf("non-ASCII Subject not RFC 2047-encoded: %q", raw)
	}
	subj, err := new(mime.WordDecoder).DecodeHeader(raw)
	if err != nil {
		t.Fatal(err)
	}
	if want := "msched: job J000042 (Partikel ü Bcc: eve@example.org) exited with status 3"; subj != want {
		t.Errorf("Subject %q, want %q", subj, want)
	}
	date, err := h.Date()
	if err != nil || date.Before(before) || date.After(time.Now().Add(time.Second)) {
		t.Errorf("Date %q (%v), want about now", h.Get("Date"), err)
	}
	if id := h.Get("Message-ID"); !regexp.MustCompile(`^<msched\.J000042\.[0-9]+\.[0-9a-f]+@msched\.test>$`).MatchString(id) {
		t.Errorf("Message-ID %q", id)
	}
	if jid := h.Get(notify.HeaderJID); jid != "J000042" {
		t.Errorf("%s %q", notify.HeaderJID, jid)
	}
	if strings.ReplaceAll(body, "\r\n", "\n") != rep.Body {
		t.Errorf("body differs from the report:\n%q\nwant\n%q", body, rep.Body)
	}
	for _, want := range []string{"JID:         J000042", "Exit status: 3", `Job:         "Partikel ü\nBcc: eve@example.org"`} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q", want)
		}
	}
	eventually(t, "the queue is empty", func() bool { return m.Pending() == 0 && len(queueFiles(t, db)) == 0 })
	if f := failures(t, db); f != nil {
		t.Errorf("failures recorded: %+v", f)
	}
}

func TestMailer_NoAddressIsNotMailed(t *testing.T) {
	s := startSMTP(t, plainServer, nil)
	m, db := openMailer(t, configFor(s), "")
	if err := m.Notify(context.Background(), report("J000001", "x", "")); err != nil { // To is the user, "alice"
		t.Fatalf("a report for a bare user name: %v", err)
	}
	// A malformed address can never be mailed: recorded as given up, and
	// not an error, which would make the reaper hand it over again.
	if err := m.Notify(context.Background(), report("J000002", "x", "bob@")); err != nil {
		t.Errorf("a malformed notify address: %v; want nil and a failure record", err)
	}
	// Handed over again (a reaper killed before it removed the job): not
	// recorded twice.
	if err := m.Notify(context.Background(), report("J000002", "x", "bob@")); err != nil {
		t.Errorf("the same report again: %v", err)
	}
	if f := failures(t, db); len(f) != 1 || f[0].JID != "J000002" || !f[0].Permanent || f[0].Attempts != 0 {
		t.Errorf("failures %+v; want J000002, permanent, no attempt", f)
	}
	if n := len(queueFiles(t, db)); n != 0 || m.Pending() != 0 {
		t.Errorf("%d queue files, %d pending; want none", n, m.Pending())
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(s.attempts()); n != 0 {
		t.Errorf("%d deliveries attempted, want none", n)
	}
}

func TestMailer_TLSAndAuth(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pwFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mode serverMode
		edit func(*notify.MailConfig)
	}{
		{"starttls always, password", startTLSServer, func(c *notify.MailConfig) { c.StartTLS = notify.StartTLSAlways; c.Password = "s3cret" }},
		{"starttls if offered, password file", startTLSServer, func(c *notify.MailConfig) { c.PasswordFile = pwFile }},
		{"implicit TLS", implicitTLS, func(c *notify.MailConfig) { c.TLS = true; c.Password = "s3cret" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSMTP(t, tc.mode, func(s *smtpServer) { s.user, s.pass = "alice", "s3cret" })
			cfg := configFor(s)
			cfg.Username = "alice"
			cfg.TLSConfig = newTLSConfig(s)
			tc.edit(&cfg)
			m, db := openMailer(t, cfg, "")
			if err := m.Notify(context.Background(), report("J000007", "tls", "bob@example.org")); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the message arrives", func() bool { return len(s.messages()) == 1 })
			if got := s.messages()[0]; !got.TLS || got.User != "alice" {
				t.Errorf("received with TLS %v as user %q; want TLS as alice", got.TLS, got.User)
			}
			eventually(t, "the queue is empty", func() bool { return len(queueFiles(t, db)) == 0 })
		})
	}

	t.Run("wrong password", func(t *testing.T) {
		s := startSMTP(t, startTLSServer, func(s *smtpServer) { s.user, s.pass = "alice", "s3cret" })
		cfg := configFor(s)
		cfg.Username, cfg.Password, cfg.TLSConfig = "alice", "wrong", newTLSConfig(s)
		cfg.Retry.Attempts = 2
		m, db := openMailer(t, cfg, "")
		if err := m.Notify(context.Background(), report("J000008", "auth", "bob@example.org")); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the report is given up", func() bool { return len(failures(t, db)) == 1 })
		f := failures(t, db)[0]
		if f.JID != "J000008" || f.Permanent || f.Attempts != 2 || !strings.Contains(f.Error, "535") {
			t.Errorf("failure %+v; want J000008 after 2 attempts, not permanent, with the 535", f)
		}
		s.mu.Lock()
		authFail := s.authFail
		s.mu.Unlock()
		if authFail != 2 || len(s.messages()) != 0 {
			t.Errorf("%d AUTH failures and %d messages at the server; want 2 and none", authFail, len(s.messages()))
		}
	})

	t.Run("untrusted certificate", func(t *testing.T) {
		s := startSMTP(t, startTLSServer, nil)
		cfg := configFor(s) // no RootCAs: the self-signed certificate is not trusted
		cfg.Retry.Attempts = 1
		m, db := openMailer(t, cfg, "")
		if err := m.Notify(context.Background(), report("J000009", "tls", "bob@example.org")); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the report is given up", func() bool { return len(failures(t, db)) == 1 })
		if f := failures(t, db)[0]; !strings.Contains(f.Error, "certificate") || len(s.messages()) != 0 {
			t.Errorf("failure %+v, %d messages; want a certificate error and none", f, len(s.messages()))
		}
	})
}

// newTLSConfig trusts the server's self-signed certificate.
func newTLSConfig(s *smtpServer) *tls.Config { return &tls.Config{RootCAs: s.CA} }

func TestMailer_TemporaryFailureIsRetriedWithBackoff(t *testing.T) {
	s := startSMTP(t, plainServer, func(s *smtpServer) { s.tempFails = 3 })
	cfg := configFor(s)
	cfg.Retry = notify.Retry{First: 30 * time.Millisecond, MaxDelay: time.Second, Attempts: 5, MaxAge: time.Hour}
	m, db := openMailer(t, cfg, "")
	if err := m.Notify(context.Background(), report("J000010", "retry", "bob@example.org")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the message arrives", func() bool { return len(s.messages()) == 1 })
	at := s.attempts()
	if len(at) != 4 {
		t.Fatalf("%d attempts, want 4 (3 answered 451)", len(at))
	}
	for i, want := range []time.Duration{30 * time.Millisecond, 60 * time.Millisecond, 120 * time.Millisecond} {
		if gap := at[i+1].Sub(at[i]); gap < want {
			t.Errorf("gap before attempt %d: %v, want ≥ %v", i+2, gap, want)
		}
	}
	// The retried message is the queued one, not a new one.
	msg, _ := parse(t, s.messages()[0].Data)
	s.mu.Lock()
	rejected := s.rejected
	s.mu.Unlock()
	if len(rejected) != 3 {
		t.Fatalf("%d messages answered 451, want 3", len(rejected))
	}
	for _, r := range rejected {
		first, _ := parse(t, r)
		if first.Header.Get("Message-ID") != msg.Header.Get("Message-ID") {
			t.Errorf("retry changed the Message-ID: %q then %q", first.Header.Get("Message-ID"), msg.Header.Get("Message-ID"))
		}
	}
	eventually(t, "the queue is empty", func() bool { return len(queueFiles(t, db)) == 0 })
	if f := failures(t, db); f != nil {
		t.Errorf("failures recorded: %+v", f)
	}
}

func TestMailer_PermanentFailureIsNotRetried(t *testing.T) {
	s := startSMTP(t, plainServer, func(s *smtpServer) { s.rcptCode = 550 })
	cfg := configFor(s)
	cfg.Retry.First = 5 * time.Millisecond
	m, db := openMailer(t, cfg, "")
	if err := m.Notify(context.Background(), report("J000011", "gone", "nobody@example.org")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the report is given up", func() bool { return len(failures(t, db)) == 1 })
	time.Sleep(20 * cfg.Retry.First) // room for the retries that must not come
	if n := len(s.attempts()); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
	f := failures(t, db)[0]
	if !f.Permanent || f.Attempts != 1 || f.To != "nobody@example.org" || !strings.Contains(f.Error, "550") ||
		!strings.HasPrefix(f.MessageID, "msched.J000011.") {
		t.Errorf("failure %+v", f)
	}
	if m.Pending() != 0 || len(queueFiles(t, db)) != 0 || len(s.messages()) != 0 {
		t.Errorf("pending %d, queue %v, messages %d; want none", m.Pending(), queueFiles(t, db), len(s.messages()))
	}
}

func TestMailer_GivesUpAfterMaxAttempts(t *testing.T) {
	s := startSMTP(t, plainServer, func(s *smtpServer) { s.tempFails = 100 })
	cfg := configFor(s)
	cfg.Retry = notify.Retry{First: 5 * time.Millisecond, MaxDelay: 10 * time.Millisecond, Attempts: 4, MaxAge: time.Hour}
	m, db := openMailer(t, cfg, "")
	if err := m.Notify(context.Background(), report("J000012", "busy", "bob@example.org")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the report is given up", func() bool { return len(failures(t, db)) == 1 })
	time.Sleep(10 * cfg.Retry.MaxDelay) // room for an attempt too many
	if n := len(s.attempts()); n != 4 {
		t.Errorf("%d attempts, want 4", n)
	}
	if f := failures(t, db)[0]; f.Permanent || f.Attempts != 4 || !strings.Contains(f.Error, "451") {
		t.Errorf("failure %+v; want 4 attempts, temporary, with the 451", f)
	}
	if m.Pending() != 0 || len(queueFiles(t, db)) != 0 {
		t.Errorf("pending %d, queue %v; want none", m.Pending(), queueFiles(t, db))
	}
}

func TestMailer_GivesUpAtMaxAge(t *testing.T) {
	s := startSMTP(t, plainServer, func(s *smtpServer) { s.tempFails = 100 })
	cfg := configFor(s)
	// Attempts at about 0, 10, 30, 70, 150, 310 and 630 ms; the next would
	// come at about 1270 ms, after MaxAge: given up at the seventh failure.
	// Each attempt's own duration pushes the next ones back, so a loaded
	// machine makes fewer: what is checked is the rule, not the count.
	cfg.Retry = notify.Retry{First: 10 * time.Millisecond, MaxDelay: time.Hour, Attempts: 100, MaxAge: time.Second}
	delay := func(n int) time.Duration { // the wait after the n-th failure (Retry)
		return min(cfg.Retry.First<<(n-1), cfg.Retry.MaxDelay)
	}
	m, db := openMailer(t, cfg, "")
	before := time.Now() // the report's Date, from which ages count, is later
	if err := m.Notify(context.Background(), report("J000015", "old", "bob@example.org")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the report is given up", func() bool { return len(failures(t, db)) == 1 })
	// The failure is recorded before the report leaves the queue (so that a
	// crash between the two loses nothing): wait for the second step.
	eventually(t, "the queue emptied", func() bool { return m.Pending() == 0 && len(queueFiles(t, db)) == 0 })
	f, at := failures(t, db)[0], s.attempts()
	n := len(at)
	if f.Permanent || f.Attempts != n || !strings.Contains(f.Error, "451") {
		t.Errorf("failure %+v after %d attempts at the server; want temporary, with the 451, counting them all", f, n)
	}
	if n < 2 {
		t.Fatalf("given up after %d attempt; want retries until MaxAge", n)
	}
	// Each retry was due within MaxAge of the report's Date: attempt n was
	// due delay(n-1) after attempt n-1 failed, which is after it began at
	// the server (at[n-2]), and the Date precedes the first attempt.
	if due := at[n-2].Add(delay(n - 1)); due.Sub(at[0]) > cfg.Retry.MaxAge {
		t.Errorf("attempt %d was due %v after the first, past MaxAge %v: a retry too many", n, due.Sub(at[0]), cfg.Retry.MaxAge)
	}
	// Given up only when the next attempt would come after MaxAge.
	if next := f.At.Add(delay(n)); !next.After(before.Add(cfg.Retry.MaxAge)) {
		t.Errorf("given up at %v with the next attempt due %v after the report, within MaxAge %v: given up too early",
			f.At, next.Sub(before), cfg.Retry.MaxAge)
	}
	time.Sleep(delay(n) + 100*time.Millisecond) // room for the attempt that would have come next (there is no queue but the files)
	if got := len(s.attempts()); got != n || len(failures(t, db)) != 1 {
		t.Errorf("%d attempts and %d failures now, %d and 1 when given up: it went on", got, len(failures(t, db)), n)
	}
}

// A report queued and deferred by one Mailer is delivered by the next one
// on the same db/, no earlier than it was due, as the same message.
func TestMailer_PendingRetriesSurviveARestart(t *testing.T) {
	// The first Mailer's server refuses the first attempt and holds every
	// retry until the test ends: however late m1.Close comes, m1 delivers
	// nothing. The second Mailer mails through another server, so what
	// arrives there is m2's.
	s1 := startSMTP(t, plainServer, func(s *smtpServer) { s.tempFails, s.holdAfter = 1, 1 })
	cfg := configFor(s1)
	cfg.Retry.First = 300 * time.Millisecond
	m1, db := openMailer(t, cfg, "")
	if err := m1.Notify(context.Background(), report("J000013", "restart", "bob@example.org")); err != nil {
		t.Fatal(err)
	}
	type entry struct {
		MessageID string    `json:"message_id"`
		Attempts  int       `json:"attempts"`
		Next      time.Time `json:"next"`
	}
	read := func(e *entry) bool {
		fs := queueFiles(t, db)
		if len(fs) != 1 {
			return false
		}
		b, err := os.ReadFile(filepath.Join(db, notify.MailQueueDir, fs[0]))
		return err == nil && json.Unmarshal(b, e) == nil
	}
	var e entry
	eventually(t, "the deferral is on disk", func() bool { return read(&e) && e.Attempts == 1 })
	if err := m1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m1.Notify(context.Background(), report("J000014", "late", "bob@example.org")); err == nil {
		t.Error("a closed Mailer accepted a report")
	}
	// A retry that m1 had begun (held by s1) was cut off by Close, and not
	// counted.
	var after entry
	if !read(&after) || after.MessageID != e.MessageID || after.Attempts != e.Attempts || !after.Next.Equal(e.Next) {
		t.Errorf("queue file after Close %+v, want it as deferred, %+v", after, e)
	}

	s2 := startSMTP(t, plainServer, nil)
	cfg2 := configFor(s2)
	cfg2.Retry = cfg.Retry
	m2, _ := openMailer(t, cfg2, db)
	if m2.Pending() != 1 {
		t.Fatalf("the new Mailer has %d pending, want 1", m2.Pending())
	}
	eventually(t, "the message arrives", func() bool { return len(s2.messages()) == 1 })
	at := s2.attempts()
	if len(at) != 1 || at[0].Before(e.Next) {
		t.Errorf("attempts at %v; want 1, not before %v", at, e.Next)
	}
	msg, _ := parse(t, s2.messages()[0].Data)
	if msg.Header.Get("Message-ID") != "<"+e.MessageID+">" {
		t.Errorf("delivered Message-ID %q, queued %q", msg.Header.Get("Message-ID"), e.MessageID)
	}
	eventually(t, "the queue is empty", func() bool { return len(queueFiles(t, db)) == 0 })
	if n := len(s1.messages()); n != 0 {
		t.Errorf("%d messages delivered by the closed Mailer", n)
	}
}

// A mail server that accepts and never answers holds up neither the reaper
// nor Close.
func TestMailer_HangingServerDoesNotBlockTheReaper(t *testing.T) {
	h := startHanging(t)
	host, port, _ := net.SplitHostPort(h.Addr)
	p, _ := strconv.Atoi(port)
	sp, err := spool.Create(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	db := sp.Path(spool.DirDB)
	m, err := notify.OpenMailer(notify.MailConfig{Host: host, Port: p, From: "msched@example.org", Timeout: time.Minute}, db, testLog(t))
	if err != nil {
		t.Fatal(err)
	}

	var jids []string
	for i := range 3 {
		jid, err := sp.NextJID()
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		zero := 0
		j := &spool.Job{JID: jid, Name: "j" + strconv.Itoa(i), User: "alice", Notify: "alice@example.org", Command: []string{"true"},
			SubmittedAt: now, History: []spool.Event{{State: spool.Submitted, At: now}, {State: spool.Finished, At: now}},
			Run: &spool.RunInfo{StartedAt: now, EndedAt: now, ExitStatus: &zero, Attempts: 1}}
		b, err := j.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := spool.WriteAtomic(sp.Dir(ended), jid, b); err != nil {
			t.Fatal(err)
		}
		jids = append(jids, jid)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- (&daemons.Reaper{Env: daemons.Env{Spool: sp, Log: testLog(t), Rescan: 50 * time.Millisecond}, Notifier: m}).Run(ctx)
	}()
	eventually(t, "the jobs are reaped", func() bool {
		es, err := sp.List(ended)
		return err == nil && len(es) == 0
	})
	eventually(t, "the mail server holds a connection", func() bool { return h.accepted() >= 1 })
	if d := time.Since(start); d > waitBound { // not the server's Timeout, a minute
		t.Errorf("reaping took %v", d)
	}
	for _, jid := range jids {
		if _, err := os.Stat(filepath.Join(sp.Path(spool.DirReports), jid+".txt")); err != nil {
			t.Errorf("report file: %v", err)
		}
	}
	if n := m.Pending(); n != 3 {
		t.Errorf("%d reports pending, want 3 (the first attempt hangs)", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("reaper: %v", err)
	}
	closed := make(chan struct{})
	go func() { _ = m.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(waitBound): // less than the Timeout, a minute
		t.Fatal("Close waited for the hanging server")
	}
	if n := len(queueFiles(t, db)); n != 3 {
		t.Errorf("%d queue files after Close, want 3 for the next start", n)
	}
	if f := failures(t, db); f != nil {
		t.Errorf("an interrupted attempt was recorded as a failure: %+v", f)
	}
}
