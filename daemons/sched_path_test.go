package daemons

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"msched/hoststat"
	"msched/policy"
	"msched/sim"
	"msched/spool"
)

// lockstep is the simulator's policy. At each of the simulator's decisions
// it also hands the state the simulator shows its policy to the sched
// daemon's path, as sched reads it (running jobs and waiting jobs as job
// files), with a policy of the same name of the daemon's own, and fails the
// test unless the daemon's moves carry out the simulator's plan exactly.
type lockstep struct {
	policy.Policy // the simulator's
	t             *testing.T
	d             *Sched // with a policy of the same name
	decisions     int
	longest       int // the longest queue shown
	started       int
}

func (l *lockstep) Plan(ctx context.Context, s policy.Snapshot) (policy.Plan, error) {
	plan, err := l.Policy.Plan(ctx, s)
	if err != nil {
		return plan, err
	}
	l.decisions++
	l.longest = max(l.longest, len(s.Queue))
	var active, read []*spool.Job
	var reading []waitingJob
	for _, r := range s.Running {
		active = append(active, &spool.Job{JID: r.ID, Name: r.Name,
			Schedule: &spool.Schedule{Hosts: r.Hosts, PredictedSeconds: r.End.Sub(r.Start).Seconds()},
			Run:      &spool.RunInfo{StartedAt: r.Start}})
	}
	for _, q := range s.Queue {
		read = append(read, &spool.Job{JID: q.ID, Name: q.Name, SubmittedAt: q.Submit,
			Hosts: &spool.Hosts{Count: q.Min}, Walltime: spool.Duration(q.Estimate)})
		reading = append(reading, waitingJob{JID: q.ID, State: spool.Queued})
	}
	snap := l.d.view(s.Now, nil, nil, active, read)
	dec, out, err := l.d.decide(ctx, s.Now, snap, reading, nil)
	if err != nil {
		return plan, err
	}
	at := fmt.Sprintf("%s at %s", l.Name(), s.Now.Sub(sim.Epoch))
	if len(dec.Faults) > 0 {
		l.t.Fatalf("%s: the daemon's path refused %v", at, dec.Faults)
	}
	// The policies were shown the same: queue, running jobs' ends, when
	// each host is free (speed and load aside: the machine is identical).
	if a, b := shown(dec.Snapshot), shown(s); a != b {
		l.t.Fatalf("%s: the daemon's policy was shown\n%s\nthe simulator's\n%s", at, a, b)
	}
	var want, got []string
	for _, pl := range plan.StartNow {
		want = append(want, fmt.Sprintf("start %s on %v for %v", pl.Job, pl.Hosts, pl.Predicted))
	}
	for _, r := range plan.Reject {
		want = append(want, "reject "+r.Job+": "+r.Reason)
	}
	for _, pl := range plan.Later {
		want = append(want, fmt.Sprintf("later %s on %v at %s for %v", pl.Job, pl.Hosts, pl.Start.Sub(s.Now), pl.Predicted))
	}
	for _, m := range out.Moves {
		switch m.To {
		case spool.Runnable:
			got = append(got, fmt.Sprintf("start %s on %v for %v", m.JID, m.Schedule.Hosts, time.Duration(m.Schedule.PredictedSeconds*float64(time.Second))))
			l.started++
		case spool.Rejected:
			got = append(got, "reject "+m.JID+": "+m.Reason)
		}
	}
	for _, pl := range out.Later {
		got = append(got, fmt.Sprintf("later %s on %v at %s for %v", pl.Job, pl.Hosts, pl.Start.Sub(s.Now), pl.Predicted))
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		l.t.Fatalf("%s:\nthe daemon's path:\n  %s\nthe simulator's:\n  %s", at, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	return plan, nil
}

// shown is what a snapshot shows a policy, as text.
func shown(s policy.Snapshot) string {
	var b strings.Builder
	for _, q := range s.Queue {
		fmt.Fprintf(&b, "%s %d..%d est %v; ", q.ID, q.Min, q.Max, q.Estimate)
	}
	b.WriteString("\n")
	for _, r := range s.Running {
		fmt.Fprintf(&b, "%s on %v %s..%s; ", r.ID, r.Hosts, r.Start.Sub(s.Now), r.End.Sub(s.Now))
	}
	b.WriteString("\n")
	for _, h := range s.Hosts {
		free := "free"
		if h.FreeAt.After(s.Now) {
			free = h.FreeAt.Sub(s.Now).String()
		}
		fmt.Fprintf(&b, "%s %s; ", h.Name, free)
	}
	return b.String()
}

// One sequence of states through both paths: a bursty workload (queues
// far longer than a GA's window, jobs that overrun their estimates) run by
// the simulator, each of whose snapshots also goes through the sched
// daemon's path (its view of job files, the policy path, the
// plan-to-moves step), with a policy of its own: for every policy, the
// daemon acts on exactly the plan the simulator acts on.
func TestSched_SamePlansAsTheSimulator(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	const nhosts = 16
	var jobs []sim.Job
	at := 0.0
	for i := range 300 {
		if rng.Intn(8) == 0 {
			at += float64(rng.Intn(600)) // bursts: most jobs come together
		}
		n := 1 + rng.Intn(6)
		if rng.Intn(5) == 0 {
			n = 1 + rng.Intn(nhosts)
		}
		est := float64(10 + rng.Intn(300))
		run := 1 + float64(rng.Intn(int(est)))
		if rng.Intn(6) == 0 {
			run = est + float64(1+rng.Intn(60)) // overruns its estimate
		}
		jobs = append(jobs, sim.Job{ID: fmt.Sprintf("j%03d", i), Submit: at, Min: n, Max: n, Run: run, Estimate: est})
	}
	hosts := make([]hoststat.Host, nhosts)
	m := sim.Identical(nhosts)
	for i, h := range m.Hosts {
		hosts[i] = hoststat.Host{Name: h.Name, Arch: h.Arch, Cluster: h.Cluster}
	}
	for _, name := range policy.Names() {
		t.Run(name, func(t *testing.T) {
			s, err := sim.New(sim.Config{Machine: m}, jobs)
			if err != nil {
				t.Fatal(err)
			}
			o := policy.Options{Predictor: s.Predictor(), Seed: 1, Generations: 3, Population: 8}
			simPol, err := policy.New(name, o)
			if err != nil {
				t.Fatal(err)
			}
			daemonPol, err := policy.New(name, o)
			if err != nil {
				t.Fatal(err)
			}
			d := &Sched{Hosts: hosts, Policy: daemonPol, PolicyName: name,
				log: slog.New(slog.NewTextHandler(io.Discard, nil)), path: policy.Decider{Policy: daemonPol}}
			l := &lockstep{Policy: simPol, t: t, d: d}
			r, err := s.Run(context.Background(), l)
			if err != nil {
				t.Fatal(err)
			}
			if done := sim.Compute(r, false).Finished; done != len(jobs) || l.started != len(jobs) {
				t.Fatalf("%d jobs finished, %d started by the daemon's path, of %d", done, l.started, len(jobs))
			}
			if reads := daemonPol.Reads(); l.longest <= policy.DefaultWindow && reads == 0 {
				t.Fatalf("queues of at most %d jobs: a cut to a window would not show", l.longest)
			}
			t.Logf("%d decisions, queues of up to %d jobs", l.decisions, l.longest)
		})
	}
}
