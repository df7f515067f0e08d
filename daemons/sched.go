package daemons

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"msched/atomicfile"
	"msched/hoststat"
	"msched/policy"
	"msched/profiler"
	"msched/spool"
	"msched/workload"
)

// Sched is the MS scheduler daemon. It owns queued/ and scheduling/. The
// policy reads the oldest waiting jobs, as many as it asks for
// (Policy.Reads: a GA's window, or the whole queue). A window waits in
// scheduling/ and the rest in queued/, in arrival order; a policy that
// reads the whole queue leaves every waiting job in queued/. Each cycle
// takes the one policy path the simulator takes (policy.Decider): the jobs
// the policy starts now move to runnable/ with their hosts and predicted
// run time; running and runnable jobs are the base of the next decision,
// and a job's hosts are free once it has left running/ (for finished/, the
// reaper's, which compares actual with predicted). After every decision
// the schedule (running and planned jobs with hosts and predicted start and
// end) is published atomically to db/schedule.json for the web page and
// `msched status`.
type Sched struct {
	Env
	Hosts      []hoststat.Host
	Policy     policy.Policy
	PolicyName string
	// StatsDir is the stats daemon's store (hoststat.ReadLatest); "" means
	// hosts are taken as unloaded.
	StatsDir string
	// Replan is how often the schedule is re-planned while jobs wait and
	// nothing happens, so the live GA keeps improving it; 0 means 1 s.
	Replan time.Duration
	// Speeds gives each host's architecture its speed relative to the
	// reference machine (the hardware database), shown to the policy as
	// policy.Host.Speed; nil, or an architecture it does not name: 0,
	// unknown.
	Speeds map[string]float64

	sp        *spool.Spool
	cache     *spool.Cache // parsed files of the jobs read and of runnable/ and running/
	log       *slog.Logger
	path      policy.Decider
	loads     map[string]float64
	loadsRead time.Time
	admitted  map[string]time.Time         // jobs the policy reads, since when (admitAfter)
	sources   *profiler.Sources            // where each job's latest prediction came from
	down      map[string]hoststat.DownInfo // hosts down at the last cycle (db/health/)
	holds     holds                        // dependencies and array limits (hold.go)
	held      []spool.PublishedHold        // what the last cycle held back, to publish
	clusters  int                          // clusters among Hosts
}

// admitAfter is how long a policy that reads a window reads a job before
// sched moves it from queued/ to scheduling/. Which jobs the policy reads is sched's
// memory (a restarted sched finds them in queued/ and scheduling/ alike,
// oldest first), so the directory only shows it; waiting this long before
// the move spares it for the jobs that are placed within a few cycles of
// being first read, most jobs of a burst.
const admitAfter = 250 * time.Millisecond

// statsRefresh is how often host loads are re-read from the stats store.
const statsRefresh = 10 * time.Second

// downHorizon is how far ahead a down host is shown to the policy as busy
// (Host.FreeAt). Busy, not left out: a policy places nothing on a host that
// is not free now, and still counts it among the hosts a job could ever
// have, so a job that needs it waits instead of being rejected; running
// jobs keep their hosts. Far beyond any plan, so that no policy plans work
// around a host that may never come back; short of the policies' int64
// nanosecond offsets' limit (146 years).
const downHorizon = 365 * 24 * time.Hour

// Run schedules until ctx is done.
func (d *Sched) Run(ctx context.Context) error {
	if d.Policy == nil {
		return fmt.Errorf("daemons: sched: no policy")
	}
	if len(d.Hosts) == 0 {
		return fmt.Errorf("daemons: sched: no hosts")
	}
	if d.PolicyName == "" {
		d.PolicyName = d.Policy.Name()
	}
	if d.Replan <= 0 {
		d.Replan = time.Second
	}
	release, err := d.Spool.LockDaemon("sched")
	if err != nil {
		return err
	}
	defer release()
	d.sp = d.Spool.As(spool.Sched)
	d.cache = d.sp.NewCache()
	d.log = d.logger("sched")
	d.path = policy.Decider{Policy: d.Policy}
	d.sources = &profiler.Sources{}
	log := d.log
	if err := d.recover(); err != nil {
		return err
	}
	clusters := map[string]bool{}
	for _, h := range d.Hosts {
		clusters[h.Cluster] = true
	}
	d.clusters = len(clusters)
	log.Info("started", "policy", d.PolicyName, "hosts", len(d.Hosts), "clusters", d.clusters, "reads", reads(d.Policy))
	wake := d.sp.Watch(ctx, []spool.State{spool.Queued, spool.Running}, d.rescan())
	replan := time.NewTicker(d.Replan)
	defer replan.Stop()
	// The watcher wakes once as soon as its watches are in place, and the
	// first cycle waits for that: no file slips between the watches and
	// the first reading, and a start is one cycle, not two (a cycle before
	// the wake-up and another at it published the schedule twice).
	waiting := false
	for d.await(ctx, wake, replan.C, waiting) {
		var err error
		d.Heart.Busy()
		waiting, err = d.cycle(ctx)
		d.Heart.Idle()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Error("scheduling cycle failed; retrying on the next wake-up", "err", err)
		}
	}
	return nil
}

// await blocks until the next cycle is due: a wake-up from the spool, or a
// replan tick while jobs wait (ticks with nothing waiting are passed over).
// It reports false when sched must stop.
func (d *Sched) await(ctx context.Context, wake <-chan struct{}, tick <-chan time.Time, waiting bool) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case _, ok := <-wake:
			return ok
		case <-tick:
			if waiting {
				return true
			}
		}
	}
}

// recover completes moves a crash interrupted in sched's directories, then
// returns every job in scheduling/ to queued/: the population that held
// them died with the old process, and queued/ is where waiting jobs live
// (as Postfix's queue manager moves active back to incoming at start). The
// next cycle reads them again, oldest first.
func (d *Sched) recover() error {
	for _, st := range []spool.State{spool.Queued, spool.Scheduling} {
		rs, err := d.sp.Recover(st)
		if err != nil {
			return fmt.Errorf("daemons: sched: recover %s: %w", st, err)
		}
		for _, r := range rs {
			d.log.Info("recovered", "state", st, "jid", r.JID, "action", r.Action, "detail", r.Detail)
		}
	}
	es, err := d.sp.List(spool.Scheduling)
	if err != nil {
		return err
	}
	for _, e := range es {
		j, err := d.sp.Read(spool.Scheduling, e.Name)
		if err != nil {
			d.unreadable(spool.Scheduling, e.Name, err)
			continue
		}
		if err := d.sp.Move(j, spool.Scheduling, spool.Queued, "sched restarted: back to the queue"); err != nil {
			return err
		}
	}
	return nil
}

// cycle is one decision. It reports whether jobs are still waiting.
func (d *Sched) cycle(ctx context.Context) (bool, error) {
	now := time.Now()
	var phases []any // debug log: how long each phase of the cycle took
	lap := func(name string) {
		t := time.Now()
		phases = append(phases, name, t.Sub(now).Round(time.Microsecond))
		now = t
	}
	start := now
	if err := d.cancels(); err != nil {
		return false, err
	}
	hold := d.holds.cycle(ctx, now, d.sp, d.arrayActive)
	read, evict, waiting, err := d.waiting(hold)
	if err == nil && hold.resolve() {
		// The accounting log said what became of the dependencies the
		// spool did not have: judge the jobs again with it.
		hold = hold.again()
		read, evict, waiting, err = d.waiting(hold)
	}
	if err != nil {
		return false, err
	}
	hold.finish()
	if hold.err != nil {
		d.log.Warn("cannot look up dependencies; their jobs wait", "err", hold.err)
	}
	d.held = hold.published()
	lap("read")
	snap, err := d.snapshot(now, read)
	if err != nil {
		return false, err
	}
	lap("snapshot")
	byID := make(map[string]*spool.Job, len(read)+len(evict))
	reading := make([]waitingJob, 0, len(read))
	for _, j := range read {
		byID[j.JID] = j
		reading = append(reading, waitingJob{JID: j.JID, State: j.State()})
	}
	evicting := make([]string, 0, len(evict))
	for _, j := range evict {
		byID[j.JID] = j
		evicting = append(evicting, j.JID)
	}
	dec, out, err := d.decide(ctx, now, snap, reading, evicting)
	if err != nil {
		return waiting > 0, err
	}
	for _, r := range hold.rejects { // dependencies that can never be met
		byID[r.j.JID] = r.j
		out.Moves = append(out.Moves, jobMove{JID: r.j.JID, From: r.j.State(), To: spool.Rejected,
			Note: "dependencies never met: " + r.reason, Reason: r.reason})
	}
	lap("plan")
	started := make([]policy.Placement, 0, len(dec.Plan.StartNow))
	defer func() {
		lap("moves+publish")
		d.log.Debug("cycle", append(phases, "total", time.Since(start).Round(time.Microsecond), "waiting", waiting, "started", len(started))...)
	}()
	var mu sync.Mutex
	batch := d.sp.Batch() // one fsync per directory for the cycle's moves
	err = each(out.Moves, func(m jobMove) error {
		j := byID[m.JID]
		switch m.To {
		case spool.Rejected:
			j.Reason = m.Reason
		case spool.Runnable:
			j.Schedule = m.Schedule
		}
		name := j.File()
		err := batch.Move(j, m.From, m.To, m.Note)
		d.forget(name, m.From, m.To)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		switch m.To {
		case spool.Runnable:
			started = append(started, m.Placement)
			waiting--
		case spool.Rejected:
			waiting--
		}
		return nil
	})
	if cerr := batch.Commit(); cerr != nil {
		return true, errors.Join(err, cerr)
	}
	if err != nil {
		return true, err
	}
	return waiting > 0, d.publish(now, dec.Snapshot, started, out.Later)
}

// decide is a cycle's decision once the spool is read, and before it is
// written: the one policy path (policy.Decider) on snap, the parts of the
// plan that Check refuses logged, and the moves that carry out the rest
// (planMoves). read are the jobs of snap's queue, and evict the jobs in
// scheduling/ the policy no longer reads.
func (d *Sched) decide(ctx context.Context, now time.Time, snap policy.Snapshot, read []waitingJob, evict []string) (policy.Decision, movesOut, error) {
	// The predictor records where each prediction came from in d.sources,
	// which the context carries through the policy (profiler.WithSources).
	dec, err := d.path.Decide(profiler.WithSources(ctx, d.sources), snap)
	if err != nil {
		return dec, movesOut{}, fmt.Errorf("daemons: sched: policy %s: %w", d.PolicyName, err)
	}
	// A policy must only start jobs on free hosts, in one cluster, and so
	// on; refuse rather than double-book, and say so.
	for _, f := range dec.Faults {
		if f.Part == "later" {
			d.log.Debug("policy planned a placement that cannot be; not published", "job", f.Job, "reason", f.Reason)
		} else {
			d.log.Error("policy's decision refused", "part", f.Part, "job", f.Job, "reason", f.Reason)
		}
	}
	out := planMoves(movesIn{Now: now, Policy: d.PolicyName, Read: read, Evict: evict,
		Plan: dec.Plan, Faults: dec.Faults, Admitted: d.admitted, Window: d.Policy.Reads() > 0,
		EstimateSource: d.estimateSource})
	d.admitted = out.Admitted
	return dec, out, nil
}

// estimateSource says where the prediction of job came from, for its
// schedule; "" when the predictor did not say (one that records no
// source, or a source forgotten).
func (d *Sched) estimateSource(job string) string {
	if s, ok := d.sources.Source(job); ok {
		return s.String()
	}
	return ""
}

// reads says how many waiting jobs p reads, for the log.
func reads(p policy.Policy) string {
	if n := p.Reads(); n > 0 {
		return fmt.Sprintf("the oldest %d", n)
	}
	return "all"
}

// cancels acts on cancel requests for jobs in queued/ or scheduling/: a job
// that never ran goes to rejected/ with reason "cancelled". A request from
// anyone but the job's owner or root is removed and logged instead.
// Requests for jobs elsewhere are left for their owners.
func (d *Sched) cancels() error {
	cs, err := readControls(d.sp, d.log)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if c.Kind != spool.Cancel {
			continue
		}
		for _, st := range []spool.State{spool.Queued, spool.Scheduling} {
			j, err := d.sp.Read(st, c.JID)
			if err != nil {
				continue
			}
			if err := c.Allowed(j); err != nil {
				refuseControl(d.sp, d.log, c, err)
				break
			}
			j.Reason = "cancelled"
			j.CancelRequested = true
			name := j.File()
			err = d.sp.Move(j, st, spool.Rejected, "cancelled before it ran")
			d.forget(name, st)
			if err != nil {
				return err
			}
			if err := d.sp.DoneControl(c); err != nil {
				return err
			}
			break
		}
	}
	return nil
}

// waiting returns the waiting jobs the policy reads, read, oldest first:
// the first Policy.Reads() of the jobs in queued/ and scheduling/ (a job
// re-queued by run keeps its old JID and so its place), or all of them,
// but for those hold holds back or rejects (hold.go: dependencies, array
// limits), which the policy does not read; the jobs in scheduling/ that
// are no longer among them, to be evicted to queued/; and the number of
// jobs waiting in all, held ones too. It moves nothing: the cycle moves
// each job once it knows where it goes.
func (d *Sched) waiting(hold *holdCycle) (read, evict []*spool.Job, waiting int, err error) {
	// Names, not List: queued/ may hold thousands of jobs. sched owns
	// queued/ and scheduling/: other daemons only add new names there, and
	// every move out is sched's own (forget), so a file cached there is
	// current and is not read again (Cache.ReadOwned): a policy that reads
	// the whole queue costs a directory listing per cycle, and a read and
	// a parse of each new file.
	qs, err := d.sp.Names(spool.Queued)
	if err != nil {
		return nil, nil, 0, err
	}
	ss, err := d.sp.Names(spool.Scheduling)
	if err != nil {
		return nil, nil, 0, err
	}
	n := d.Policy.Reads()
	if n <= 0 {
		n = len(qs) + len(ss)
	}
	d.cache.Keep(spool.Scheduling, ss)
	type entry struct {
		st   spool.State
		name string
	}
	all := make([]entry, 0, len(qs)+len(ss))
	for _, name := range qs {
		all = append(all, entry{spool.Queued, name})
	}
	for _, name := range ss {
		all = append(all, entry{spool.Scheduling, name})
	}
	sort.SliceStable(all, func(a, b int) bool { return spool.JIDLess(all[a].name, all[b].name) })
	waiting = len(all)
	taken := 0 // jobs the policy reads
	var kept []string
	defer func() { d.cache.Keep(spool.Queued, kept) }()
	for _, en := range all {
		if taken >= n && en.st == spool.Queued {
			continue
		}
		if en.st == spool.Queued {
			kept = append(kept, en.name)
		}
		j, err := d.cache.ReadOwned(en.st, en.name)
		if errors.Is(err, spool.ErrNotFound) {
			waiting-- // cancelled by the user, or moved on by a restarted sched
			continue
		} else if err != nil {
			d.unreadable(en.st, en.name, err)
			waiting--
			continue
		}
		if why, rejected := hold.judge(j); rejected {
			continue
		} else if why != "" {
			if en.st == spool.Scheduling {
				evict = append(evict, j)
			}
			continue
		}
		if taken >= n {
			evict = append(evict, j)
		} else {
			read = append(read, j)
			hold.admit(j)
			taken++
		}
	}
	return read, evict, waiting, nil
}

// forget drops a job file sched moved (or tried to move) from its cache's
// view of the states it passed through, so that a job that comes back under
// the same name (run re-queues it) is read again.
func (d *Sched) forget(name string, states ...spool.State) {
	if d.cache == nil {
		return // not running (a test calls a step alone)
	}
	for _, st := range states {
		d.cache.Forget(st, name)
	}
}

// unreadable reports a job file in sched's directories that does not parse.
// init validated it, so this is damage from outside msched: the file is
// left where it is, for an operator, and the other jobs go on.
func (d *Sched) unreadable(st spool.State, name string, perr error) {
	d.log.Error("unreadable job file; left for an operator", "state", st, "file", name, "err", perr)
}

// snapshot reads runnable/ and running/ and the hosts' state, and builds
// the policy's view of them and of the jobs read (view).
func (d *Sched) snapshot(now time.Time, read []*spool.Job) (policy.Snapshot, error) {
	loads := d.hostLoads(now)
	down := d.health()
	var active []*spool.Job
	for _, st := range []spool.State{spool.Runnable, spool.Running} {
		names, err := d.sp.Names(st)
		if err != nil {
			return policy.Snapshot{}, err
		}
		d.cache.Keep(st, names)
		for _, name := range names {
			j, err := d.cache.Read(st, name)
			if err != nil || j.Schedule == nil {
				continue // run owns these; it rejects what it cannot read
			}
			// A job's hosts are busy while it is in running/: run moves
			// it out only once its processes are gone (the shepherd's
			// result is written after its process group is, and a lost
			// job's orphans are killed before it is re-queued), and the
			// move wakes this daemon (Watch on running/).
			active = append(active, j)
		}
	}
	return d.view(now, loads, down, active, read), nil
}

// view is the snapshot sched hands the policy path, built from what it
// read, without the spool: the hosts with their loads and when their
// running work is predicted to end (a down host: busy for downHorizon), the
// active jobs (runnable and running: their hosts are busy) ending as
// predicted, and the jobs read (waiting, oldest first) less those only down
// hosts could run (holdBack). The path then shows a job past its predicted
// end as the simulator shows it (policy.ShowOverruns) and keeps each job
// inside one cluster.
func (d *Sched) view(now time.Time, loads map[string]float64, down map[string]hoststat.DownInfo, active, read []*spool.Job) policy.Snapshot {
	snap := policy.Snapshot{Now: now}
	freeAt := map[string]time.Time{}
	for _, j := range active {
		start := now
		if j.Run != nil && !j.Run.StartedAt.IsZero() {
			start = j.Run.StartedAt
		}
		end := start.Add(time.Duration(j.Schedule.PredictedSeconds * float64(time.Second)))
		snap.Running = append(snap.Running, policy.RunningJob{ID: j.JID, Name: j.Name, Hosts: j.Schedule.Hosts, Start: start, End: end})
		for _, h := range j.Schedule.Hosts {
			if end.After(freeAt[h]) {
				freeAt[h] = end
			}
		}
	}
	for _, h := range d.Hosts {
		free := freeAt[h.Name]
		if _, ok := down[h.Name]; ok {
			free = now.Add(downHorizon)
		}
		snap.Hosts = append(snap.Hosts, policy.Host{Name: h.Name, Arch: h.Arch, Cluster: h.Cluster, Via: h.Launcher(), Load: loads[h.Name],
			Speed: d.Speeds[h.Arch], FreeAt: free})
	}
	for _, j := range read {
		snap.Queue = append(snap.Queue, QueuedJob(j, len(d.Hosts)))
	}
	if len(down) > 0 {
		snap.Queue = d.holdBack(snap, down)
	}
	return snap
}

// health re-reads which hosts are down (hoststat.Down: one ReadDir of
// db/health/, and a read per down host) and logs the hosts of Hosts that
// went down or came back since the last cycle. On a read error the last
// known set stands.
func (d *Sched) health() map[string]hoststat.DownInfo {
	down, err := hoststat.Down(d.sp.Path(spool.DirDB))
	if err != nil {
		d.log.Warn("cannot read which hosts are down; keeping the last known", "err", err)
		return d.down
	}
	for _, h := range d.Hosts {
		info, now := down[h.Name]
		_, before := d.down[h.Name]
		switch {
		case now && !before:
			d.log.Warn("host down: nothing is placed on it until it answers", "host", h.Name,
				"since", info.Since.Local().Format(time.DateTime), "reason", info.Reason)
		case before && !now:
			d.log.Info("host back up", "host", h.Name)
		}
	}
	d.down = down
	return down
}

// holdBack returns s's queue without the jobs that only down hosts could
// run: in no cluster do enough up hosts meet their constraints, though in
// some cluster enough hosts do (a job runs inside one cluster; a
// co-allocated one needs its clusters, policy.CanHold). They wait,
// unseen by the policy, for the hosts to come back. Seen, they would be
// planned a year ahead (downHorizon), and a policy that bounds how often a
// job is overtaken (fpfs, the GA) would in time hold every job behind them
// for as long as the hosts are down.
func (d *Sched) holdBack(s policy.Snapshot, down map[string]hoststat.DownInfo) []policy.QueuedJob {
	q := s.Queue[:0:0]
	var upHosts []policy.Host // for co-allocated jobs
	for _, j := range s.Queue {
		if j.Request != 0 {
			if upHosts == nil {
				for _, h := range s.Hosts {
					if _, ok := down[h.Name]; !ok {
						upHosts = append(upHosts, h)
					}
				}
			}
			if policy.CanHold(&j, s.Hosts) == nil && policy.CanHold(&j, upHosts) != nil {
				d.log.Debug("job waits for down hosts", "job", j.ID, "components", j.Components)
				continue
			}
			q = append(q, j)
			continue
		}
		need := max(j.Min, 1)
		all, up := map[string]int{}, map[string]int{} // by cluster
		for _, h := range s.Hosts {
			if (j.Arch == "" || j.Arch == h.Arch) && (j.Cluster == "" || j.Cluster == h.Cluster) {
				all[h.Cluster]++
				if _, ok := down[h.Name]; !ok {
					up[h.Cluster]++
				}
			}
		}
		fits, fitsUp := false, false
		for c, n := range all {
			fits = fits || n >= need
			fitsUp = fitsUp || up[c] >= need
		}
		if fits && !fitsUp {
			d.log.Debug("job waits for down hosts", "job", j.ID, "needs", need)
			continue
		}
		q = append(q, j)
	}
	return q
}

// QueuedJob is the policy's view of a waiting job j on a system of
// hosts hosts (the sched daemon's, and msched submit's check).
func QueuedJob(j *spool.Job, hosts int) policy.QueuedJob {
	min, max := j.HostRange()
	if max == 0 {
		max = hosts
	}
	q := policy.QueuedJob{ID: j.JID, Name: j.Name, Submit: j.SubmittedAt, Min: min, Max: max,
		Estimate: time.Duration(j.Walltime), User: j.User}
	// The profiler's category (argv[0], and what a shell or an interpreter
	// runs), as its feed takes it from the accounting log, so that history
	// and queries meet.
	q.Executable = profiler.Category(j.Command)
	if j.Hosts != nil {
		q.Arch, q.Cluster = j.Hosts.Arch, j.Hosts.Cluster
	}
	if j.Model != nil {
		q.Model, q.Params = j.Model.Name, j.Model.Params
	}
	if len(j.Components) > 0 {
		// Validated at submission: a known request type.
		q.Request, _ = workload.ParseRequestType(j.RequestType())
		q.Components = j.Components
	}
	return q
}

// LoadMaxAge bounds the age of the load sample a host's predictions are
// multiplied by (a model's 1 + load): the one-minute load average of a
// sample older than this says little of the host now (the stats daemon
// samples every stats.interval, 5 min by default), and a host without a
// sample that recent is taken as unloaded. This machine's own hosts are
// sampled by sched itself, every statsRefresh.
const LoadMaxAge = time.Minute

// hostLoads returns each host's load, re-read every statsRefresh: this
// machine's hosts from /proc (hoststat.Local), the others from the stats
// store's latest sample when it is at most LoadMaxAge old.
func (d *Sched) hostLoads(now time.Time) map[string]float64 {
	if d.StatsDir == "" {
		return nil
	}
	if d.loads != nil && now.Sub(d.loadsRead) < statsRefresh {
		return d.loads
	}
	d.loadsRead = now
	latest, err := hoststat.ReadLatest(d.StatsDir)
	if err != nil {
		d.log.Warn("cannot read host stats; taking remote hosts as unloaded", "err", err)
	}
	var local *hoststat.Stats
	if slices.ContainsFunc(d.Hosts, hoststat.Host.IsLocal) {
		if s, err := hoststat.Local(); err == nil {
			local = &s
		}
	}
	d.loads = make(map[string]float64, len(d.Hosts))
	for _, h := range d.Hosts {
		s, ok := latest[h.Name]
		if h.IsLocal() && local != nil {
			s, ok = *local, true
		}
		if !ok || now.Sub(s.Time) > LoadMaxAge {
			continue
		}
		// Load average counts every runnable process, ours included; a
		// host's share is its load spread over its CPUs.
		l := s.Load1
		if s.NCPU > 0 {
			l /= float64(s.NCPU)
		}
		d.loads[h.Name] = l
	}
	return d.loads
}

func roundDur(d time.Duration) time.Duration {
	if d >= time.Hour*24*365 {
		return d.Truncate(time.Hour)
	}
	return d.Round(time.Millisecond)
}

func (d *Sched) publish(now time.Time, snap policy.Snapshot, started, later []policy.Placement) error {
	// Times in UTC, as everything msched shows (the API's promise).
	p := spool.PublishedSchedule{GeneratedAt: now.UTC(), Policy: d.PolicyName}
	for _, h := range snap.Hosts {
		p.Hosts = append(p.Hosts, spool.PublishedHost{Name: h.Name, Arch: h.Arch, Cluster: h.Cluster, Load: h.Load})
	}
	names := map[string]string{}
	for _, q := range snap.Queue {
		names[q.ID] = q.Name
	}
	for _, r := range snap.Running {
		p.Jobs = append(p.Jobs, spool.PublishedJob{JID: r.ID, Name: r.Name, State: "running", Hosts: r.Hosts,
			Start: r.Start.UTC(), End: r.End.UTC(), PredictedSeconds: r.End.Sub(r.Start).Seconds()})
	}
	add := func(state string, pls []policy.Placement) {
		for _, pl := range pls {
			secs := pl.Predicted.Seconds()
			if math.IsInf(secs, 0) || secs > 1e9 {
				continue
			}
			if state == "planned" && slices.ContainsFunc(pl.Hosts, func(h string) bool { _, down := d.down[h]; return down }) {
				continue // when a down host comes back is not known, nor this start
			}
			p.Jobs = append(p.Jobs, spool.PublishedJob{JID: pl.Job, Name: names[pl.Job], State: state, Hosts: pl.Hosts,
				Start: pl.Start.UTC(), End: pl.Start.Add(pl.Predicted).UTC(), PredictedSeconds: secs})
		}
	}
	add("running", started)
	add("planned", later)
	p.Held = d.held
	// Compact: with a policy that plans the whole queue it lists every
	// waiting job, and it is rewritten on every decision (indenting 2,000
	// placements cost ga-plan's burst 3 % of its CPU); readers parse it.
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	// Not fsynced: it is derived from the spool and rewritten on every
	// decision, so a crash that loses or damages the latest copy loses
	// nothing that the restarted sched's first decision does not write
	// again; the fsyncs would only add latency to every decision.
	if err := atomicfile.WriteNoSync("", d.sp.Path(spool.DirDB), spool.ScheduleFile, append(b, '\n')); err != nil {
		return fmt.Errorf("daemons: sched: %w", err)
	}
	return nil
}
