package daemons

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"msched/hoststat"
	"msched/policy"
	"msched/profiler"
	"msched/spool"
)

// A placed job's schedule says where its prediction came from: the sched
// daemon hands the policy a context carrying its profiler.Sources, the
// predictor records each answer's source there, and planMoves writes it.
func TestSched_EstimateSource(t *testing.T) {
	sp := schedSpool(t, 2, 1) // walltimes 10 s and 11 s, command true
	prof, err := profiler.New(profiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Job 0's user has run `true` before, in about 2 s; job 1 is another
	// user's (its file is rewritten below), who has not.
	es, _ := sp.List(spool.Queued)
	j0, _ := sp.Read(spool.Queued, es[0].Name)
	for range 4 {
		if err := prof.Observe("true", j0.User, 1, 2); err != nil {
			t.Fatal(err)
		}
	}
	j1, _ := sp.Read(spool.Queued, es[1].Name)
	j1.User = "somebody-else"
	if err := sp.As(spool.Sched).Update(j1); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New("fcfs", policy.Options{Predictor: profiler.Predictor{Profiler: prof}})
	if err != nil {
		t.Fatal(err)
	}
	d := &Sched{Env: Env{Spool: sp}, Hosts: localHosts(2), Policy: pol, Replan: 50 * time.Millisecond}
	stop := startDaemon(t, d.Run)
	eventually(t, "both jobs runnable", func() bool { return jobsIn(t, sp, spool.Runnable) == 2 })
	stop()
	for jid, want := range map[string]struct {
		source string
		secs   float64
	}{
		j0.JID: {"profiler: 4 earlier runs of this command by this user", 2},
		j1.JID: {"walltime (no history of this command by this user)", 11},
	} {
		_, j, err := sp.Find(jid)
		if err != nil {
			t.Fatal(err)
		}
		if j.Schedule == nil || !strings.HasPrefix(j.Schedule.EstimateSource, want.source) {
			t.Errorf("%s: schedule %+v, want the estimate source %q", jid, j.Schedule, want.source)
		} else if j.Schedule.PredictedSeconds < want.secs || j.Schedule.PredictedSeconds > 1.01*want.secs && want.secs > 10 {
			t.Errorf("%s: predicted %v s, want about %v", jid, j.Schedule.PredictedSeconds, want.secs)
		}
	}
}

func TestPlanMoves_EstimateSource(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	in := movesIn{Now: now, Policy: "easy", Read: []waitingJob{{JID: "J1", State: spool.Queued}, {JID: "J2", State: spool.Queued}},
		Plan: policy.Plan{StartNow: []policy.Placement{{Job: "J1", Hosts: []string{"h0"}, Start: now, Predicted: time.Minute},
			{Job: "J2", Hosts: []string{"h1"}, Start: now, Predicted: time.Minute}}},
		EstimateSource: func(job string) string {
			if job == "J1" {
				return "walltime"
			}
			return ""
		}}
	out := planMoves(in)
	got := map[string]string{}
	for _, m := range out.Moves {
		got[m.JID] = m.Schedule.EstimateSource
	}
	if got["J1"] != "walltime" || got["J2"] != "" {
		t.Errorf("estimate sources %q", got)
	}
	in.EstimateSource = nil
	for _, m := range planMoves(in).Moves {
		if m.Schedule.EstimateSource != "" {
			t.Errorf("%s: %q without a source", m.JID, m.Schedule.EstimateSource)
		}
	}
}

// A load sample older than LoadMaxAge is no host's load now: the host is
// taken as unloaded. This machine's hosts are sampled by sched itself.
func TestSched_HostLoadsBoundedAge(t *testing.T) {
	dir := t.TempDir()
	st, err := hoststat.OpenStore(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for host, age := range map[string]time.Duration{"fresh": 10 * time.Second, "old": 5 * time.Minute} {
		if err := st.Record(host, hoststat.Stats{Time: now.Add(-age), Load1: 4, NCPU: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	d := &Sched{StatsDir: dir, Hosts: []hoststat.Host{
		{Name: "fresh", Address: "ssh://a"}, {Name: "old", Address: "ssh://b"}, {Name: "here", Address: "local"}}}
	d.log = slog.New(slog.DiscardHandler)
	loads := d.hostLoads(now)
	if loads["fresh"] != 2 {
		t.Errorf("fresh sample: load %v, want 4 over 2 CPUs", loads["fresh"])
	}
	if l, ok := loads["old"]; ok {
		t.Errorf("a 5-minute-old sample counted: load %v", l)
	}
	if _, ok := loads["here"]; !ok {
		t.Error("this machine's host has no load; sched samples it itself")
	}
}
