package sim

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"msched/policy"
)

// Config is a simulation's setting.
type Config struct {
	Machine Machine
	// Backlog, when > 0, makes the workload a closed system: submit times
	// are ignored, and jobs are submitted (in order) whenever fewer than
	// Backlog wait, so that Backlog jobs are always waiting (the MS paper's
	// Table 1 setting). More, when set, supplies job i once the Jobs given
	// to New are used up.
	Backlog int
	More    func(i int) Job
	// Horizon, when > 0, stops the simulation at this time; jobs running
	// then are not finished.
	Horizon float64
	// Record keeps every job's hosts (for the Gantt chart).
	Record bool
	// CheckEvery is how many events pass between looks at the context and
	// calls of Progress; default 1024.
	CheckEvery int
	// Progress, when set, is called with the number of jobs finished and
	// the number of jobs (0 when unbounded).
	Progress func(done, total int)
	// Estimator, when set, gives each job (but those with Time) its Estimate at submission
	// and learns each job's run time at its end (see estimator.go).
	Estimator Estimator
}

// Status is what became of a job.
type Status uint8

// Job outcomes.
const (
	Pending  Status = iota // not submitted, waiting or running when the run stopped
	Done                   // ran to completion
	Rejected               // the policy rejected it (it can never run)
)

// Result is one policy's run over a workload.
type Result struct {
	Policy string
	Hosts  int
	Jobs   []Job
	// Per job, in the order of Jobs: outcome, start and end (seconds), host
	// count, and the hosts (indexes into the machine; with Config.Record).
	Status     []Status
	Start, End []float64
	NHosts     []int32
	HostsOf    [][]int32
	Reasons    map[string]string // rejected job ID → reason
	LastSubmit float64           // the last submission time
	Stop       float64           // simulated time when the run stopped
	Horizon    float64
	// Decisions is the number of Plan calls, DecisionTime the wall time
	// of the policy path around them (policy.Decider: the plan and its
	// check) in all; Generations the GA generations run (GA policies only).
	Decisions    int
	DecisionTime time.Duration
	Generations  int
	Wall         time.Duration
}

// Sim is one simulation; build it with New, build the policy with its
// Predictor, and Run it once.
type Sim struct {
	cfg  Config
	jobs []Job
	pol  policy.Policy
	path policy.Decider
	res  *Result
	used bool

	now     float64
	next    int     // next job to submit (index into jobs)
	order   []int32 // open system: job indexes in submission order
	hosts   []policy.Host
	speed   []float64
	index   map[string]int // host name → index
	free    int            // free hosts
	ids     map[string]int32
	queue   []policy.QueuedJob
	qjob    []int32 // queue position → job
	run     []policy.RunningJob
	rjob    []int32 // running position → job
	rpos    map[int32]int
	ends    endHeap // actual ends
	jhosts  [][]int32
	done    int
	scratch []int32
	started int64 // jobs started so far, the order of ends at one instant
}

// New prepares a simulation of jobs on cfg's machine.
func New(cfg Config, jobs []Job) (*Sim, error) {
	m := cfg.Machine
	if len(m.Hosts) == 0 {
		return nil, errors.New("sim: machine has no hosts")
	}
	if len(m.Speed) != len(m.Hosts) {
		return nil, fmt.Errorf("sim: %d speeds for %d hosts", len(m.Speed), len(m.Hosts))
	}
	if cfg.CheckEvery <= 0 {
		cfg.CheckEvery = 1024
	}
	jobs = slices.Clone(jobs) // submission rewrites submit times and duplicate IDs
	s := &Sim{cfg: cfg, jobs: jobs, index: make(map[string]int, len(m.Hosts)),
		ids: map[string]int32{}, rpos: map[int32]int{}}
	s.hosts = slices.Clone(m.Hosts)
	s.speed = m.Speed
	for i, h := range s.hosts {
		if _, dup := s.index[h.Name]; dup {
			return nil, fmt.Errorf("sim: host %q listed twice", h.Name)
		}
		if !(m.Speed[i] > 0) {
			return nil, fmt.Errorf("sim: host %q has speed %v", h.Name, m.Speed[i])
		}
		s.index[h.Name] = i
		s.hosts[i].FreeAt = time.Time{}
		s.hosts[i].Speed = m.Speed[i]
	}
	for i := range jobs {
		if err := checkJob(&jobs[i]); err != nil {
			return nil, err
		}
	}
	if cfg.Backlog <= 0 {
		s.order = make([]int32, len(jobs))
		for i := range s.order {
			s.order[i] = int32(i)
		}
		slices.SortStableFunc(s.order, func(a, b int32) int {
			if jobs[a].Submit < jobs[b].Submit {
				return -1
			}
			if jobs[a].Submit > jobs[b].Submit {
				return 1
			}
			return 0
		})
	}
	return s, nil
}

func checkJob(j *Job) error {
	if j.Min < 1 || j.Max < j.Min {
		return fmt.Errorf("sim: job %s: host range %d..%d", j.ID, j.Min, j.Max)
	}
	if j.Time == nil && (!(j.Run >= 0) || math.IsInf(j.Run, 0)) {
		return fmt.Errorf("sim: job %s: run time %v", j.ID, j.Run)
	}
	if !(j.Submit >= 0) || math.IsInf(j.Submit, 0) {
		return fmt.Errorf("sim: job %s: submit time %v", j.ID, j.Submit)
	}
	return nil
}

// Predictor answers the policy's run-time questions from the workload: the
// job's estimate on that many hosts (exact for jobs with Time, scaled by
// the model for moldable trace jobs), at the speed of the slowest of
// the hosts asked about. Give it to the policy in policy.Options.
func (s *Sim) Predictor() policy.Predictor { return policy.PredictorFunc(s.predict) }

func (s *Sim) predict(_ context.Context, q *policy.QueuedJob, hs []policy.Host) (time.Duration, error) {
	k, ok := s.ids[q.ID]
	if !ok {
		return 0, fmt.Errorf("sim: no queued job %q", q.ID)
	}
	j := &s.jobs[k]
	est := j.estimateOn(len(hs))
	if est <= 0 {
		return 0, nil // unknown: the policy falls back
	}
	slow := 1.0
	for i, h := range hs {
		if x, ok := s.index[h.Name]; ok && (i == 0 || s.speed[x] < slow) {
			slow = s.speed[x]
		}
	}
	return dur(est / slow), nil
}

// Run drives pol over the workload. It returns the result so far with the
// error when the run fails or ctx ends.
func (s *Sim) Run(ctx context.Context, pol policy.Policy) (*Result, error) {
	if s.used {
		return nil, errors.New("sim: a Sim runs once")
	}
	s.used = true
	s.pol = pol
	s.path = policy.Decider{Policy: pol}
	n := len(s.jobs)
	s.res = &Result{Policy: pol.Name(), Hosts: len(s.hosts), Reasons: map[string]string{}, Horizon: s.cfg.Horizon}
	s.grow(n)
	s.free = len(s.hosts)
	wall := time.Now()
	err := s.loop(ctx)
	s.res.Wall = time.Since(wall)
	s.res.Jobs = s.jobs
	s.res.Stop = s.now
	if s.cfg.Record {
		// Jobs still running keep their hosts for the Gantt chart.
		for len(s.res.HostsOf) < len(s.jobs) {
			s.res.HostsOf = append(s.res.HostsOf, nil)
		}
		for _, k := range s.rjob {
			s.res.HostsOf[k] = s.jhosts[k]
		}
	}
	if g, ok := pol.(interface{ Generations() int64 }); ok {
		s.res.Generations = int(g.Generations())
	}
	if s.cfg.Progress != nil {
		s.cfg.Progress(s.done, s.total())
	}
	return s.res, err
}

func (s *Sim) total() int {
	if s.cfg.Backlog > 0 && s.cfg.More != nil {
		return 0
	}
	return len(s.jobs)
}

// grow sizes the per-job arrays for n jobs.
func (s *Sim) grow(n int) {
	r := s.res
	for len(r.Status) < n {
		r.Status = append(r.Status, Pending)
		r.Start = append(r.Start, math.NaN())
		r.End = append(r.End, math.NaN())
		r.NHosts = append(r.NHosts, 0)
		s.jhosts = append(s.jhosts, nil)
	}
}

func (s *Sim) loop(ctx context.Context) error {
	events := 0
	tick := func() error {
		events++
		if events%s.cfg.CheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if s.cfg.Progress != nil {
				s.cfg.Progress(s.done, s.total())
			}
		}
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.cfg.Backlog > 0 {
		if err := s.topUp(ctx); err != nil {
			return err
		}
	}
	for {
		t, ok := s.nextTime()
		if !ok {
			break
		}
		if s.cfg.Horizon > 0 && t > s.cfg.Horizon {
			s.now = s.cfg.Horizon
			return nil
		}
		s.now = t
		// Submissions at t.
		for s.next < len(s.order) && s.jobs[s.order[s.next]].Submit <= t {
			k := s.order[s.next]
			s.next++
			s.submit(k)
			if err := s.decide(ctx); err != nil {
				return err
			}
			if err := tick(); err != nil {
				return err
			}
		}
		// Terminations at t (a job of run time 0 that starts now ends in
		// this same loop).
		for len(s.ends) > 0 && s.ends[0].t <= t {
			e := heap.Pop(&s.ends).(endEvent)
			s.finish(e.job)
			if err := s.decide(ctx); err != nil {
				return err
			}
			if s.cfg.Backlog > 0 {
				if err := s.topUp(ctx); err != nil {
					return err
				}
			}
			if err := tick(); err != nil {
				return err
			}
		}
	}
	if len(s.queue) > 0 {
		return fmt.Errorf("sim: %s left %d jobs waiting (first %s) on an idle machine", s.pol.Name(), len(s.queue), s.queue[0].ID)
	}
	return nil
}

// nextTime is the time of the next event.
func (s *Sim) nextTime() (float64, bool) {
	t, ok := math.Inf(1), false
	if s.next < len(s.order) {
		t, ok = s.jobs[s.order[s.next]].Submit, true
	}
	if len(s.ends) > 0 && s.ends[0].t < t {
		t, ok = s.ends[0].t, true
	}
	return t, ok
}

// topUp submits jobs, one decision each, until Backlog jobs wait.
func (s *Sim) topUp(ctx context.Context) error {
	for len(s.queue) < s.cfg.Backlog {
		k := len(s.jobs)
		if s.next < k {
			k = s.next
		} else if s.cfg.More != nil {
			j := s.cfg.More(k)
			if err := checkJob(&j); err != nil {
				return err
			}
			s.jobs = append(s.jobs, j)
			s.grow(len(s.jobs))
		} else {
			return nil
		}
		s.next++
		s.jobs[k].Submit = s.now
		s.submit(int32(k))
		if err := s.decide(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sim) submit(k int32) {
	j := &s.jobs[k]
	if _, dup := s.ids[j.ID]; dup || j.ID == "" {
		// IDs name jobs in plans; make a unique one.
		j.ID = fmt.Sprintf("%s#%d", j.ID, k)
	}
	s.ids[j.ID] = k
	s.res.LastSubmit = math.Max(s.res.LastSubmit, j.Submit)
	if s.cfg.Estimator != nil && j.Time == nil {
		j.Estimate = s.cfg.Estimator.Estimate(j)
	}
	s.queue = append(s.queue, policy.QueuedJob{
		ID: j.ID, Name: j.ID, Submit: At(j.Submit), Min: j.Min, Max: j.Max,
		Estimate: dur(j.estimateOn(j.Min)), Request: j.Request, Components: j.Components,
	})
	s.qjob = append(s.qjob, k)
}

// decide asks the policy for a plan and applies it, and asks again at the
// same instant while a plan starts or rejects a job: the live sched daemon
// plans again on the wake-up its own moves cause, and a policy that sees
// only a window of the queue (the GA's) sees new jobs in it then. A policy
// that plans over the whole queue starts nothing more the second time.
// Each repeat follows a plan that took a job off the queue, so the repeats
// end.
func (s *Sim) decide(ctx context.Context) error {
	for {
		changed, err := s.decideOnce(ctx)
		if err != nil || !changed {
			return err
		}
	}
}

// decideOnce asks the policy for one plan, through the policy path the
// sched daemon takes (policy.Decider), and applies it. A plan that Check
// faults fails the run: a simulated policy that makes a bad plan is a bug.
// It reports whether the plan started or rejected a job.
func (s *Sim) decideOnce(ctx context.Context) (bool, error) {
	if len(s.queue) == 0 || s.free == 0 {
		return false, nil
	}
	snap := policy.Snapshot{Now: At(s.now), Hosts: s.hosts, Running: s.run, Queue: s.queue}
	t0 := time.Now()
	d, err := s.path.Decide(ctx, snap)
	s.res.DecisionTime += time.Since(t0)
	s.res.Decisions++
	if err != nil {
		return false, fmt.Errorf("sim: %s at t=%g: %w", s.pol.Name(), s.now, err)
	}
	if len(d.Faults) > 0 {
		errs := make([]error, len(d.Faults))
		for i, f := range d.Faults {
			errs[i] = f
		}
		return false, fmt.Errorf("sim: %s at t=%g made a bad plan: %w", s.pol.Name(), s.now, errors.Join(errs...))
	}
	plan := d.Plan
	if len(plan.StartNow) == 0 && len(plan.Reject) == 0 {
		return false, nil
	}
	// Check saw to it that each job named here waits and is named once, on
	// hosts that exist, are free and are given once.
	for _, r := range plan.Reject {
		k := s.ids[r.Job]
		s.res.Status[k] = Rejected
		s.res.Reasons[r.Job] = r.Reason
		delete(s.ids, r.Job)
	}
	for _, p := range plan.StartNow {
		if err := s.start(s.ids[p.Job], p.Hosts); err != nil {
			return false, fmt.Errorf("sim: %s at t=%g: %w", s.pol.Name(), s.now, err)
		}
	}
	// Drop started and rejected jobs from the queue, keeping arrival order.
	w := 0
	for i, k := range s.qjob {
		if !s.waiting(k) {
			continue
		}
		s.queue[w], s.qjob[w] = s.queue[i], k
		w++
	}
	clear(s.queue[w:])
	s.queue, s.qjob = s.queue[:w], s.qjob[:w]
	return true, nil
}

// waiting reports whether job k is still in the queue: not rejected, not
// started.
func (s *Sim) waiting(k int32) bool {
	return s.res.Status[k] == Pending && math.IsNaN(s.res.Start[k])
}

// start runs job k now on the named hosts, which policy.Check found free.
func (s *Sim) start(k int32, names []string) error {
	j := &s.jobs[k]
	hs := s.scratch[:0]
	slow := math.Inf(1)
	for _, name := range names {
		i := s.index[name]
		hs = append(hs, int32(i))
		slow = math.Min(slow, s.speed[i])
	}
	s.scratch = hs
	s.free -= len(hs)
	n := len(hs)
	actual := j.runOn(n) / slow
	est := j.estimateOn(n) / slow
	if !(actual >= 0) || math.IsInf(actual, 0) {
		return fmt.Errorf("job %s: run time %v on %d hosts", j.ID, actual, n)
	}
	if !(est > 0) || math.IsInf(est, 0) {
		est = actual // no estimate: the policy planned with its fallback
	}
	r := s.res
	r.Start[k] = s.now
	r.NHosts[k] = int32(n)
	own := slices.Clone(hs)
	s.jhosts[k] = own
	estEnd := s.now + est
	endAt := At(estEnd)
	hostNames := make([]string, n)
	for x, i := range own {
		hostNames[x] = s.hosts[i].Name
		s.hosts[i].FreeAt = endAt
	}
	s.rpos[k] = len(s.run)
	s.run = append(s.run, policy.RunningJob{ID: j.ID, Name: j.ID, Hosts: hostNames, Start: At(s.now), End: endAt})
	s.rjob = append(s.rjob, k)
	s.started++
	heap.Push(&s.ends, endEvent{t: s.now + actual, seq: s.started, job: k})
	return nil
}

// finish ends job k now.
func (s *Sim) finish(k int32) {
	r := s.res
	r.Status[k] = Done
	r.End[k] = s.now
	s.done++
	if s.cfg.Estimator != nil {
		s.cfg.Estimator.Observe(&s.jobs[k], len(s.jhosts[k]), s.now-r.Start[k])
	}
	for _, i := range s.jhosts[k] {
		s.hosts[i].FreeAt = time.Time{}
	}
	s.free += len(s.jhosts[k])
	if s.cfg.Record {
		if len(r.HostsOf) < len(s.jobs) {
			r.HostsOf = append(r.HostsOf, make([][]int32, len(s.jobs)-len(r.HostsOf))...)
		}
		r.HostsOf[k] = s.jhosts[k]
	}
	s.jhosts[k] = nil
	p := s.rpos[k]
	last := len(s.run) - 1
	s.run[p], s.rjob[p] = s.run[last], s.rjob[last]
	s.rpos[s.rjob[p]] = p
	s.run[last] = policy.RunningJob{}
	s.run, s.rjob = s.run[:last], s.rjob[:last]
	delete(s.rpos, k)
	delete(s.ids, s.jobs[k].ID)
}

// endEvent is a job's end. Ends at one instant go in the order their jobs
// started (seq), as in pyss's event queue, where a job's termination event
// is made when the job starts and the older of two events at one time goes
// first: the policy decides after each end, so this order changes
// schedules. The job index breaks any other tie, so that a run is
// deterministic.
type endEvent struct {
	t   float64
	seq int64
	job int32
}

type endHeap []endEvent

func (h endHeap) Len() int { return len(h) }
func (h endHeap) Less(a, b int) bool {
	if h[a].t != h[b].t {
		return h[a].t < h[b].t
	}
	if h[a].seq != h[b].seq {
		return h[a].seq < h[b].seq
	}
	return h[a].job < h[b].job
}
func (h endHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *endHeap) Push(x any)   { *h = append(*h, x.(endEvent)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
