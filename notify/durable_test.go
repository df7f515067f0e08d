package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"msched/daemons"
	"msched/notify"
	"msched/spool"
)

// A report handed over again while its JID's queue file waits (a reaper
// restarted between handing it over and removing the job) is not queued a
// second time: one file, one mail.
func TestMailer_SameJIDQueuedOnce(t *testing.T) {
	// The first attempt is refused, and the retry held at the server until
	// the test releases it: the report's file waits in the queue for as
	// long as the test needs, whatever the machine's load.
	s := startSMTP(t, plainServer, func(s *smtpServer) { s.tempFails, s.holdAfter = 1, 1 })
	m, db := openMailer(t, configFor(s), "")
	rep := report("J000021", "twice", "bob@example.org")
	if err := m.Notify(context.Background(), rep); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first attempt is deferred and the retry waits", func() bool { return len(s.attempts()) == 2 })
	// The queue file as deferred; it does not change while the retry waits.
	file := func() (q []string, e struct {
		MessageID string `json:"message_id"`
		Attempts  int    `json:"attempts"`
	}) {
		q = queueFiles(t, db)
		if len(q) == 1 {
			b, err := os.ReadFile(filepath.Join(db, notify.MailQueueDir, q[0]))
			if err == nil {
				err = json.Unmarshal(b, &e)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		return q, e
	}
	_, deferred := file()
	if err := m.Notify(context.Background(), rep); err != nil {
		t.Fatal(err)
	}
	if q, e := file(); len(q) != 1 || e != deferred || e.Attempts != 1 {
		t.Errorf("queue %v holding %+v; want one file for J000021, the deferred one %+v", q, e, deferred)
	}
	s.release()
	eventually(t, "the queue is empty", func() bool { return len(queueFiles(t, db)) == 0 })
	if n, a := len(s.messages()), len(s.attempts()); n != 1 || a != 2 {
		t.Errorf("%d messages delivered in %d attempts, want 1 in 2", n, a)
	}
}

// exitedMailJob puts a job with a notify address where the reaper finds
// ended jobs.
func exitedMailJob(t *testing.T, sp *spool.Spool) string {
	t.Helper()
	jid, err := sp.NextJID()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	zero := 0
	j := &spool.Job{JID: jid, Name: "durable", User: "alice", Notify: "alice@example.org", Command: []string{"true"},
		SubmittedAt: now, History: []spool.Event{{State: spool.Submitted, At: now}, {State: spool.Finished, At: now}},
		Run: &spool.RunInfo{StartedAt: now, EndedAt: now, ExitStatus: &zero, Attempts: 1}}
	b, err := j.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := spool.WriteAtomic(sp.Dir(ended), jid, b); err != nil {
		t.Fatal(err)
	}
	return jid
}

// reapAndMail runs a reaper with a Mailer on s (through wrap, if not nil)
// until the ended jobs are reaped and their mail has left the queue.
func reapAndMail(t *testing.T, sp *spool.Spool, s *smtpServer, wrap func(notify.Notifier) notify.Notifier) {
	t.Helper()
	m, db := openMailer(t, configFor(s), sp.Path(spool.DirDB))
	var n notify.Notifier = m
	if wrap != nil {
		n = wrap(m)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (&daemons.Reaper{Env: daemons.Env{Spool: sp, Log: testLog(t), Rescan: 20 * time.Millisecond}, Notifier: n}).Run(ctx)
	}()
	eventually(t, "the jobs are reaped and mailed", func() bool {
		es, err := sp.List(ended)
		return err == nil && len(es) == 0 && len(queueFiles(t, db)) == 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A notification that could not be made durable keeps the job: the reaper
// hands it over again at its next scan, and the mail goes once.
func TestReaper_NotifyFailureKeepsTheJob(t *testing.T) {
	s := startSMTP(t, plainServer, nil)
	sp, err := spool.Create(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	jid := exitedMailJob(t, sp)
	var mu sync.Mutex
	calls := 0
	reapAndMail(t, sp, s, func(m notify.Notifier) notify.Notifier {
		return notify.NotifierFunc(func(ctx context.Context, r notify.Report) error {
			mu.Lock()
			calls++
			first := calls == 1
			mu.Unlock()
			if first {
				return errors.New("injected: queue file not written")
			}
			return m.Notify(ctx, r)
		})
	})
	if calls < 2 {
		t.Errorf("Notify called %d times, want the failed call and another", calls)
	}
	msgs := s.messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	if msg, _ := parse(t, msgs[0].Data); msg.Header.Get(notify.HeaderJID) != jid {
		t.Errorf("mail for %q, want %s", msg.Header.Get(notify.HeaderJID), jid)
	}
}

// envChildSpool names the spool of TestReaperKilledChild, and envChildSMTP
// its mail server.
const (
	envChildSpool = "MSCHED_TEST_KILLED_REAPER_SPOOL"
	envChildSMTP  = "MSCHED_TEST_KILLED_REAPER_SMTP"
)

// A reaper killed (SIGKILL) the instant its Notifier returned, before it
// removed the job file, loses no mail and sends none twice: the queue file
// is on disk, the job is still in the spool, and the restarted reaper hands
// the report over again onto the same queue file.
func TestReaper_KilledBetweenNotifyAndRemovalMailsOnce(t *testing.T) {
	sp, err := spool.Create(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	jid := exitedMailJob(t, sp)
	// The child's mail server accepts and never answers: nothing is
	// delivered before the kill.
	h := startHanging(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestReaperKilledChild$", "-test.v")
	cmd.Env = append(os.Environ(), envChildSpool+"="+sp.Root(), envChildSMTP+"="+h.Addr)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v, want killed by SIGKILL\n%s", err, out)
	}
	if es, err := sp.List(ended); err != nil || len(es) != 1 {
		t.Fatalf("%s/ holds %v (%v); want the job, not yet removed", ended, es, err)
	}
	if q := queueFiles(t, sp.Path(spool.DirDB)); len(q) != 1 {
		t.Fatalf("queue %v after the kill; want the report's file", q)
	}

	s := startSMTP(t, plainServer, nil)
	reapAndMail(t, sp, s, nil)
	msgs := s.messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages after the restart, want 1", len(msgs))
	}
	if msg, _ := parse(t, msgs[0].Data); msg.Header.Get(notify.HeaderJID) != jid {
		t.Errorf("mail for %q, want %s", msg.Header.Get(notify.HeaderJID), jid)
	}
}

// TestReaperKilledChild is the reaper of
// TestReaper_KilledBetweenNotifyAndRemovalMailsOnce, in its own process:
// it kills itself as soon as the Mailer has queued a report.
func TestReaperKilledChild(t *testing.T) {
	root := os.Getenv(envChildSpool)
	if root == "" {
		t.Skip("the child process of TestReaper_KilledBetweenNotifyAndRemovalMailsOnce")
	}
	sp, err := spool.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	host, p, _ := net.SplitHostPort(os.Getenv(envChildSMTP))
	port, _ := strconv.Atoi(p)
	m, err := notify.OpenMailer(notify.MailConfig{Host: host, Port: port, From: "msched@example.org", Timeout: time.Minute},
		sp.Path(spool.DirDB), testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	kill := notify.NotifierFunc(func(ctx context.Context, r notify.Report) error {
		if err := m.Notify(ctx, r); err != nil {
			return err
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	})
	err = (&daemons.Reaper{Env: daemons.Env{Spool: sp, Log: testLog(t), Rescan: time.Minute}, Notifier: kill}).Run(context.Background())
	t.Fatalf("the reaper returned (%v) instead of handing over a report", err)
}

// A mailer killed after it marked a report sent and before it removed the
// queue file does not send it again at its next start.
func TestMailer_MarkedReportIsNotSentAgain(t *testing.T) {
	s := startSMTP(t, plainServer, nil)
	m1, db := openMailer(t, configFor(s), "")
	rep := report("J000031", "marked", "bob@example.org")
	if err := m1.Notify(context.Background(), rep); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the message arrives and leaves the queue", func() bool {
		return len(s.messages()) == 1 && len(queueFiles(t, db)) == 0
	})
	if err := m1.Close(); err != nil {
		t.Fatal(err)
	}
	// The queue file as it was before the removal the crash cut off.
	b, err := json.Marshal(map[string]any{"message_id": "msched.J000031.1.00@msched.test", "date": time.Now(),
		"report": rep, "attempts": 0, "next": time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(db, notify.MailQueueDir, "J000031.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	openMailer(t, configFor(s), db)
	eventually(t, "the queue file is removed", func() bool { return len(queueFiles(t, db)) == 0 })
	if n := len(s.attempts()); n != 1 {
		t.Errorf("%d delivery attempts, want the first one only", n)
	}
}
