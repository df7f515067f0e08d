package notify

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"sort"
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
	From         string        // sender (header and envelope); "": DefaultFrom(Hostname, Domain)
	Username     string        // "": no AUTH
	Password     string        // AUTH password; "": read from PasswordFile
	PasswordFile string        // file holding the password (a trailing newline is dropped)
	StartTLS     StartTLS      // "": StartTLSIfOffered; ignored with TLS
	TLS          bool          // implicit TLS from the first byte (SMTPS, port 465)
	Timeout      time.Duration // bound on one delivery attempt, connect to QUIT; 0: DefaultMailTimeout
	TLSConfig    *tls.Config   // nil: the system's roots, server name Host (tests set RootCAs)
	Hostname     string        // EHLO name and Message-ID domain; "": FQDN()
	Retry        Retry         // zero fields: DefaultRetry's
	// When is when the user of a job whose file has no mail: list is
	// mailed (mail.when): any of spool.MailBegin, MailEnd and MailFail;
	// nil: DefaultWhen; empty and not nil: never.
	When []string
	// Domain turns a bare user name into an address (mail.domain): a job
	// without notify: is mailed to <user>@Domain; "": it is not mailed.
	Domain string
	// WebURL is the status page's address as users reach it (web.url);
	// set, every mail links the job's page, WebURL/jobs/<JID>.
	WebURL string
}

// DefaultWhen is when a job that says nothing is mailed: at its end, as
// before jobs could say (mail.when).
var DefaultWhen = []string{spool.MailEnd}

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
	MailQueueDir = "mailq"               // one JSON file per report not yet delivered, <JID>.json
	MailSentDir  = "mailq/sent"          // an empty file per report done with (mailed or given up), <JID>
	MailFailures = "mail-failures.jsonl" // one MailFailure per report given up
)

// SentKeep is how long a report's mark in MailSentDir is kept. The mark
// makes a report handed over again (by a reaper killed after Notify and
// before it removed the job) a no-op; such a reaper hands it over again
// at its next start, so the mark must outlive any reasonable downtime.
const SentKeep = 7 * 24 * time.Hour

// sweepEvery is how often marks older than SentKeep are removed.
const sweepEvery = time.Hour

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
// queues: it writes the message to db/mailq/<JID>.json (spool.WriteAtomic:
// the file and the directory fsynced) and returns, so the reaper never
// waits for a mail server, and a report handed over is on disk before the
// reaper removes its job. One goroutine, started by OpenMailer and stopped
// by Close, delivers from the queue directory itself (there is no queue in
// memory: what is in db/mailq/ is what will be sent), in order of due time,
// one message at a time, and retries temporary failures (see Retry). A 5xx
// reply is permanent and not retried, except the AUTH rejections of
// authRejected.
//
// db/mailq/ belongs to the one reaper of a spool: a second Mailer on the
// same directory would send its messages twice. The queue is what makes
// retries survive a restart; it holds the message as queued (report, Date,
// Message-ID, attempts, next attempt), so a retried message is the same
// message. One file per JID, and a mark in db/mailq/sent/ for SentKeep
// once it is mailed or given up: a report handed over again (by a reaper
// restarted between handing it over and removing the job) while its JID's
// file is queued or marked is not queued twice. Delivery is at least once:
// a crash or Close after the server took the message and before its mark
// is written sends it again at the next start, with the same Message-ID.
type Mailer struct {
	cfg   MailConfig
	queue string // db/mailq
	fails string // db/mail-failures.jsonl
	log   *slog.Logger

	mu     sync.Mutex
	closed bool

	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}

	// Touched by the delivering goroutine only.
	bad       map[string]bool      // unreadable queue files, logged once
	notBefore map[string]time.Time // deferrals whose queue file could not be rewritten
	swept     time.Time            // last removal of old marks
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

// OpenMailer checks cfg, prepares db/mailq/ (the reports an earlier run left
// there are delivered like new ones) and starts delivering. dbDir is the spool's db/ directory
// (Spool.Path(spool.DirDB)); log nil means slog.Default().
func OpenMailer(cfg MailConfig, dbDir string, log *slog.Logger) (*Mailer, error) {
	if log == nil {
		log = slog.Default()
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if _, domain, _ := strings.Cut(cfg.From, "@"); !qualified(strings.TrimSuffix(domain, ">")) {
		log.Warn("the sender's domain is not fully qualified: mail servers may refuse it; set smtp.from or mail.domain", "from", cfg.From)
	}
	m := &Mailer{cfg: cfg, queue: filepath.Join(dbDir, MailQueueDir), fails: filepath.Join(dbDir, MailFailures),
		log: log, kick: make(chan struct{}, 1), done: make(chan struct{}),
		bad: map[string]bool{}, notBefore: map[string]time.Time{}}
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
	if c.When == nil {
		c.When = DefaultWhen
	}
	if c.Hostname == "" {
		c.Hostname = FQDN()
	}
	if c.From == "" {
		c.From = DefaultFrom(c.Hostname, c.Domain)
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

// Notify queues r for mailing and returns once its queue file is on disk
// (file and directory fsynced): the reaper removes the job after this. It
// does not wait for the server, and it ignores ctx: the reaper hands over
// its last reports with a context already done when it stops, and a
// queued report is mailed at the next start.
//
// An error means the report is not queued, and the reaper keeps the job to
// hand it over again. A report that can never be mailed is not an error:
// one whose To is a bare user name (the job named no notify address) is
// logged; one whose address is malformed is recorded in MailFailures as
// permanent, like a report the server refused.
func (m *Mailer) Notify(_ context.Context, r Report) error {
	if !m.Wants(r) {
		m.log.Debug("report not mailed: neither the job's mail: nor mail.when asks for it", "jid", r.JID, "kind", r.Kind)
		return nil
	}
	r.To = m.address(r.To)
	if !strings.Contains(r.To, "@") {
		m.log.Info("report not mailed: the job names no mail address, and mail.domain is not set", "jid", r.JID, "to", r.To)
		return nil
	}
	if m.cfg.WebURL != "" {
		r.Body = "The job's page: " + JobURL(m.cfg.WebURL, r.JID) + "\n\n" + r.Body
	}
	now := time.Now()
	key := queueKey(r)
	e := &queued{file: key + ".json", Date: now, Report: r, Next: now,
		MessageID: fmt.Sprintf("msched.%s.%d.%s@%s", key, now.UnixNano(), randHex(4), m.cfg.Hostname)}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return errors.New("notify: mail: mailer closed")
	}
	// Only Notify creates a JID's file, and the delivering goroutine (or a
	// bad address, below) marks it done before it removes it: a file or a
	// mark seen here is this report's, handed over before.
	for _, p := range []string{filepath.Join(m.queue, e.file), m.sentMark(key)} {
		switch _, err := os.Lstat(p); {
		case err == nil:
			m.log.Info("report already handed over for mailing", "jid", r.JID)
			return nil
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("notify: mail: queue: %w", err)
		}
	}
	if _, err := m.message(e); err != nil { // a bad To: refused now, never retried
		m.log.Error("report not mailed: bad address", "jid", r.JID, "to", r.To, "err", err)
		if err := m.record(e, err, true, now); err != nil {
			return err
		}
		// Marked, so that a report handed over again (a reaper killed
		// before it removed the job) is not recorded twice.
		return m.mark(key)
	}
	if err := m.store(e); err != nil {
		return err
	}
	select {
	case m.kick <- struct{}{}:
	default:
	}
	return nil
}

// Wants says whether the Mailer mails r (Chooser): by the job's mail:
// list, else by mail.when.
func (m *Mailer) Wants(r Report) bool { return Wanted(r, m.cfg.When) }

// address is the address to mail for to, a job's notify: or its user:
// a bare user name gets mail.domain.
func (m *Mailer) address(to string) string {
	if to != "" && !strings.Contains(to, "@") && m.cfg.Domain != "" {
		return to + "@" + m.cfg.Domain
	}
	return to
}

// JobURL is the address of the job's page on the status page at base
// (web.url).
func JobURL(base, jid string) string {
	return strings.TrimRight(base, "/") + "/jobs/" + url.PathEscape(jid)
}

// queueKey names a report in db/mailq/ (<key>.json) and in db/mailq/sent/:
// its JID, and for a begin report JID.begin, so that a job's two reports
// are queued, and marked done with, each once.
func queueKey(r Report) string {
	if r.Kind == KindBegin {
		return safeName(r.JID) + "." + KindBegin
	}
	return safeName(r.JID)
}

// sentMark is the path of a report's mark in db/mailq/sent/ (key: queueKey).
func (m *Mailer) sentMark(key string) string {
	return filepath.Join(filepath.Dir(m.queue), MailSentDir, key)
}

// Close stops delivering; an attempt in progress is cut off and not
// counted. What is queued stays in db/mailq/ for the next OpenMailer.
func (m *Mailer) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	<-m.done
	return nil
}

// Pending is how many reports wait for delivery: the files in db/mailq/.
func (m *Mailer) Pending() int {
	n, _ := QueueLength(filepath.Dir(m.queue))
	return n
}

// QueueLength is how many reports wait for delivery in the mail queue of
// the spool whose db/ directory is dbDir (for the status page's metrics,
// which may run in another process); 0 when there is no queue.
func QueueLength(dbDir string) (int, error) {
	des, err := os.ReadDir(filepath.Join(dbDir, MailQueueDir))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("notify: mail queue: %w", err)
	}
	n := 0
	for _, de := range des {
		if isQueueFile(de) {
			n++
		}
	}
	return n, nil
}

func isQueueFile(de fs.DirEntry) bool {
	name := de.Name()
	return !strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".json") && de.Type().IsRegular()
}

// run delivers what is due, then sleeps until the next due time or a new
// report, until ctx is done. Each round reads the queue directory again.
func (m *Mailer) run(ctx context.Context) {
	defer close(m.done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		if time.Since(m.swept) >= sweepEvery {
			m.swept = time.Now()
			m.sweep(m.swept.Add(-SentKeep))
		}
		due, next := m.scan(time.Now())
		for _, e := range due {
			if ctx.Err() != nil {
				return
			}
			m.attempt(ctx, e)
		}
		if len(due) > 0 {
			continue // the attempts took time: look again
		}
		t.Stop()
		if !next.IsZero() {
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

// scan reads db/mailq/: the reports due at now, most overdue first, and
// when the next of the others is due (zero: none). A file that does not
// read is logged once and left for a human.
func (m *Mailer) scan(now time.Time) (due []*queued, next time.Time) {
	des, err := os.ReadDir(m.queue)
	if err != nil {
		m.log.Error("cannot read the mail queue", "err", err)
		return nil, now.Add(m.cfg.Retry.First)
	}
	seen := make(map[string]bool, len(des))
	for _, de := range des {
		if !isQueueFile(de) {
			continue
		}
		name := de.Name()
		seen[name] = true
		b, err := os.ReadFile(filepath.Join(m.queue, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		e := &queued{file: name}
		if err == nil {
			err = json.Unmarshal(b, e)
		}
		if err != nil {
			if !m.bad[name] {
				m.log.Error("unreadable mail queue file left in place", "file", name, "err", err)
				m.bad[name] = true
			}
			continue
		}
		delete(m.bad, name)
		if _, err := os.Lstat(m.sentMark(queueKey(e.Report))); err == nil {
			// Marked done with, and its removal failed or was cut off by
			// a crash: removed now, not sent again.
			m.removeFile(e)
			continue
		}
		if nb, ok := m.notBefore[name]; ok && nb.After(e.Next) {
			e.Next = nb
		}
		if !e.Next.After(now) {
			due = append(due, e)
		} else if next.IsZero() || e.Next.Before(next) {
			next = e.Next
		}
	}
	for name := range m.notBefore {
		if !seen[name] {
			delete(m.notBefore, name)
		}
	}
	for name := range m.bad {
		if !seen[name] {
			delete(m.bad, name)
		}
	}
	sort.Slice(due, func(a, b int) bool { return due[a].Next.Before(due[b].Next) })
	return due, next
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
	e.LastError, e.Next = err.Error(), now.Add(wait)
	if err := m.store(e); err != nil {
		// The file keeps its earlier attempt: this process waits anyway,
		// and a restart tries again at once.
		log.Error("cannot update mail queue file", "err", err)
		m.notBefore[e.file] = e.Next
	}
}

// giveUp records e in mail-failures.jsonl, then removes its queue file: a
// crash in between retries it once more at the next start rather than
// losing the record.
func (m *Mailer) giveUp(e *queued, cause error, perm bool, now time.Time) {
	if err := m.record(e, cause, perm, now); err != nil {
		m.log.Error("cannot record mail failure", "jid", e.Report.JID, "err", err)
	}
	m.remove(e)
}

// record appends e's MailFailure to mail-failures.jsonl.
func (m *Mailer) record(e *queued, cause error, perm bool, now time.Time) error {
	rec, _ := json.Marshal(MailFailure{At: now.UTC(), JID: e.Report.JID, To: e.Report.To, Subject: e.Report.Subject,
		MessageID: e.MessageID, Attempts: e.Attempts, Permanent: perm, Error: cause.Error()})
	if err := appendLine(m.fails, rec); err != nil {
		return fmt.Errorf("notify: mail: %w", err)
	}
	return nil
}

// sweep removes the marks of reports done with before cutoff.
func (m *Mailer) sweep(cutoff time.Time) {
	dir := filepath.Dir(m.sentMark("x"))
	des, err := os.ReadDir(dir)
	if err != nil {
		m.log.Warn("mail queue: sent marks", "err", err)
		return
	}
	for _, de := range des {
		if fi, err := de.Info(); err == nil && fi.ModTime().Before(cutoff) {
			_ = os.Remove(filepath.Join(dir, de.Name()))
		}
	}
}

// remove marks e done with and removes its queue file: a crash between
// the two leaves both, and the report is tried again (at least once).
func (m *Mailer) remove(e *queued) {
	if err := m.mark(queueKey(e.Report)); err != nil {
		// Without the mark a report handed over again is sent again.
		m.log.Warn("mail queue: cannot mark report done", "jid", e.Report.JID, "err", err)
	}
	m.removeFile(e)
}

// mark leaves the mark that the report of key (queueKey) is done with
// (sent or given up), durably.
func (m *Mailer) mark(key string) error {
	mark := m.sentMark(key)
	f, err := os.OpenFile(mark, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		err = f.Close()
	}
	if err == nil {
		err = atomicfile.SyncDir(filepath.Dir(mark))
	}
	return err
}

// removeFile removes e's queue file.
func (m *Mailer) removeFile(e *queued) {
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

// store writes e's queue file.
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

// load prepares db/mailq/: staging files of spool.WriteAtomic (dot-files)
// left by a crash are removed; the queue files themselves are read by run.
func (m *Mailer) load() error {
	if err := os.MkdirAll(filepath.Dir(m.sentMark("x")), queuePerm); err != nil {
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
		if strings.HasPrefix(de.Name(), ".") {
			_ = os.Remove(filepath.Join(m.queue, de.Name()))
		}
	}
	if n := m.Pending(); n > 0 {
		m.log.Info("mail queue found", "pending", n)
	}
	return nil
}

// appendLine appends line and a newline to path, whole or not at all: a
// write that fails part-way (a full disk) is cut back, so that the next
// line is not glued to a torn one.
func appendLine(path string, line []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err == nil {
		_, err = f.Write(append(line, '\n'))
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			_ = f.Truncate(fi.Size())
		}
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
