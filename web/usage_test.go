package web

import (
	"encoding/json"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"msched/acct"
	"msched/hoststat"
	"msched/spool"
)

// The usage chart's buckets hold exactly the host time of the jobs that
// ran and the jobs that waited in them, from the log and the spool.
func TestUsage_Buckets(t *testing.T) {
	now := testNow // on a minute
	sp := newSpool(t)
	hostsFile := filepath.Join(sp.Path(spool.DirDB), "hosts.yaml")
	if err := hoststat.WriteHosts(hostsFile, []hoststat.Host{{Name: "m/cpu0", Arch: "x"}, {Name: "m/cpu1", Arch: "x"}}); err != nil {
		t.Fatal(err)
	}
	min := func(n int) time.Time { return now.Add(time.Duration(n) * time.Minute) }
	// Reaped: waited 10 minutes, ran 10 on one host; one failed at once.
	var log []byte
	for _, r := range []acct.Record{
		{JID: "J000001", State: spool.OutcomeExited, ExitStatus: ptr(0), Hosts: []string{"m/cpu0"}, SubmittedAt: min(-40), StartedAt: min(-30), EndedAt: min(-20)},
		{JID: "J000002", State: spool.OutcomeExited, ExitStatus: ptr(1), Hosts: []string{"m/cpu1"}, SubmittedAt: min(-15), StartedAt: min(-15), EndedAt: min(-15).Add(time.Second)},
		{JID: "J000003", State: spool.OutcomeExited, ExitStatus: ptr(0), Hosts: []string{"m/cpu1"}, SubmittedAt: min(-300), StartedAt: min(-290), EndedAt: min(-280)}, // before the window
	} {
		line, _ := json.Marshal(r)
		log = append(append(log, line...), '\n')
	}
	writeLog(t, sp, log)
	// In the spool: one running on both hosts for 5 minutes, one waiting
	// for 3.
	running := &spool.Job{Name: "r", Command: []string{"/bin/true"}, JID: "J000004", User: "alice", SubmittedAt: min(-5),
		Schedule: &spool.Schedule{Hosts: []string{"m/cpu0", "m/cpu1"}, PredictedSeconds: 600}, Run: &spool.RunInfo{StartedAt: min(-5)}}
	queued := &spool.Job{Name: "q", Command: []string{"/bin/true"}, JID: "J000005", User: "alice", SubmittedAt: min(-3)}
	for st, j := range map[spool.State]*spool.Job{spool.Running: running, spool.Queued: queued} {
		data, err := j.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := spool.WriteAtomic(sp.Dir(st), j.JID, data); err != nil {
			t.Fatal(err)
		}
	}
	h := New(Config{Spool: sp, HostsFile: hostsFile, Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler)}).(*handler)
	u := h.usageAlone("1h")
	if len(u.Points) != 60 || u.Hosts != 2 || !u.Complete || u.Ended != 2 || u.OK != 1 || u.Failed != 1 {
		t.Fatalf("%d points, %d hosts, complete %v, ended %d (ok %d failed %d)", len(u.Points), u.Hosts, u.Complete, u.Ended, u.OK, u.Failed)
	}
	at := func(m int) UsagePoint { // the bucket starting m minutes from now
		for _, p := range u.Points {
			if p.Start.Equal(min(m)) {
				return p
			}
		}
		t.Fatalf("no bucket at %v", min(m))
		return UsagePoint{}
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for _, c := range []struct {
		m           int
		util, queue float64
	}{
		{-45, 0, 0}, {-35, 0, 1}, {-25, 0.5, 0}, {-15, 1.0 / 120, 0}, {-10, 0, 0}, {-4, 1, 0}, {-2, 1, 1}, {-1, 1, 1},
	} {
		if p := at(c.m); !near(p.Utilisation, c.util) || !near(p.Queue, c.queue) {
			t.Errorf("%d min: utilisation %v queue %v, want %v %v", c.m, p.Utilisation, p.Queue, c.util, c.queue)
		}
	}
	if p := at(-15); p.Ended != 1 {
		t.Errorf("the failed job's bucket counts %d ended", p.Ended)
	}
	page := get(t, h, "/?span=1h").Body.String()
	if !strings.Contains(page, `id="usage-chart"`) || !strings.Contains(page, `<b>Last 1h</b>: 2 jobs ended`) {
		t.Errorf("the overview has no usage chart for the last hour")
	}
	if frag := get(t, h, "/?fragment=1").Body.String(); strings.Contains(frag, `id="usage-chart"`) || !strings.Contains(frag, `<section id="usage" data-keep></section>`) {
		t.Errorf("the 5-second refresh carries the usage chart")
	}
}
