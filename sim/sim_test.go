package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"msched/policy"
)

// strictFCFS is a test fixture: it starts jobs in arrival order while the
// first waiting job fits on the hosts that are free now (no backfilling).
type strictFCFS struct{ calls []call }

// call records what a policy was shown.
type call struct {
	now     float64
	queue   []string
	running []string
	ends    []float64
}

func (p *strictFCFS) Name() string { return "strict-fcfs" }
func (p *strictFCFS) Reads() int   { return 0 }

func (p *strictFCFS) Plan(_ context.Context, s policy.Snapshot) (policy.Plan, error) {
	c := call{now: s.Now.Sub(Epoch).Seconds()}
	for _, q := range s.Queue {
		c.queue = append(c.queue, q.ID)
	}
	for _, r := range s.Running {
		c.running = append(c.running, r.ID)
		c.ends = append(c.ends, r.End.Sub(Epoch).Seconds())
	}
	p.calls = append(p.calls, c)
	var free []string
	for _, h := range s.Hosts {
		if !h.FreeAt.After(s.Now) {
			free = append(free, h.Name)
		}
	}
	var plan policy.Plan
	for _, q := range s.Queue {
		if q.Min > len(free) {
			break
		}
		plan.StartNow = append(plan.StartNow, policy.Placement{Job: q.ID, Hosts: free[:q.Min], Start: s.Now})
		free = free[q.Min:]
	}
	return plan, nil
}

func rigid(id string, submit float64, procs int, run, est float64) Job {
	return Job{ID: id, Submit: submit, Min: procs, Max: procs, Run: run, Estimate: est}
}

func run(t *testing.T, cfg Config, jobs []Job, p policy.Policy) *Result {
	t.Helper()
	s, err := New(cfg, jobs)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func starts(r *Result) map[string]float64 {
	m := map[string]float64{}
	for k, j := range r.Jobs {
		m[j.ID] = r.Start[k]
	}
	return m
}

// Hand-computed FCFS on 4 hosts: A (3 hosts, 0..10) blocks B (2 hosts)
// until 10; C (1 host) may not pass B, so it starts with B at 10.
func TestSim_FCFSHandComputed(t *testing.T) {
	jobs := []Job{rigid("A", 0, 3, 10, 10), rigid("B", 1, 2, 5, 5), rigid("C", 2, 1, 3, 3)}
	r := run(t, Config{Machine: Identical(4)}, jobs, &strictFCFS{})
	want := map[string]float64{"A": 0, "B": 10, "C": 10}
	for id, st := range starts(r) {
		if st != want[id] {
			t.Errorf("%s starts at %g, want %g", id, st, want[id])
		}
	}
	m := Compute(r, false)
	if m.Jobs != 3 || m.MeanWait != (0+9+8)/3.0 || m.Makespan != 15 {
		t.Errorf("metrics = %+v, want 3 jobs, mean wait 17/3, makespan 15", m)
	}
	// Busy host-seconds 3·10 + 2·5 + 1·3 = 43 over 4 hosts × 15 s.
	if math.Abs(m.Utilization-43.0/60) > 1e-12 {
		t.Errorf("utilisation = %g, want %g", m.Utilization, 43.0/60)
	}
	if m.MedianWait != 8 || m.P95Wait != 9 {
		t.Errorf("median/p95 wait = %g/%g, want 8/9", m.MedianWait, m.P95Wait)
	}
}

// headOnly is strict FCFS that reads only the first waiting job, a window
// of one (the simulator hands it a queue of one): each of its plans starts
// at most one job.
type headOnly struct{ strictFCFS }

func (p *headOnly) Reads() int { return 1 }

// After a plan that starts a job the policy is asked again at the same
// instant, as the live sched plans again on the wake-up its own moves
// cause: a policy that sees a window of the queue then sees the jobs that
// entered it. When A ends at 10, B, C and D all start, one plan each.
func TestSim_AsksAgainAfterAStart(t *testing.T) {
	jobs := []Job{rigid("A", 0, 4, 10, 10), rigid("B", 1, 1, 5, 5), rigid("C", 2, 1, 5, 5), rigid("D", 3, 2, 5, 5)}
	p := &headOnly{}
	r := run(t, Config{Machine: Identical(4)}, jobs, p)
	want := map[string]float64{"A": 0, "B": 10, "C": 10, "D": 10}
	for id, st := range starts(r) {
		if st != want[id] {
			t.Errorf("%s starts at %g, want %g", id, st, want[id])
		}
	}
	var at10 [][]string
	for _, c := range p.calls {
		if c.now == 10 {
			at10 = append(at10, c.queue)
		}
	}
	// After A's termination: B, C, D in turn, then nothing waits.
	if fmt.Sprint(at10) != "[[B] [C] [D]]" {
		t.Errorf("plans at 10 saw %v, want [[B] [C] [D]]", at10)
	}
}

// At one instant the policy sees submissions before terminations: B is
// submitted at 10, when A ends; the decision after B's submission still
// shows A running (its end shown just after now), the one after A's
// termination does not, and B starts at 10.
func TestSim_SubmissionsBeforeTerminations(t *testing.T) {
	jobs := []Job{rigid("A", 0, 1, 10, 10), rigid("B", 10, 2, 5, 5)}
	p := &strictFCFS{}
	r := run(t, Config{Machine: Identical(2)}, jobs, p)
	if st := starts(r)["B"]; st != 10 {
		t.Fatalf("B starts at %g, want 10", st)
	}
	want := []string{
		"t=0 queue=[A] running=[] ends=[]",
		"t=10 queue=[B] running=[A] ends=[11]",
		"t=10 queue=[B] running=[] ends=[]",
	}
	var got []string
	for _, c := range p.calls {
		got = append(got, fmt.Sprintf("t=%g queue=%v running=%v ends=%v", c.now, c.queue, c.running, c.ends))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("decisions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A job that runs past its estimate keeps running to its actual end; the
// policy sees it ending policy.OverrunMargin after now.
func TestSim_OverrunShownEndingSoon(t *testing.T) {
	jobs := []Job{rigid("A", 0, 1, 10, 5), rigid("B", 7, 2, 1, 1)}
	p := &strictFCFS{}
	r := run(t, Config{Machine: Identical(2)}, jobs, p)
	if st := starts(r); st["B"] != 10 || r.End[0] != 10 {
		t.Fatalf("A ends at %g, B starts at %g; want 10 and 10", r.End[0], st["B"])
	}
	c := p.calls[1] // B's submission
	if c.now != 7 || len(c.ends) != 1 || c.ends[0] != 8 {
		t.Fatalf("at B's submission the policy saw %+v, want A ending at 8", c)
	}
}

// badPolicy starts the first waiting job on the hosts it names.
type badPolicy struct {
	hosts []string
	job   string
}

func (p badPolicy) Name() string { return "bad" }
func (p badPolicy) Reads() int   { return 0 }
func (p badPolicy) Plan(_ context.Context, s policy.Snapshot) (policy.Plan, error) {
	if len(s.Queue) == 0 {
		return policy.Plan{}, nil
	}
	id := p.job
	if id == "" {
		id = s.Queue[0].ID
	}
	return policy.Plan{StartNow: []policy.Placement{{Job: id, Hosts: p.hosts, Start: s.Now}}}, nil
}

func TestSim_RejectsBadPlacements(t *testing.T) {
	jobs := []Job{rigid("A", 0, 1, 10, 10), rigid("B", 1, 1, 10, 10)}
	wide := []Job{rigid("W", 0, 2, 10, 10)}
	for _, c := range []struct {
		name string
		p    policy.Policy
		jobs []Job // nil: jobs
		want string
	}{
		{"busy host", badPolicy{hosts: []string{"p0"}}, nil, "start B: hosts not free: p0 (running job A)"},
		{"unknown host", badPolicy{hosts: []string{"x9"}}, nil, `unknown host "x9"`},
		{"host twice", badPolicy{hosts: []string{"p1", "p1"}}, wide, "start W: host p1 given twice"},
		{"too many", badPolicy{hosts: []string{"p0", "p1"}}, nil, "start A: 2 hosts, the job takes 1 to 1"},
		{"unknown job", badPolicy{hosts: []string{"p0"}, job: "Z"}, nil, "start Z: not a waiting job"},
	} {
		t.Run(c.name, func(t *testing.T) {
			js := jobs
			if c.jobs != nil {
				js = c.jobs
			}
			s, err := New(Config{Machine: Identical(2)}, js)
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Run(context.Background(), c.p)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
}

// rejectRunning starts the first job, then rejects it while it runs.
type rejectRunning struct{}

func (rejectRunning) Name() string { return "reject-running" }
func (rejectRunning) Reads() int   { return 0 }
func (rejectRunning) Plan(_ context.Context, s policy.Snapshot) (policy.Plan, error) {
	if len(s.Running) > 0 {
		return policy.Plan{Reject: []policy.Rejection{{Job: s.Running[0].ID, Reason: "too late"}}}, nil
	}
	if len(s.Queue) == 0 {
		return policy.Plan{}, nil
	}
	return policy.Plan{StartNow: []policy.Placement{{Job: s.Queue[0].ID, Hosts: []string{"p0"}, Start: s.Now}}}, nil
}

// A policy may reject only a waiting job: rejecting a running one is the
// policy's error, not a job that ends twice.
func TestSim_RejectingARunningJobIsAnError(t *testing.T) {
	s, _ := New(Config{Machine: Identical(2)}, []Job{rigid("A", 0, 1, 10, 10), rigid("B", 1, 1, 10, 10)})
	if _, err := s.Run(context.Background(), rejectRunning{}); err == nil || !strings.Contains(err.Error(), "reject A: not a waiting job") {
		t.Fatalf("err = %v, want the rejection of running A refused", err)
	}
}

// idle never starts anything.
type idle struct{}

func (idle) Name() string { return "idle" }
func (idle) Reads() int   { return 0 }
func (idle) Plan(context.Context, policy.Snapshot) (policy.Plan, error) {
	return policy.Plan{}, nil
}

func TestSim_StalledPolicyIsAnError(t *testing.T) {
	s, _ := New(Config{Machine: Identical(2)}, []Job{rigid("A", 0, 1, 1, 1)})
	if _, err := s.Run(context.Background(), idle{}); err == nil || !strings.Contains(err.Error(), "left 1 jobs waiting") {
		t.Fatalf("err = %v, want a stalled-queue error", err)
	}
}

func TestSim_HonoursContext(t *testing.T) {
	jobs := make([]Job, 5000)
	for i := range jobs {
		jobs[i] = rigid(fmt.Sprint(i), float64(i), 1, 1, 1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	s, _ := New(Config{Machine: Identical(1), CheckEvery: 10, Progress: func(done, total int) {
		if calls++; calls == 3 {
			cancel()
		}
	}}, jobs)
	r, err := s.Run(ctx, &strictFCFS{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := Compute(r, false).Finished; n == 0 || n >= len(jobs) {
		t.Fatalf("%d jobs finished before the cancel took effect, want some but not all", n)
	}
}

// rejecter rejects job "X" and starts the others like strictFCFS.
type rejecter struct{ strictFCFS }

func (p *rejecter) Plan(ctx context.Context, s policy.Snapshot) (policy.Plan, error) {
	var q []policy.QueuedJob
	var rej []policy.Rejection
	for _, j := range s.Queue {
		if j.ID == "X" {
			rej = append(rej, policy.Rejection{Job: "X", Reason: "too big"})
		} else {
			q = append(q, j)
		}
	}
	s.Queue = q
	pl, err := p.strictFCFS.Plan(ctx, s)
	pl.Reject = rej
	return pl, err
}

func TestSim_Rejections(t *testing.T) {
	jobs := []Job{rigid("X", 0, 1, 1, 1), rigid("A", 0, 1, 2, 2)}
	r := run(t, Config{Machine: Identical(1)}, jobs, &rejecter{})
	if r.Status[0] != Rejected || r.Reasons["X"] != "too big" || r.Status[1] != Done {
		t.Fatalf("status = %v, reasons = %v", r.Status, r.Reasons)
	}
	if m := Compute(r, false); m.Rejected != 1 || m.Finished != 1 {
		t.Fatalf("metrics = %+v", m)
	}
}

// A closed system: three jobs always wait; jobs of 10 s on one host run
// back to back, so by the horizon of 35 s three have finished and one is
// running, and 4 + 3 have been submitted.
func TestSim_BacklogAndHorizon(t *testing.T) {
	more := func(i int) Job { return rigid(fmt.Sprint("g", i), 0, 1, 10, 10) }
	s, err := New(Config{Machine: Identical(1), Backlog: 3, More: more, Horizon: 35}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &strictFCFS{}
	r, err := s.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Jobs) != 7 {
		t.Fatalf("%d jobs submitted, want 7", len(r.Jobs))
	}
	for _, c := range p.calls {
		if len(c.queue) > 3 {
			t.Fatalf("the policy saw %d waiting, want at most 3", len(c.queue))
		}
	}
	m := Compute(r, false)
	if m.Finished != 3 || r.Stop != 35 || m.Throughput != 3/35.0*3600 || m.Utilization != 1 {
		t.Fatalf("metrics = %+v, stop %g", m, r.Stop)
	}
}

// Moldable jobs run for Time(n) on the slowest of their hosts, and the
// policy's predictor says the same.
func TestSim_MoldableOnHeterogeneousHosts(t *testing.T) {
	m := Identical(2)
	m.Speed[1] = 0.5
	eq2 := func(n int) float64 { return 100/float64(n) + 10*float64(n) }
	jobs := []Job{{ID: "M", Min: 1, Max: 2, Time: eq2}}
	s, err := New(Config{Machine: m}, jobs)
	if err != nil {
		t.Fatal(err)
	}
	var predicted time.Duration
	p := policyFunc(func(ctx context.Context, snap policy.Snapshot) (policy.Plan, error) {
		d, err := s.Predictor().Predict(ctx, &snap.Queue[0], snap.Hosts)
		predicted = d
		return policy.Plan{StartNow: []policy.Placement{{Job: "M", Hosts: []string{"p0", "p1"}, Start: snap.Now}}}, err
	})
	r, err := s.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if want := (50 + 20) / 0.5; r.End[0] != want || predicted != time.Duration(want*1e9) {
		t.Fatalf("end %g, predicted %v; want %g s", r.End[0], predicted, want)
	}
}

type policyFunc func(context.Context, policy.Snapshot) (policy.Plan, error)

func (policyFunc) Name() string { return "func" }
func (policyFunc) Reads() int   { return 0 }
func (f policyFunc) Plan(ctx context.Context, s policy.Snapshot) (policy.Plan, error) {
	return f(ctx, s)
}
