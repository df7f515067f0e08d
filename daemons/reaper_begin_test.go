package daemons

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"msched/notify"
	"msched/spool"
)

// chooser is a recorder that takes what mail.when would (a Chooser).
type chooser struct {
	recorder
	when []string
	fail atomic.Int32 // fail this many Notify calls first
}

func (c *chooser) Wants(r notify.Report) bool { return notify.Wanted(r, c.when) }

func (c *chooser) Notify(ctx context.Context, r notify.Report) error {
	if c.fail.Add(-1) >= 0 {
		return errors.New("queue full")
	}
	return c.recorder.Notify(ctx, r)
}

func runningJob(t *testing.T, sp *spool.Spool, mail []string) string {
	t.Helper()
	now := time.Now().UTC()
	return putJob(t, sp, spool.Running, &spool.Job{Name: "sim", Command: []string{"./sim"}, Mail: mail,
		Schedule: &spool.Schedule{Hosts: []string{"h0"}, PredictedSeconds: 60},
		Run:      &spool.RunInfo{StartedAt: now, Attempts: 1}})
}

// The reaper tells the Notifier that a job started when the job's mail:
// list, else the Notifier's default, asks for it: once per job while it
// runs, again after a failed hand-over.
func TestReaper_BeginReports(t *testing.T) {
	sp := newTestSpool(t)
	asks := runningJob(t, sp, []string{spool.MailBegin, spool.MailEnd})
	silent := runningJob(t, sp, []string{spool.MailEnd})
	byDefault := runningJob(t, sp, nil)
	n := &chooser{when: []string{spool.MailBegin}}
	n.fail.Store(1)
	env := testEnv(t, sp)
	env.Rescan = 50 * time.Millisecond // a failed hand-over is tried at the next scan
	stop := startDaemon(t, (&Reaper{Env: env, Notifier: n}).Run)
	eventually(t, "two begin reports", func() bool { return n.count() == 2 })
	// A job that starts later is seen through running/'s events.
	later := runningJob(t, sp, []string{spool.MailBegin})
	eventually(t, "the later job's begin report", func() bool { return n.count() == 3 })
	time.Sleep(100 * time.Millisecond) // no second report of any
	stop()
	got := map[string]int{}
	n.mu.Lock()
	for _, r := range n.reps {
		if r.Kind != notify.KindBegin || r.State != string(spool.Running) {
			t.Errorf("%s: kind %q state %q", r.JID, r.Kind, r.State)
		}
		got[r.JID]++
	}
	n.mu.Unlock()
	if got[asks] != 1 || got[byDefault] != 1 || got[later] != 1 || got[silent] != 0 {
		t.Errorf("begin reports %v; want one each of %s (mail: [begin]), %s (mail.when) and %s, none of %s (mail: [end])",
			got, asks, byDefault, later, silent)
	}
	if jobsIn(t, sp, spool.Running) != 4 {
		t.Error("the reaper moved a running job")
	}
}

// A Notifier that does not choose takes the begin reports of the jobs that
// ask for them (DefaultWhen is [end]).
func TestReaper_BeginReportsPlainNotifier(t *testing.T) {
	sp := newTestSpool(t)
	asks := runningJob(t, sp, []string{spool.MailBegin})
	runningJob(t, sp, nil)
	rec := &recorder{}
	stop := startDaemon(t, (&Reaper{Env: testEnv(t, sp), Notifier: rec}).Run)
	eventually(t, "a begin report", func() bool { return rec.count() == 1 })
	time.Sleep(50 * time.Millisecond)
	stop()
	if rec.count() != 1 || rec.reps[0].JID != asks {
		t.Errorf("reports %+v; want the one of %s", rec.reps, asks)
	}
}
