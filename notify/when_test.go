package notify_test

import (
	"context"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"msched/daemons"
	"msched/notify"
	"msched/spool"
)

// job is a job of alice's (no notify: address) that ran on h1 from t0+1s,
// with the given mail: list; status nil: still running.
func job(jid string, when []string, status *int) *spool.Job {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	j := &spool.Job{JID: jid, Name: "sim", User: "alice", Command: []string{"./sim"}, Mail: when, SubmittedAt: t0,
		Walltime: spool.Duration(2 * time.Minute),
		Schedule: &spool.Schedule{Hosts: []string{"h1"}, PredictedSeconds: 42, EstimateSource: "model sim"},
		Run:      &spool.RunInfo{StartedAt: t0.Add(time.Second), Attempts: 1}}
	if status != nil {
		j.Run.EndedAt, j.Run.ExitStatus = t0.Add(time.Minute), status
	}
	return j
}

// TestMailer_WhenDomainAndLink mails through a real SMTP server what the
// jobs' mail: lists, else mail.when, ask for: a begin report when a job
// starts, the end report at its end, or only when it failed; a job without
// notify: to <user>@mail.domain; each mail with a link to the job's page.
func TestMailer_WhenDomainAndLink(t *testing.T) {
	s := startSMTP(t, plainServer, nil)
	cfg := configFor(s)
	cfg.When = []string{spool.MailBegin, spool.MailFail}
	cfg.Domain = "example.org"
	cfg.WebURL = "https://sched.example.org/msched"
	m, db := openMailer(t, cfg, "")
	ok, bad := 0, 1
	for _, c := range []struct {
		r      notify.Report
		mailed bool
	}{
		{notify.RenderBegin(job("J000001", nil, nil)), true},                        // mail.when: begin
		{notify.Render(job("J000001", nil, &ok), db), false},                        // succeeded: no fail mail
		{notify.Render(job("J000002", nil, &bad), db), true},                        // failed
		{notify.RenderBegin(job("J000003", []string{spool.MailEnd}, nil)), false},   // the job's list wins
		{notify.Render(job("J000003", []string{spool.MailEnd}, &ok), db), true},     // …
		{notify.Render(job("J000004", []string{}, &bad), db), true},                 // an empty list is the default
		{notify.RenderBegin(job("J000001", nil, nil)), false},                       // handed over again: already mailed
		{notify.Render(job("J000005", []string{spool.MailFail}, &ok), db), false},   // succeeded
		{notify.RenderBegin(job("J000005", []string{spool.MailBegin}, nil)), true},  // begin only
		{notify.Render(job("J000005", []string{spool.MailBegin}, &bad), db), false}, // no end mail asked
	} {
		if repeat := c.r.JID == "J000001" && c.r.Kind == notify.KindBegin && !c.mailed; !repeat && m.Wants(c.r) != c.mailed {
			t.Errorf("%s %q: Wants %v, want %v", c.r.JID, c.r.Kind, !c.mailed, c.mailed)
		}
		if err := m.Notify(context.Background(), c.r); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{ // JID and kind → the subject's start
		"J000001 begin": "msched: job J000001 (sim) started on h1",
		"J000002 ":      "msched: job J000002 (sim) exited with status 1",
		"J000003 ":      "msched: job J000003 (sim) exited with status 0",
		"J000004 ":      "msched: job J000004 (sim) exited with status 1",
		"J000005 begin": "msched: job J000005 (sim) started on h1",
	}
	eventually(t, "5 messages", func() bool { return len(s.messages()) == len(want) && m.Pending() == 0 })
	time.Sleep(50 * time.Millisecond) // and no more
	if n := len(s.messages()); n != len(want) {
		t.Fatalf("%d messages, want %d", n, len(want))
	}
	for _, got := range s.messages() {
		msg, body := parse(t, got.Data)
		jid := msg.Header.Get(notify.HeaderJID)
		kind := ""
		if strings.Contains(msg.Header.Get("Subject"), "started") {
			kind = notify.KindBegin
		}
		subject, ok := want[jid+" "+kind]
		if !ok {
			t.Errorf("unexpected mail %s %q: %s", jid, kind, msg.Header.Get("Subject"))
			continue
		}
		delete(want, jid+" "+kind)
		if s := msg.Header.Get("Subject"); s != subject {
			t.Errorf("%s: Subject %q, want %q", jid, s, subject)
		}
		if len(got.To) != 1 || got.To[0] != "alice@example.org" {
			t.Errorf("%s: to %q, want alice@example.org (mail.domain)", jid, got.To)
		}
		if a, err := mail.ParseAddress(msg.Header.Get("To")); err != nil || a.Address != "alice@example.org" {
			t.Errorf("%s: To %q", jid, msg.Header.Get("To"))
		}
		link := "The job's page: https://sched.example.org/msched/jobs/" + jid + "\n"
		if !strings.HasPrefix(strings.ReplaceAll(body, "\r\n", "\n"), link) {
			t.Errorf("%s: body does not start with %q:\n%s", jid, link, body)
		}
		if kind == notify.KindBegin {
			for _, line := range []string{"State:       started", "Hosts:       h1 (1)", "Wait:        1s", "Predicted:   42s",
				"Estimate:    model sim", "Ends about:  2026-03-01 12:00:43.000 UTC", "Walltime:    2m0s"} {
				if !strings.Contains(body, line) {
					t.Errorf("%s: begin report lacks %q:\n%s", jid, line, body)
				}
			}
		}
	}
	if f := failures(t, db); f != nil {
		t.Errorf("failures: %+v", f)
	}
}

// Without mail.domain a job that names no address is not mailed; the
// default sender is fully qualified when the host name is not.
func TestMailer_NoDomainAndDefaultSender(t *testing.T) {
	s := startSMTP(t, plainServer, nil)
	cfg := configFor(s)
	cfg.From, cfg.Hostname, cfg.Domain = "", "node7", "example.org"
	m, _ := openMailer(t, cfg, "")
	bad := 1
	j := job("J000001", nil, &bad)
	j.Notify = "bob@example.net"
	if err := m.Notify(context.Background(), notify.Render(j, t.TempDir())); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the message arrives", func() bool { return len(s.messages()) == 1 })
	if got := s.messages()[0]; got.From != "msched@example.org" || got.To[0] != "bob@example.net" {
		t.Errorf("envelope from %q to %q; want msched@example.org (mail.domain: node7 is no FQDN) to the notify: address", got.From, got.To)
	}

	cfg.Domain = ""
	cfg.From = ""
	cfg.Hostname = "node7.example.com"
	m2, db2 := openMailer(t, cfg, "")
	if err := m2.Notify(context.Background(), notify.Render(job("J000002", nil, &bad), t.TempDir())); err != nil {
		t.Fatal(err)
	}
	j3 := job("J000003", nil, &bad)
	j3.Notify = "carol@example.net"
	if err := m2.Notify(context.Background(), notify.Render(j3, t.TempDir())); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the second message sent and the queue empty", func() bool { return len(s.messages()) == 2 && len(queueFiles(t, db2)) == 0 })
	time.Sleep(50 * time.Millisecond) // and no third
	if got := s.messages(); len(got) != 2 || got[1].From != "msched@node7.example.com" || got[1].To[0] != "carol@example.net" {
		t.Errorf("%d messages; the second from %q to %q; want only carol's (alice has no address)", len(got), got[1].From, got[1].To)
	}
}

// countingMailer is a Mailer that counts the begin reports it has taken
// (Notify returned): the sign that a reaper has read the job in running/
// and that the Mailer has queued the report, or not.
type countingMailer struct {
	*notify.Mailer
	begins atomic.Int32
}

func (m *countingMailer) Notify(ctx context.Context, r notify.Report) error {
	err := m.Mailer.Notify(ctx, r)
	if r.Kind == notify.KindBegin {
		m.begins.Add(1)
	}
	return err
}

// The reaper, with the Mailer on a real SMTP server: a job of alice's
// (mail.domain example.org) that asks for mail: [begin, end] gets the
// begin notice while it runs and, once it has ended, its report; a
// restarted reaper that sees it running again sends no second notice.
func TestReaper_BeginAndEndMailThroughSMTP(t *testing.T) {
	s := startSMTP(t, plainServer, nil)
	sp, err := spool.Create(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	jid, err := sp.NextJID()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	j := &spool.Job{JID: jid, Name: "both", User: "alice", Command: []string{"sleep", "40"}, Mail: []string{spool.MailBegin, spool.MailEnd},
		SubmittedAt: now.Add(-time.Second), Walltime: spool.Duration(2 * time.Minute),
		History:  []spool.Event{{State: spool.Submitted, At: now}, {State: spool.Running, At: now}},
		Schedule: &spool.Schedule{Hosts: []string{"h0"}, PredictedSeconds: 120, EstimateSource: "walltime (no history of this command by this user)"},
		Run:      &spool.RunInfo{StartedAt: now, Attempts: 1}}
	write := func(st spool.State) {
		b, err := j.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := spool.WriteAtomic(sp.Dir(st), jid, b); err != nil {
			t.Fatal(err)
		}
	}
	write(spool.Running)
	cfg := configFor(s)
	cfg.Domain = "example.org"
	reaper := func() (m *countingMailer, stop func()) {
		mailer, _ := openMailer(t, cfg, sp.Path(spool.DirDB))
		m = &countingMailer{Mailer: mailer}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- (&daemons.Reaper{Env: daemons.Env{Spool: sp, Log: testLog(t), Rescan: 20 * time.Millisecond}, Notifier: m}).Run(ctx)
		}()
		return m, func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
			_ = m.Close()
		}
	}
	_, stop := reaper()
	// The server keeps the message before it answers 250, and the Mailer
	// marks the report sent (then removes its queue file) once it has read
	// the 250: stopped before that, it rightly sends the notice again at the
	// next start (at least once). Stop once it is marked.
	db := sp.Path(spool.DirDB)
	eventually(t, "the begin notice is sent and marked", func() bool {
		return len(s.messages()) == 1 && len(queueFiles(t, db)) == 0
	})
	stop()
	again, stop := reaper() // sees the job running again
	eventually(t, "the restarted reaper hands the begin report over again", func() bool { return again.begins.Load() > 0 })
	// It ends: the run daemon moves it to finished/.
	zero := 0
	j.Run.EndedAt, j.Run.ExitStatus = time.Now().UTC(), &zero
	if err := os.Remove(filepath.Join(sp.Dir(spool.Running), jid)); err != nil {
		t.Fatal(err)
	}
	write(spool.Finished)
	eventually(t, "the report", func() bool { return len(s.messages()) == 2 })
	time.Sleep(50 * time.Millisecond)
	stop()
	msgs := s.messages()
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want the begin notice and the report", len(msgs))
	}
	for i, want := range []string{"msched: job " + jid + " (both) started on h0", "msched: job " + jid + " (both) exited with status 0"} {
		msg, body := parse(t, msgs[i].Data)
		if got := msg.Header.Get("Subject"); got != want || msgs[i].To[0] != "alice@example.org" {
			t.Errorf("mail %d: %q to %q, want %q to alice@example.org", i, got, msgs[i].To, want)
		}
		if !strings.Contains(body, "Estimate:    walltime (no history of this command by this user)") {
			t.Errorf("mail %d does not say where the prediction came from:\n%s", i, body)
		}
	}
}
