package daemons

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"msched/atomicfile"
	"msched/hoststat"
	"msched/launch"
	"msched/spool"
)

// DefaultMaxAttempts is how many times the run daemon tries to start a job
// (or loses it in flight) before it gives up: a missing working directory
// or an unreachable host may come back once or twice. A start that no
// attempt could make (no such program, argv too long: launch's
// Result.Permanent) is not tried again at all, and a full disk costs no
// attempt (the writes wait for space).
const DefaultMaxAttempts = 3

// RunDir is the directory under spool/db where the run daemon keeps each
// launch's pid, result and host files (<JID>.pid, <JID>.result, …).
const RunDir = "run"

// resultPath is where the shepherd of job jid writes its launch.Result.
func resultPath(sp *spool.Spool, jid string) string {
	return filepath.Join(sp.Path(spool.DirDB), RunDir, jid+".result")
}

// Run is the run daemon: runnable → running → finished. It starts each job
// through its Launcher on the hosts the scheduler chose, follows it to the
// end, and records how it ended. It honours cancel requests for jobs in its
// directories.
//
// # What happens to a job when run dies
//
// A job running when `run` died keeps running under its shepherd; the
// restarted run daemon adopts it and records its result once; only if the
// shepherd itself died is the job re-queued (counted as an attempt).
//
// That rests on three things: a job is moved to running/ before it is
// started (so a crash never leaves a started job in runnable/, to be started
// again); a job is never the daemon's child but its shepherd's (package
// launch), which survives the daemon and writes the result to a file; and a
// job leaves running/ by exactly one Move, made by the one goroutine that
// follows it. Before a re-queue, launch.Adopt has killed whatever was left
// of a lost job's process group, so no two copies of a job ever run. A job
// the daemon moved to running/ but had not yet handed to a shepherd when it
// died (no pid file) never ran: it is re-queued without counting an attempt.
//
// # A full disk
//
// Nothing is given up for want of space: the shepherd waits for space to
// write the job's result (package launch), and the run daemon for space to
// move the job (moveOut; a start that cannot move the job to running/ is
// tried again on a timer of its own). Each tries again at most a second
// apart, so work resumes within about a second of space coming back,
// without a restart and without waiting for the periodic rescan.
type Run struct {
	Env
	Launcher    launch.Launcher
	MaxAttempts int           // 0: DefaultMaxAttempts
	KillGrace   time.Duration // 0: launch.DefaultKillGrace
	// Hosts says how each host is reached (its address). Without Hosts
	// every host is this machine; with them, a job placed on a host not
	// listed (the hosts file changed since it was scheduled) does not
	// start: it is re-queued, to be placed anew.
	Hosts []hoststat.Host
	// SSH is how ssh hosts are reached; MPI the mpirun and its remote shell
	// for launch: mpi; SlurmBin where Slurm's commands are ("": PATH).
	SSH      launch.SSHConfig
	MPI      launch.MPI
	SlurmBin string
	// Path is the PATH of a job's environment; "": launch.DefaultPath.
	Path string
	// MarkDown records that a host could not be reached, so that the
	// scheduler places nothing more on it until it answers again; nil:
	// only logged.
	MarkDown func(host, reason string)
}

// runner is the state of one Run call.
type runner struct {
	d       *Run
	sp      *spool.Spool
	log     *slog.Logger
	ctx     context.Context
	max     int
	runDir  string
	mu      sync.Mutex
	tracked map[string]*runJob // jobs this daemon is starting or following
	wg      sync.WaitGroup
	hosts   map[string]hoststat.Host // Run.Hosts by name
	// wake asks for a scan besides the spool's watcher (buffer 1: wake-ups
	// coalesce): a job let go after a scan passed it over, a start to try
	// again once there may be space.
	wake       chan struct{}
	fullStarts int // starts in a row that found no space (r.mu)
}

// runJob is one job being started or followed. Its goroutine is the only
// writer of its job file, except that the scan loop records a cancel
// request; mu serialises the two.
type runJob struct {
	mu         sync.Mutex
	j          *spool.Job
	spec       launch.Spec
	h          launch.Handle  // nil until the shepherd runs
	cancel     *spool.Control // a cancel request not yet acted on
	cancelled  bool           // the request was acted on
	pidPending bool           // pid and pgid set but not yet written (pidGrace)
	done       bool           // the job has left runnable/running
	// leaving: the job's outcome is known and its move out of running/
	// waits for space; a cancel request or the pid's record must not
	// rewrite it meanwhile.
	leaving bool
	// passedOver: a scan found the job's name in runnable/ while this
	// attempt still held it (r.mu guards it). The name may be the job's
	// next attempt, placed by the scheduler since this one re-queued it,
	// so letting go of it asks for a scan (untrack).
	passedOver bool
}

// Run serves runnable/ and running/ until ctx is done; jobs it started keep
// running under their shepherds, to be adopted by the next run daemon.
//
// Recovery at start, in this order and before any new job is started:
//
//  1. spool.Recover(runnable) and Recover(running) complete moves that a
//     crash cut in half, so every job is in the one state its file names.
//  2. Every job in running/ was started, or was about to be, by an earlier
//     run daemon. launch.Adopt says which: its result is on disk (record it
//     now, once), its shepherd is alive (follow it as if we had started it),
//     or neither (the job was lost in flight: re-queue it or, if its attempts
//     are spent, finish it with the reason). Nothing in running/ is started
//     again blindly: that would run a job twice.
//  3. Launch files in db/run/ of jobs no longer in running/ are removed: a
//     crash after a job's result was recorded and before its files were.
func (d *Run) Run(ctx context.Context) error {
	if d.Launcher == nil {
		return errors.New("daemons: run: no launcher")
	}
	release, err := d.Spool.LockDaemon("run")
	if err != nil {
		return err
	}
	defer release()
	r := &runner{d: d, sp: d.Spool.As(spool.Run), log: d.logger("run"),
		max: d.MaxAttempts, tracked: map[string]*runJob{}, hosts: map[string]hoststat.Host{},
		wake: make(chan struct{}, 1)}
	for _, h := range d.Hosts {
		r.hosts[h.Name] = h
	}
	if r.max <= 0 {
		r.max = DefaultMaxAttempts
	}
	r.runDir = filepath.Join(r.sp.Path(spool.DirDB), RunDir)
	if err := os.MkdirAll(r.runDir, spool.DirPerm); err != nil {
		return fmt.Errorf("daemons: run: %w", err)
	}
	// The goroutines following jobs stop with ctx; cancel (deferred after
	// wg.Wait, so it runs first) also stops them when recovery fails.
	ctx, cancel := context.WithCancel(ctx)
	r.ctx = ctx
	defer r.wg.Wait()
	defer cancel()
	if err := r.recover(); err != nil {
		return err
	}
	// The runner's own wake-ups (r.wake) come besides the watcher's: the
	// fsnotify events that would start a job again may all have come while
	// the job was still held (see untrack), and the periodic rescan is too
	// late for it.
	r.d.serve(ctx, r.log, []spool.State{spool.Runnable, spool.Running}, r.wake, noNext(r.scan))
	return nil
}

// wakeUp asks for a scan now, or after a delay (a timer of its own).
func (r *runner) wakeUp(after time.Duration) {
	kick := func() {
		select {
		case r.wake <- struct{}{}:
		default: // a scan is due already
		}
	}
	if after <= 0 {
		kick()
	} else {
		time.AfterFunc(after, kick)
	}
}

func (r *runner) recover() error {
	for _, st := range []spool.State{spool.Runnable, spool.Running} {
		rs, err := r.sp.Recover(st)
		if err != nil {
			return fmt.Errorf("daemons: run: recovery: %w", err)
		}
		for _, x := range rs {
			r.log.Warn("recovered", "state", st, "jid", x.JID, "action", x.Action, "detail", x.Detail)
		}
	}
	es, err := r.sp.List(spool.Running)
	if err != nil {
		return fmt.Errorf("daemons: run: recovery: %w", err)
	}
	keep := map[string]bool{}
	for _, e := range es {
		keep[e.Name] = true
		j, err := r.sp.Read(spool.Running, e.Name)
		if err != nil {
			r.log.Error("cannot read running job; left alone", "file", e.Name, "err", err)
			continue
		}
		rj := &runJob{j: j, spec: r.spec(j)}
		a, err := launch.Adopt(rj.spec.PidPath, rj.spec.ResultPath)
		if err != nil {
			r.log.Error("cannot adopt job; left alone", "jid", j.JID, "err", err)
			continue
		}
		r.log.Info("adopting", "jid", j.JID, "found", a.State)
		r.track(rj)
		switch a.State {
		case launch.Finished:
			r.record(rj, a.Result)
			r.untrack(rj)
		case launch.Running:
			rj.h = a.Handle
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				defer r.untrack(rj)
				r.follow(rj)
			}()
		case launch.Gone:
			rj.mu.Lock()
			if _, err := os.Lstat(rj.spec.PidPath); errors.Is(err, os.ErrNotExist) {
				// Start creates the pid file before it forks: without one
				// the job was never handed to a shepherd and never ran.
				if rj.j.Run != nil && rj.j.Run.Attempts > 0 {
					rj.j.Run.Attempts--
				}
				r.retry(rj, "not started: the run daemon stopped before starting it")
			} else {
				r.retry(rj, "lost: run daemon restarted and the job's shepherd was gone")
			}
			rj.mu.Unlock()
			r.untrack(rj)
		}
	}
	// Step 3: files of jobs that have left running/.
	des, err := os.ReadDir(r.runDir)
	if err != nil {
		return fmt.Errorf("daemons: run: recovery: %w", err)
	}
	for _, de := range des {
		// A shepherd's staging file (".J000001.result.tmp…") belongs to its
		// job like the others: removing it under a live shepherd would
		// fail its result's rename and lose the job.
		jid, _, _ := strings.Cut(strings.TrimPrefix(de.Name(), "."), ".")
		if !keep[jid] {
			os.Remove(filepath.Join(r.runDir, de.Name()))
		}
	}
	return nil
}

// scan starts the jobs in runnable/ that are not started yet and passes
// cancel requests to the jobs they name; a request from anyone but the
// job's owner or root is removed and logged instead. It never waits for a
// job.
func (r *runner) scan(ctx context.Context) error {
	cs, err := readControls(r.sp, r.log)
	if err != nil {
		return err
	}
	es, err := r.sp.List(spool.Runnable)
	if err != nil {
		return err
	}
	// A job may have several requests (one per user who asked).
	pending := make(map[string][]spool.Control, len(cs))
	for _, c := range cs {
		pending[c.JID] = append(pending[c.JID], c)
	}
	refused := map[string]bool{} // request files refused below
	for _, e := range es {
		if ctx.Err() != nil {
			return nil
		}
		if r.passOver(e.Name) {
			r.log.Debug(msgHeld, "jid", e.Name)
			continue
		}
		j, err := r.sp.Read(spool.Runnable, e.Name)
		if errors.Is(err, spool.ErrNotFound) {
			continue
		} else if err != nil {
			r.log.Error("cannot read runnable job", "file", e.Name, "err", err)
			continue
		}
		rj := &runJob{j: j}
		for _, c := range pending[j.JID] {
			if err := c.Allowed(j); err != nil {
				refuseControl(r.sp, r.log, c, err)
				refused[c.File()] = true
			} else if rj.cancel == nil {
				// Cancelled before it started: known before the start
				// goroutine exists, so the job is never started (start
				// rejects it).
				rj.cancel = &c
			}
		}
		r.track(rj)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.untrack(rj)
			if r.start(rj) {
				r.follow(rj)
			}
		}()
	}
	for _, c := range cs {
		if refused[c.File()] {
			continue
		}
		r.mu.Lock()
		rj := r.tracked[c.JID]
		r.mu.Unlock()
		if rj != nil {
			r.requestCancel(rj, c)
		}
	}
	return nil
}

func (r *runner) track(rj *runJob) {
	r.mu.Lock()
	r.tracked[rj.j.JID] = rj
	r.mu.Unlock()
}

// untrack lets go of rj. If a scan passed its name over meanwhile, the job
// may be in runnable/ again (re-queued and placed at once, faster than this
// goroutine got here), and the events that said so are spent: scan again
// now rather than leave it to the periodic rescan.
func (r *runner) untrack(rj *runJob) {
	r.mu.Lock()
	again := false
	if r.tracked[rj.j.JID] == rj {
		delete(r.tracked, rj.j.JID)
		again = rj.passedOver
	}
	r.mu.Unlock()
	if again {
		r.wakeUp(0)
	}
}

// msgHeld is what a scan logs (at debug level) of a runnable job it passes
// over because an earlier attempt still holds it.
const msgHeld = "held by its last attempt; scanned again when let go"

// passOver reports whether jid is held by a job this daemon is starting or
// following, and if so marks it passed over (see untrack).
func (r *runner) passOver(jid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	rj := r.tracked[jid]
	if rj != nil {
		rj.passedOver = true
	}
	return rj != nil
}

// requestCancel records a cancel request for rj and acts on it if the job
// is running; a job still being started acts on it itself. A request its
// sender may not make (spool.Control.Allowed) is removed and logged.
func (r *runner) requestCancel(rj *runJob, c spool.Control) {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	if rj.done || rj.cancelled || rj.leaving {
		return // acted on, or the job has moved on: the request is not ours
	}
	if err := c.Allowed(rj.j); err != nil {
		refuseControl(r.sp, r.log, c, err)
		return
	}
	rj.cancel = &c
	if rj.h != nil {
		r.cancelRunning(rj)
	}
}

// cancelRunning signals a running job and records cancel_requested; the
// job ends in finished/ like any killed job. Called with rj.mu held.
func (r *runner) cancelRunning(rj *runJob) {
	if err := rj.h.Cancel(); err != nil {
		r.log.Error("cancel failed; will retry on the next scan", "jid", rj.j.JID, "err", err)
		rj.cancel = nil
		return
	}
	rj.cancelled = true
	rj.j.CancelRequested = true
	if err := r.sp.Update(rj.j); err != nil {
		r.log.Error("cannot record cancel_requested", "jid", rj.j.JID, "err", err)
	} else {
		rj.pidPending = false // written with it
	}
	r.doneControl(*rj.cancel)
	r.log.Info("cancelled", "jid", rj.j.JID)
}

func (r *runner) doneControl(c spool.Control) {
	if err := r.sp.DoneControl(c); err != nil {
		r.log.Error("cannot remove control request", "jid", c.JID, "err", err)
	}
}

// spec is the launch of j as far as its files go: their paths depend only
// on the JID, so a restarted daemon finds them again (recovery needs no
// more than that).
func (r *runner) spec(j *spool.Job) launch.Spec {
	out, errp := spool.CapturedPaths(r.sp.Path(spool.DirOutput), j.JID)
	s := launch.Spec{
		JID: j.JID, Argv: j.Command, Dir: j.Workdir,
		Stdout: j.Stdout, Stderr: j.Stderr,
		Walltime: time.Duration(j.Walltime), KillGrace: r.d.KillGrace,
		ResultPath: resultPath(r.sp, j.JID),
		PidPath:    filepath.Join(r.runDir, j.JID+".pid"),
		// Placed by start from the daemon's recycled files (Provide).
		HostfilePath:  filepath.Join(r.runDir, j.JID+".hosts"),
		ResultStaging: filepath.Join(r.runDir, "."+j.JID+".result.staging"),
	}
	if j.Schedule != nil {
		s.Hosts = j.Schedule.Hosts
	}
	if j.ArrayJob != "" && j.ArrayIndex != nil {
		s.ArrayJob, s.ArrayIndex = j.ArrayJob, *j.ArrayIndex
	}
	if s.Stdout == "" {
		s.Stdout = out
	}
	if s.Stderr == "" {
		s.Stderr = errp
	}
	return s
}

// launchSpec completes spec(j) with what a start needs: the user the job
// runs as, its environment, its paths resolved, and how its hosts are
// reached. An error means the job cannot start as it is.
func (r *runner) launchSpec(j *spool.Job) (launch.Spec, error) {
	s := r.spec(j)
	uid, err := jobUID(j)
	if err != nil {
		return s, err
	}
	id, err := launch.LookupIdentity(uid)
	if err != nil {
		return s, err
	}
	s.Identity, s.Path = id, r.d.Path
	for _, k := range slices.Sorted(maps.Keys(j.Env)) {
		s.Env = append(s.Env, k+"="+j.Env[k])
	}
	// Relative paths are the submitter's: they resolve against the
	// directory msched submit ran in, else the user's home, never against
	// the daemon's own directory.
	base := j.SubmitDir
	if base == "" {
		base = id.Home
	}
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	s.Dir = abs(s.Dir)
	if s.Dir == "" {
		s.Dir = base
	}
	s.Stdout, s.Stderr = abs(s.Stdout), abs(s.Stderr)
	if len(s.Argv) > 0 && strings.Contains(s.Argv[0], "/") {
		s.Argv = append([]string{abs(s.Argv[0])}, s.Argv[1:]...)
	}
	return s, r.target(&s, j)
}

// jobUID is the user j runs as: its uid, or, in a job file written before
// msched recorded the uid, the uid of its user's name (as spool's
// Control.Allowed and the reaper take such a file). With neither, daemons
// that are not root run it as their own user, the only one they serve;
// root does not run it at all (it would run as root).
func jobUID(j *spool.Job) (int, error) {
	if j.UID != nil {
		return *j.UID, nil
	}
	if uid, ok := spool.UserID(j.User); ok {
		return uid, nil
	}
	if euid := os.Geteuid(); euid != 0 {
		return euid, nil
	}
	return 0, fmt.Errorf("the job file records no uid and its user %q is not in the password database; resubmit it", j.User)
}

// target sets how s reaches its hosts, from their addresses: a job runs
// through one launcher, so its hosts must all be reached the same way (the
// scheduler keeps a job inside one cluster).
func (r *runner) target(s *launch.Spec, j *spool.Job) error {
	var addrs []hoststat.Address
	for _, name := range s.Hosts {
		a := hoststat.Address{Kind: hoststat.KindLocal}
		if h, ok := r.hosts[name]; ok {
			var err error
			if a, err = h.Addr(); err != nil {
				return err
			}
		} else if len(r.hosts) > 0 {
			return fmt.Errorf("host %s is not in the hosts file (any more)", name)
		}
		if len(addrs) > 0 && a.Launcher() != addrs[0].Launcher() {
			return fmt.Errorf("hosts %s and %s are reached differently (%s, %s); a job runs through one launcher", s.Hosts[0], name, addrs[0], a)
		}
		addrs = append(addrs, a)
	}
	if len(addrs) == 0 {
		return nil
	}
	if err := r.components(s, j); err != nil {
		return err
	}
	switch addrs[0].Kind {
	case hoststat.KindSSH:
		dests := make([]launch.SSHDest, len(addrs))
		for i, a := range addrs {
			dests[i] = launch.SSHDest{Host: a.Host, Port: a.Port, User: a.User}
		}
		s.SSH = r.d.SSH.Spec(dests)
	case hoststat.KindSlurm:
		if j.Launch == spool.LaunchMPI {
			return errors.New("launch: mpi is not offered on Slurm clusters yet: run mpirun (or srun) from the job itself")
		}
		s.Slurm = &launch.Slurm{Conf: addrs[0].SlurmConf, Partition: addrs[0].Partition,
			Nodes: len(addrs), JobName: j.Name, BinDir: r.d.SlurmBin}
	}
	if j.Launch == spool.LaunchMPI {
		m := r.d.MPI
		m.RanksPerHost = j.RanksPerHost
		s.MPI = &m
	}
	return nil
}

// components splits a co-allocated job's hosts into its components, in
// order, each with its cluster (from the hosts file), for the job's
// environment and host file. The scheduler's plan checker placed each
// component inside one cluster; a schedule that does not split so (a job
// file edited since) cannot start.
func (r *runner) components(s *launch.Spec, j *spool.Job) error {
	if len(j.Components) == 0 || j.RequestType() == spool.RequestTotal {
		return nil // a total request is its sum, anywhere
	}
	if lo, _ := j.HostRange(); len(s.Hosts) != lo {
		return fmt.Errorf("scheduled on %d hosts, but its components %s need %d", len(s.Hosts), spool.ComponentsText(j.Components), lo)
	}
	s.Components = s.Components[:0]
	i := 0
	for k, n := range j.Components {
		cluster := r.hosts[s.Hosts[i]].Cluster
		for _, h := range s.Hosts[i : i+n] {
			if c := r.hosts[h].Cluster; c != cluster {
				return fmt.Errorf("component %d is scheduled across clusters %s and %s", k+1, cluster, c)
			}
		}
		s.Components = append(s.Components, launch.Component{Cluster: cluster, Hosts: n})
		i += n
	}
	return nil
}

// outputDir makes output/<JID>/ and in it the files of the streams the job
// names no destination for (captured); only the job's user and root may
// read them. For the daemon's own user the directory is that user's, mode
// 0700 (its files come from the recycled ones). For another user it is
// root's, mode 0710 with the user's group, and the files are the user's,
// mode 0600, made here: the shepherd (or slurmstepd) opens them as the
// user, who cannot remove or replace them: a symbolic link or a FIFO put
// there would be followed by the root daemons that read them (the report,
// the status page).
func (r *runner) outputDir(s launch.Spec, captured []string) error {
	dir := filepath.Join(r.sp.Path(spool.DirOutput), s.JID)
	id := s.Identity
	if id == nil || id.UID == os.Geteuid() {
		return os.MkdirAll(dir, 0o700)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("output directory %s: not a directory (%v)", dir, err)
	}
	// Root's first (an earlier msched gave it to the user): from then on
	// nothing in it changes but by this daemon.
	if err := os.Lchown(dir, os.Geteuid(), id.GID); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o710); err != nil {
		return err
	}
	for _, p := range captured {
		if fi, err := os.Lstat(p); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode().IsRegular() && int(st.Uid) == id.UID && st.Nlink == 1 {
				continue // an earlier attempt's, appended to
			}
			// Anything else (a link, a FIFO, another's file) was put there
			// while the directory was the user's: never chown it.
			if err := os.Remove(p); err != nil {
				return err
			}
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return err
		}
		err = f.Chown(id.UID, id.GID)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// start moves a runnable job to running/ and hands it to a shepherd. It
// reports whether there is a started job to follow.
func (r *runner) start(rj *runJob) bool {
	rj.mu.Lock()
	j := rj.j
	if rj.cancel != nil {
		j.Reason = "cancelled"
		if err := r.sp.Move(j, spool.Runnable, spool.Rejected, "cancelled before start"); err != nil {
			r.log.Error("cannot reject cancelled job", "jid", j.JID, "err", err)
		} else {
			rj.done, rj.cancelled = true, true
			r.doneControl(*rj.cancel)
			r.log.Info("cancelled before start", "jid", j.JID)
		}
		rj.mu.Unlock()
		return false
	}
	if j.Schedule == nil || len(j.Schedule.Hosts) == 0 {
		// The scheduler placed it on no host: a bug upstream, not something
		// another attempt would change.
		j.Reason = "runnable without hosts: the scheduler gave the job no host"
		if err := r.sp.Move(j, spool.Runnable, spool.Rejected, "no hosts"); err != nil {
			r.log.Error("cannot reject job without hosts", "jid", j.JID, "err", err)
		}
		rj.done = true
		rj.mu.Unlock()
		return false
	}
	spec, specErr := r.launchSpec(j)
	rj.spec = spec
	attempts := 1
	if j.Run != nil {
		attempts = j.Run.Attempts + 1
	}
	j.Run = &spool.RunInfo{StartedAt: time.Now().UTC(), Attempts: attempts, Host: j.Schedule.Hosts[0]}
	if specErr == nil {
		i := 0
		for _, c := range rj.spec.Components {
			j.Run.Components = append(j.Run.Components, spool.Component{Cluster: c.Cluster, Hosts: rj.spec.Hosts[i : i+c.Hosts]})
			i += c.Hosts
		}
	}
	j.Reason = ""
	// The spool captures what the job names no destination for, in
	// output/<JID>/ (spool.CapturedPaths). A destination the job names is
	// its own: the shepherd opens it as the user, and a missing directory
	// there is the job's start error.
	var captured []string
	if j.Stdout == "" {
		captured = append(captured, rj.spec.Stdout)
	}
	if j.Stderr == "" {
		captured = append(captured, rj.spec.Stderr)
	}
	if len(captured) > 0 && specErr == nil {
		if err := r.outputDir(rj.spec, captured); err != nil {
			r.log.Error("cannot create output directory", "jid", j.JID, "err", err) // the shepherd reports it as a start error
		}
	}
	// Recorded before the start, so that a crash can never leave a started
	// job in runnable/ to be started a second time.
	if err := r.sp.Move(j, spool.Runnable, spool.Running, fmt.Sprintf("attempt %d on %s", attempts, strings.Join(j.Schedule.Hosts, ","))); err != nil {
		if atomicfile.NoSpace(err) {
			// Nothing has changed; the job waits in runnable/ for a scan
			// of its own, soon, not for the periodic rescan.
			wait := r.noSpace(true)
			r.log.Error("cannot move job to running: file system full; trying again", "jid", j.JID, "in", wait, "err", err)
			r.wakeUp(wait)
		} else {
			r.log.Error("cannot move job to running; will retry at the next scan", "jid", j.JID, "err", err)
		}
		rj.mu.Unlock()
		return false
	}
	r.noSpace(false)
	r.mu.Lock()
	rj.passedOver = false // its own file, seen before it moved
	r.mu.Unlock()
	if specErr != nil {
		// Known before any shepherd exists: nothing ran.
		r.retry(rj, "cannot start: "+specErr.Error())
		rj.mu.Unlock()
		return false
	}
	rj.mu.Unlock()

	// The shepherd's host file, result temporary and, when they are the
	// spool's and the job runs as the daemon's own user, output files come
	// from this daemon's recycled files, so the shepherd creates none (a
	// file created is an inode allocated: see atomicfile.Pool). Not the pid
	// file: Start creating it is what says the job was handed to a
	// shepherd (Run's recovery). Another user's output files were made by
	// outputDir.
	provide := []string{rj.spec.HostfilePath, rj.spec.ResultStaging}
	if rj.spec.Identity == nil || rj.spec.Identity.UID == os.Geteuid() {
		provide = append(provide, captured...)
	}
	for _, p := range provide {
		if err := r.sp.Provide(p); err != nil {
			r.log.Warn("cannot place launch file; the shepherd creates it", "file", p, "err", err)
		}
	}
	h, err := r.d.Launcher.Start(r.ctx, rj.spec)
	if err != nil {
		if r.ctx.Err() != nil {
			return false // stopping; the next run daemon finds no pid file and re-queues it
		}
		rj.mu.Lock()
		r.retry(rj, "cannot start: "+err.Error())
		rj.mu.Unlock()
		return false
	}
	rec := r.awaitPgid(h, rj.spec)
	rj.mu.Lock()
	defer rj.mu.Unlock()
	rj.h = h
	j.Run.PID, j.Run.PGID = h.Pid(), rec.Pgid
	rj.pidPending = true // recorded by follow (pidGrace) or the final Move
	if rec.SlurmJob != "" {
		// In the job file at once (the pid file has it already, for a
		// restarted daemon): status and the web page show it.
		j.Run.SlurmJob = rec.SlurmJob
		if err := r.sp.Update(j); err != nil {
			r.log.Error("cannot record Slurm job id", "jid", j.JID, "slurm_job", rec.SlurmJob, "err", err)
		} else {
			rj.pidPending = false
		}
	}
	if rj.cancel != nil {
		r.cancelRunning(rj)
	}
	r.log.Info("started", "jid", j.JID, "attempt", attempts, "pid", j.Run.PID, "hosts", strings.Join(j.Schedule.Hosts, ","))
	return true
}

// pgidWait bounds the wait for a new shepherd to record the job's process
// group: an exec and the start of the job, milliseconds on a busy machine.
const pgidWait = 2 * time.Second

// awaitPgid waits until the shepherd names the job's process group, the job
// has ended or pgidWait passes, through the shepherd's start notice (every
// launcher here gives one: launch.StartNotifier); otherwise it takes what
// the pid file holds now.
func (r *runner) awaitPgid(h launch.Handle, s launch.Spec) launch.PidFile {
	if sn, ok := h.(launch.StartNotifier); ok {
		t := time.NewTimer(pgidWait)
		defer t.Stop()
		select {
		case rec, ok := <-sn.Started():
			if ok && (rec.Pgid != 0 || rec.SlurmJob != "") {
				return rec
			}
		case <-t.C:
		case <-r.ctx.Done():
		}
	}
	rec, _ := launch.ReadPidFile(s.PidPath)
	return rec
}

// follow waits for a started job's result and records it. If the daemon is
// stopping it returns at once: the job goes on under its shepherd.
func (r *runner) follow(rj *runJob) {
	// A job that ends within pidGrace has its pid recorded by its final
	// Move; one still running then gets it recorded now: one write, not
	// two, for the many short jobs.
	gctx, cancel := context.WithTimeout(r.ctx, pidGrace)
	res, err := rj.h.Wait(gctx)
	graceOver := err != nil && errors.Is(gctx.Err(), context.DeadlineExceeded)
	cancel()
	if r.ctx.Err() == nil && graceOver {
		r.recordPid(rj)
		res, err = rj.h.Wait(r.ctx)
	}
	if r.ctx.Err() != nil {
		return
	}
	if errors.Is(err, launch.ErrLost) {
		rj.mu.Lock()
		r.retry(rj, "lost: the job's shepherd died without a result ("+err.Error()+")")
		rj.mu.Unlock()
		return
	}
	if err != nil {
		res = launch.Result{EndedAt: time.Now(), ExitStatus: -1, Reason: "result unreadable: " + err.Error()}
	}
	r.record(rj, res)
}

// pidGrace is how long a started job may run before its pid and process
// group are written into its job file (for `msched status` and the web
// page; the launch files hold them from the start, for the daemon).
const pidGrace = time.Second

// recordPid writes the pid and process group of a running job into its file.
func (r *runner) recordPid(rj *runJob) {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	if !rj.pidPending || rj.done || rj.leaving {
		return
	}
	rj.pidPending = false
	if err := r.sp.Update(rj.j); err != nil {
		r.log.Error("cannot record pid", "jid", rj.j.JID, "err", err)
	}
}

// record writes a job's Result into its file and moves it to finished/, or
// back to queued/ if it never started and has attempts left.
func (r *runner) record(rj *runJob, res launch.Result) {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	j := rj.j
	if res.Unreachable != "" {
		r.markDown(res.Unreachable, res.Reason)
	}
	if res.StartError && res.Permanent {
		// No attempt could start it (no such program, argv too long):
		// said at once, not after run.max_attempts tries.
		r.giveUp(rj, res.Reason+" (not retried: no attempt could start it)")
		return
	}
	if res.StartError {
		r.retry(rj, res.Reason)
		return
	}
	if j.Run == nil {
		j.Run = &spool.RunInfo{}
	}
	if !res.StartedAt.IsZero() {
		j.Run.StartedAt = res.StartedAt.UTC() // the shepherd's, closer to the truth
	}
	j.Run.EndedAt = res.EndedAt.UTC()
	j.Run.ExitStatus, j.Run.Signal = nil, res.Signal
	if res.ExitStatus >= 0 && res.Signal == "" {
		es := res.ExitStatus
		j.Run.ExitStatus = &es
	}
	j.Reason = res.Reason
	note := res.Reason
	if note == "" {
		note = "exit status 0"
	}
	r.finish(rj, note)
}

// markDown records that host (and, for a Slurm node, its whole cluster,
// whose controller did not answer) could not be reached.
func (r *runner) markDown(host, reason string) {
	r.log.Warn("host unreachable; marked down", "host", host, "reason", reason)
	if r.d.MarkDown == nil {
		return
	}
	h, ok := r.hosts[host]
	if a, err := h.Addr(); ok && err == nil && a.Kind == hoststat.KindSlurm {
		for _, o := range r.d.Hosts {
			if o.Cluster == h.Cluster {
				r.d.MarkDown(o.Name, reason)
			}
		}
		return
	}
	r.d.MarkDown(host, reason)
}

// retry handles a start that failed or a job that was lost: back to queued/
// while attempts remain, else to finished/ with the reason (running →
// rejected is not a move: see spool/doc.go). Called with rj.mu held.
func (r *runner) retry(rj *runJob, reason string) {
	j := rj.j
	attempts := 0
	if j.Run != nil {
		attempts = j.Run.Attempts
	}
	if attempts < r.max {
		// The schedule was for this attempt; the scheduler places the job anew.
		j.Run, j.Schedule, j.Reason = &spool.RunInfo{Attempts: attempts}, nil, ""
		if attempts == 0 {
			j.Run = nil
		}
		note := fmt.Sprintf("%s (attempt %d of %d); re-queued", reason, attempts, r.max)
		if err := r.moveOut(rj, spool.Queued, note); err != nil {
			r.log.Error("cannot re-queue job", "jid", j.JID, "err", err)
			return
		}
		rj.done = true
		r.cleanup(rj)
		r.log.Warn("re-queued", "jid", j.JID, "reason", reason, "attempts", attempts)
		return
	}
	r.giveUp(rj, fmt.Sprintf("%s (attempt %d of %d; giving up)", reason, attempts, r.max))
}

// giveUp finishes a job that did not run (or was lost) with reason, and no
// exit status (running → rejected is not a move: see spool/doc.go). Called
// with rj.mu held.
func (r *runner) giveUp(rj *runJob, reason string) {
	j := rj.j
	if j.Run == nil {
		j.Run = &spool.RunInfo{}
	}
	if j.Run.EndedAt.IsZero() {
		j.Run.EndedAt = time.Now().UTC()
	}
	j.Run.ExitStatus = nil
	j.Reason = reason
	r.finish(rj, j.Reason)
}

// noSpace keeps count of starts in a row that found the file system full
// (full true), or ends the count (false), and returns how long to wait
// before the next try.
func (r *runner) noSpace(full bool) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !full {
		r.fullStarts = 0
		return 0
	}
	r.fullStarts++
	return atomicfile.NoSpaceWait(r.fullStarts - 1)
}

// moveOut moves rj's job from running/ to to. A full file system does not
// leave the job in running/ until the daemon restarts (its hosts counted
// busy all that time): the move is tried again, NoSpaceWait apart, until
// it succeeds or the daemon stops. While it waits it lets go of rj.mu,
// which its caller holds, so that the scan is not held up, and marks the
// job leaving, so that nothing rewrites it meanwhile.
func (r *runner) moveOut(rj *runJob, to spool.State, note string) error {
	for round := 0; ; round++ {
		err := r.sp.Move(rj.j, spool.Running, to, note)
		if err == nil || !atomicfile.NoSpace(err) || r.ctx.Err() != nil {
			return err
		}
		if round == 0 {
			r.log.Error("cannot record the job: file system full; waiting for space", "jid", rj.j.JID, "to", to, "err", err)
		}
		rj.leaving = true
		rj.mu.Unlock()
		t := time.NewTimer(atomicfile.NoSpaceWait(round))
		select {
		case <-r.ctx.Done():
		case <-t.C:
		}
		t.Stop()
		rj.mu.Lock()
		rj.leaving = false
		if r.ctx.Err() != nil {
			// Stopping: the next run daemon adopts the job from running/.
			return err
		}
	}
}

// finish moves a job to finished/ and removes its launch files. Called
// with rj.mu held.
func (r *runner) finish(rj *runJob, note string) {
	j := rj.j
	if err := r.moveOut(rj, spool.Finished, note); err != nil {
		// Left in running/ with its result on disk: the next run daemon
		// adopts it as Finished and records it then.
		r.log.Error("cannot move job to finished", "jid", j.JID, "err", err)
		return
	}
	rj.done = true
	r.cleanup(rj)
	r.log.Info("finished", "jid", j.JID, "note", note)
}

// cleanup removes the launch files once the outcome is in the job file.
func (r *runner) cleanup(rj *runJob) {
	if rj.spec.ResultPath == "" {
		return
	}
	for _, f := range rj.spec.Files() {
		if err := r.sp.Recycle(f); err != nil {
			r.log.Warn("cannot remove launch file", "file", f, "err", err)
		}
	}
}
