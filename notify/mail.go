package notify

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"msched/atomicfile"
	"msched/spool"
)

// MailConfig is how reports reach an SMTP server: the smtp.* configuration
// keys. Zero fields take the defaults documented on each.
type MailConfig struct {
	Host         string        // SMTP server; required
	Port         int           // 0: 465 with TLS, 587 with StartTLS "always", else 25
	From         string        // sender (header and envelope); "": msched@<Hostname>
	Username     string        // "": no AUTH
	Password     string        // AUTH password; "": read from PasswordFile
	PasswordFile string        // file holding the password (a trailing newline is dropped)
	StartTLS     StartTLS      // "": StartTLSIfOffered; ignored with TLS
	TLS          bool          // implicit TLS from the first byte (SMTPS, port 465)
	Timeout      time.Duration // bound on one delivery attempt, connect to QUIT; 0: DefaultMailTimeout
	TLSConfig    *tls.Config   // nil: the system's roots, server name Host (tests set RootCAs)
	Hostname     string        // EHLO name and Message-ID domain; "": os.Hostname()
	Retry        Retry         // zero fields: DefaultRetry's
}

// StartTLS says when a plain connection is upgraded with STARTTLS.
type StartTLS string

const (
	StartTLSAlways    StartTLS = "always"     // fail (and retry later) when the server does not offer it
	StartTLSIfOffered StartTLS = "if-offered" // upgrade when offered; AUTH is still refused in the clear
	StartTLSNever     StartTLS = "never"
)

// DefaultMailTimeout bounds one delivery attempt: RFC 5321 §4.5.3.2 allows
// servers minutes per reply, but a report can wait for the next attempt, and
// the retry queue waits behind the attempt in progress.
const DefaultMailTimeout = time.Minute

// Retry is the schedule of delivery attempts for a temporary failure: the
// n-th failure (n ≥ 1) waits First·2^(n-1), at most MaxDelay, until Attempts
// attempts were made or the next one would come after MaxAge from the
// report; then the report is given up and recorded in MailFailures.
type Retry struct {
	First    time.Duration
	MaxDelay time.Duration
	Attempts int
	MaxAge   time.Duration
}

// DefaultRetry: 30 s, 1 min, 2 min, … then hourly, for a day. A report
// older than a day has lost its use; the report file stays in reports/.
var DefaultRetry = Retry{First: 30 * time.Second, MaxDelay: time.Hour, Attempts: 30, MaxAge: 24 * time.Hour}

// Where a Mailer keeps its state under the spool's db/ directory.
const (
	MailQueueDir = "mailq"               // one JSON file per report not yet delivered
	MailFailures = "mail-failures.jsonl" // one MailFailure per report given up
)

// MailFailure is a line of db/mail-failures.jsonl: a report that was not
// delivered, and why.
type MailFailure struct {
	At        time.Time `json:"at"`
	JID       string    `json:"jid"`
	To        string    `json:"to"`
	Subject   string    `json:"subject"`
	MessageID string    `json:"message_id"`
	Attempts  int       `json:"attempts"`
	Permanent bool      `json:"permanent"` // the server refused it (5xx): not retried
	Error     string    `json:"error"`
}

// A Mailer is the Notifier that mails reports through SMTP. Notify only
// queues: it writes the message to db/mailq/ (spool.WriteAtomic) and
// returns, so the reaper never waits for a mail server. One goroutine,
// started by OpenMailer and stopped by Close, delivers the queue in order of
// due time, one message at a time, and retries temporary failures (see
// Retry). A 5xx reply is permanent and not retried, except the AUTH
// rejections of authRejected.
//
// db/mailq/ belongs to the one reaper of a spool: a second Mailer on the
// same directory would send its messages twice. The queue is what makes
// retries survive a restart; it holds the message as queued (report, Date,
// Message-ID, attempts, next attempt), so a retried message is the same
// message. Delivery is at least once: a crash or Close after the server took
// the message and before its file is removed sends it again at the next
// start, with the same Message-ID.
type Mailer struct {
	cfg   MailConfig
	queue string // db/mailq
	fails string // db/mail-failures.jsonl
	log   *slog.Logger

	mu      sync.Mutex
	pending map[string]*queued // by file name
	closed  bool

	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// queued is a file in db/mailq/.
type queued struct {
	file      string    // not stored: the file's name
	MessageID string    `json:"message_id"` // without the angle brackets
	Date      time.Time `json:"date"`       // the Date header; ages count from here
	Report    Report    `json:"report"`
	Attempts  int       `json:"attempts"`
	Next      time.Time `json:"next"` // not before this
	LastError string    `json:"last_error,omitempty"`
}

// OpenMailer checks cfg, loads the reports left in db/mailq/ by an earlier
// run and starts delivering. dbDir is the spool's db/ directory
// (Spool.Path(spool.DirDB)); log nil means slog.Default().
func OpenMailer(cfg MailConfig, dbDir string, log *slog.Logger) (*Mailer, error) {
	if log == nil {
		log = slog.Default()
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &Mailer{cfg: cfg, queue: filepath.Join(dbDir, MailQueueDir), fails: filepath.Join(dbDir, MailFailures),
		log: log, pending: map[string]*queued{}, kick: make(chan struct{}, 1), done: make(chan struct{})}
	if err := m.load(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.run(ctx)
	return m, nil
}

// withDefaults fills in the defaults and checks what can be checked before
// a server is asked.
func (c MailConfig) withDefaults() (MailConfig, error) {
	if c.Host == "" {
		return c, errors.New("notify: mail: no SMTP host")
	}
	switch c.StartTLS {
	case "":
		c.StartTLS = StartTLSIfOffered
	case StartTLSAlways, StartTLSIfOffered, StartTLSNever:
	default:
		return c, fmt.Errorf("notify: mail: starttls %q: want always, if-offered or never", c.StartTLS)
	}
	if c.Port == 0 {
		switch {
		case c.TLS:
			c.Port = 465
		case c.StartTLS == StartTLSAlways:
			c.Port = 587
		default:
			c.Port = 25
		}
	}
	if c.Port < 1 || c.Port > 65535 {
		return c, fmt.Errorf("notify: mail: port %d out of range", c.Port)
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultMailTimeout
	}
	if c.Hostname == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "localhost"
		}
		c.Hostname = h
	}
	if c.From == "" {
		c.From = "msched@" + c.Hostname
	}
	if _, err := mail.ParseAddress(c.From); err != nil {
		return c, fmt.Errorf("notify: mail: from %q: %w", c.From, err)
	}
	if c.Username != "" && c.Password == "" && c.PasswordFile != "" {
		b, err := os.ReadFile(c.PasswordFile)
		if err != nil {
			return c, fmt.Errorf("notify: mail: %w", err)
		}
		c.Password = strings.TrimRight(string(b), "\r\n")
	}
	d := DefaultRetry
	if c.Retry.First <= 0 {
		c.Retry.First = d.First
	}
	if c.Retry.MaxDelay <= 0 {
		c.Retry.MaxDelay = max(d.MaxDelay, c.Retry.First)
	}
	if c.Retry.Attempts <= 0 {
		c.Retry.Attempts = d.Attempts
	}
	if c.Retry.MaxAge <= 0 {
		c.Retry.MaxAge = d.MaxAge
	}
	return c, nil
}

// delay is the wait after the n-th failed attempt.
func (r Retry) delay(n int) time.Duration {
	d := r.First
	for i := 1; i < n && d < r.MaxDelay; i++ {
		d *= 2
	}
	return min(d, r.MaxDelay)
}

// Notify queues r for mailing and returns once the queue file is on disk.
// It does not wait for the server, and it ignores ctx: the reaper hands
// over its last reports with a context already done when it stops, and a
// queued report is mailed at the next start. A report whose To is a bare
// user name (the job named no notify address) is not mailed: nil, and a
// log line.
func (m *Mailer) Notify(_ context.Context, r Report) error {
	if !strings.Contains(r.To, "@") {
		m.log.Info("report not mailed: the job names no mail address", "jid", r.JID, "to", r.To)
		return nil
	}
	now := time.Now()
	e := &queued{Date: now, Report: r, Next: now,
		MessageID: fmt.Sprintf("msched.%s.%d.%s@%s", safeName(r.JID), now.UnixNano(), randHex(4), m.cfg.Hostname)}
	e.file = fmt.Sprintf("%s-%d.json", safeName(r.JID), now.UnixNano())
	if _, err := m.message(e); err != nil { // a bad To is refused now, not retried
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("notify: mail: mailer closed")
	}
	if err := m.store(e); err != nil {
		return err
	}
	m.pending[e.file] = e
	select {
	case m.kick <- struct{}{}:
	default:
	}
	return nil
}

// Close stops delivering; an attempt in progress is cut off and not
// counted. What is pending stays in db/mailq/ for the next OpenMailer.
func (m *Mailer) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	<-m.done
	return nil
}

// Pending is how many reports wait for delivery.
func (m *Mailer) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending)
}

// run delivers what is due, then sleeps until the next due time or a new
// report, until ctx is done.
func (m *Mailer) run(ctx context.Context) {
	defer close(m.done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		for ctx.Err() == nil {
			e := m.due(time.Now())
			if e == nil {
				break
			}
			m.attempt(ctx, e)
		}
		t.Stop()
		if next, ok := m.earliest(); ok {
			t.Reset(time.Until(next))
		}
		select {
		case <-ctx.Done():
			return
		case <-m.kick:
		case <-t.C:
		}
	}
}

// due returns the pending report that is most overdue at now, if any.
func (m *Mailer) due(now time.Time) *queued {
	m.mu.Lock()
	defer m.mu.Unlock()
	var best *queued
	for _, e := range m.pending {
		if !e.Next.After(now) && (best == nil || e.Next.Before(best.Next)) {
			best = e
		}
	}
	return best
}

func (m *Mailer) earliest() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var t time.Time
	for _, e := range m.pending {
		if t.IsZero() || e.Next.Before(t) {
			t = e.Next
		}
	}
	return t, !t.IsZero()
}

// attempt tries e once and then removes it (delivered, or given up) or
// schedules it again.
func (m *Mailer) attempt(ctx context.Context, e *queued) {
	err := m.send(ctx, e)
	if err != nil && ctx.Err() != nil {
		return // closing: not the server's fault, not counted
	}
	now := time.Now()
	e.Attempts++
	log := m.log.With("jid", e.Report.JID, "to", e.Report.To, "message_id", e.MessageID, "attempt", e.Attempts)
	if err == nil {
		log.Info("report mailed")
		m.remove(e)
		return
	}
	perm := permanent(err)
	wait := m.cfg.Retry.delay(e.Attempts)
	if perm || e.Attempts >= m.cfg.Retry.Attempts || now.Add(wait).Sub(e.Date) > m.cfg.Retry.MaxAge {
		log.Error("report not mailed; given up, the report is in reports/", "permanent", perm, "err", err)
		m.giveUp(e, err, perm, now)
		return
	}
	log.Warn("report mail deferred", "retry_in", wait, "err", err)
	m.mu.Lock()
	defer m.mu.Unlock()
	e.LastError, e.Next = err.Error(), now.Add(wait)
	if err := m.store(e); err != nil {
		// Kept in memory: retried while this process lives.
		log.Error("cannot update mail queue file", "err", err)
	}
}

// giveUp records e in mail-failures.jsonl, then removes its queue file: a
// crash in between retries it once more at the next start rather than
// losing the record.
func (m *Mailer) giveUp(e *queued, cause error, perm bool, now time.Time) {
	rec, _ := json.Marshal(MailFailure{At: now.UTC(), JID: e.Report.JID, To: e.Report.To, Subject: e.Report.Subject,
		MessageID: e.MessageID, Attempts: e.Attempts, Permanent: perm, Error: cause.Error()})
	if err := appendLine(m.fails, rec); err != nil {
		m.log.Error("cannot record mail failure", "jid", e.Report.JID, "err", err)
	}
	m.remove(e)
}

func (m *Mailer) remove(e *queued) {
	m.mu.Lock()
	delete(m.pending, e.file)
	m.mu.Unlock()
	if err := os.Remove(filepath.Join(m.queue, e.file)); err != nil && !os.IsNotExist(err) {
		m.log.Error("cannot remove mail queue file", "file", e.file, "err", err)
		return
	}
	// Without the directory's fsync a crash could bring the file back,
	// and the message would be sent again.
	if err := atomicfile.SyncDir(m.queue); err != nil {
		m.log.Warn("mail queue", "err", err)
	}
}

// store writes e's queue file; the caller holds m.mu.
func (m *Mailer) store(e *queued) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return fmt.Errorf("notify: mail: %w", err)
	}
	if err := spool.WriteAtomic(m.queue, e.file, append(b, '\n')); err != nil {
		return fmt.Errorf("notify: mail: queue: %w", err)
	}
	return nil
}

// queuePerm is the mode of db/mailq/: it holds reports, which carry job
// output, and only the reaper that mails them may read them (reports/ has
// each report readable by its job's owner alone when the daemons run as
// root; the queue must not be a way around that).
const queuePerm = 0o700

// load reads db/mailq/. Staging files of spool.WriteAtomic (dot-files) left
// by a crash are removed; an unreadable file is logged and left for a human.
func (m *Mailer) load() error {
	if err := os.MkdirAll(m.queue, queuePerm); err != nil {
		return fmt.Errorf("notify: mail: %w", err)
	}
	if err := os.Chmod(m.queue, queuePerm); err != nil { // made 0755 by earlier versions
		return fmt.Errorf("notify: mail: %w", err)
	}
	des, err := os.ReadDir(m.queue)
	if err != nil {
		return fmt.Errorf("notify: mail: %w", err)
	}
	for _, de := range des {
		name := de.Name()
		switch {
		case strings.HasPrefix(name, "."):
			_ = os.Remove(filepath.Join(m.queue, name))
			continue
		case de.IsDir() || !strings.HasSuffix(name, ".json"):
			continue
		}
		b, err := os.ReadFile(filepath.Join(m.queue, name))
		e := &queued{file: name}
		if err == nil {
			err = json.Unmarshal(b, e)
		}
		if err != nil {
			m.log.Error("unreadable mail queue file left in place", "file", name, "err", err)
			continue
		}
		m.pending[name] = e
	}
	if n := len(m.pending); n > 0 {
		m.log.Info("mail queue loaded", "pending", n)
	}
	return nil
}

func appendLine(path string, line []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// safeName keeps a JID usable in a file name and a Message-ID.
func safeName(s string) string {
	out := []byte(s)
	for i, c := range out {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			out[i] = '_'
		}
	}
	if len(out) == 0 {
		return "nojid"
	}
	return string(out)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b)
}
