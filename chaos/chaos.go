// Package chaos checks README's guarantees after a crash from the outside:
// it runs the five daemons as separate `msched daemon X` processes on one
// spool, submits jobs that each record their JID in a log when they run,
// drops hostile files among them, kills daemons and shepherds with SIGKILL
// at random instants, optionally fills the spool's file system for a
// while, and at the end counts what became of every submission (Result),
// across the accounting log's rotations, and checks that the profiler's
// feed from the log counted every completed job once.
//
// Every random choice comes from Config.Seed, so a run's schedule of
// submissions, kills and victims can be replayed (the daemons' own timing
// cannot).
package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"msched/acct"
	"msched/daemons"
	"msched/hoststat"
	"msched/launch"
	"msched/profiler"
	"msched/spool"
)

// Config is one chaos run.
type Config struct {
	// Exe is the msched binary the daemons run as (`Exe daemon NAME`).
	Exe string
	// Dir is the run's working directory (it must exist and be empty or
	// new): the spool is Dir/spool, the daemons' log Dir/daemons.log and
	// the jobs' log Dir/ran.log.
	Dir string
	// Jobs is the number of good jobs (default 500), submitted at Rate
	// per second (default 20) with `msched submit`'s atomic write; each
	// runs for a random time up to JobTime (default 1 s).
	Jobs    int
	Rate    float64
	JobTime time.Duration
	// Bad is the number of hostile files dropped among them (default 20),
	// of every kind in turn (see hostileKinds).
	Bad int
	// Kills is the number of kills (default 20): each of a random daemon,
	// a random running job's shepherd (a random daemon when no job runs),
	// or run and a shepherd together, at random instants while jobs are
	// submitted and running;
	// a killed daemon is restarted after up to MaxDown (default 1.5 s).
	Kills   int
	MaxDown time.Duration
	// Slots is the number of local hosts (default 8).
	Slots int
	// Full fills the spool's file system for this long (0: no ENOSPC
	// phase), a third of the way through the submissions. The spool is
	// then a tmpfs of DiskBytes (default 32 MiB) mounted on Dir/spool,
	// which needs root (CAP_SYS_ADMIN).
	Full      time.Duration
	DiskBytes int64
	// Timeout bounds the wait for every submission to be reported
	// (default 10 min).
	Timeout time.Duration
	// Seed seeds every random choice.
	Seed int64
	// Settings are extra configuration for the daemons, as MSCHED_*
	// variables ("run.max_attempts" → MSCHED_RUN_MAX_ATTEMPTS). By default
	// retention.accounting_bytes is 2048 and retention.accounting_keep 1000
	// (see defaults).
	Settings map[string]string
	// Progress, when set, receives a line per event (kills, the full
	// phase, progress).
	Progress io.Writer
}

// Result is what became of every submission, README's guarantees counted.
type Result struct {
	// Jobs is the number of submissions (good jobs and hostile files).
	Jobs int `json:"jobs"`
	// ReportedOnce counts submissions with exactly one accounting record
	// and a report file; Lost those with no record.
	ReportedOnce int `json:"reported_once"`
	Lost         int `json:"lost"`
	// RanTwice counts jobs that ran more than once (their log lines);
	// RanTwiceAllowed those of them that README allows: jobs whose shepherd
	// was killed (re-queued as a new attempt).
	RanTwice        int `json:"ran_twice"`
	RanTwiceAllowed int `json:"ran_twice_allowed"`
	// Records is the number of whole accounting records, TornRecords the
	// lines that are not one.
	Records     int `json:"records"`
	TornRecords int `json:"torn_records"`
	// LeftInSpool counts job files still in a state directory, and claims
	// still in tmp/, at the end.
	LeftInSpool int `json:"left_in_spool"`
	// LeftRunning counts the processes that good jobs started in a
	// session of their own (setsid) still running at the end, when every
	// job has been reported: each job's must end with it, even when its
	// shepherd was killed.
	LeftRunning int `json:"left_running"`
	// Rotations is the number of accounting generations (rotated logs)
	// at the end: the records above are read from all of them.
	Rotations int `json:"rotations"`
	// Completed is the number of records of jobs that completed on hosts;
	// Profiled the runs the historical profiler counted from the log
	// (the sched daemon's feed, across its kills and the log's rotations,
	// caught up at the end): each completed job once. Their run times,
	// seconds, must match too: a lost record and one counted twice would
	// leave the counts equal, not the times (each job's is random).
	Completed        int     `json:"completed"`
	Profiled         int     `json:"profiled"`
	CompletedSeconds float64 `json:"completed_s"`
	ProfiledSeconds  float64 `json:"profiled_s"`

	// Good and Bad split Jobs. NotRun counts good jobs that never ran,
	// Failed good jobs whose record is not exit status 0, WrongOutcome
	// hostile files not rejected, Duplicated submissions with more than
	// one record.
	Good         int `json:"good"`
	Bad          int `json:"bad"`
	NotRun       int `json:"not_run"`
	Failed       int `json:"failed"`
	WrongOutcome int `json:"wrong_outcome"`
	Duplicated   int `json:"duplicated"`
	// Kills are the SIGKILLs sent, by victim; FullSeconds how long the
	// file system was full; SubmitRetries the submissions retried because
	// the file system was full.
	Kills         map[string]int `json:"kills"`
	FullSeconds   float64        `json:"full_s"`
	SubmitRetries int            `json:"submit_retries"`
	Seconds       float64        `json:"seconds"`
	Seed          int64          `json:"seed"`
	// Problems names the first few submissions that broke a guarantee.
	Problems []string `json:"problems,omitempty"`
}

// OK reports whether every guarantee held.
func (r *Result) OK() bool {
	return r.Lost == 0 && r.ReportedOnce == r.Jobs && r.RanTwice == r.RanTwiceAllowed &&
		r.TornRecords == 0 && r.LeftInSpool == 0 && r.LeftRunning == 0 && r.NotRun == 0 && r.Failed == 0 &&
		r.WrongOutcome == 0 && r.Duplicated == 0 && r.profiledRight()
}

// profiledRight reports whether the profiler counted the completed jobs'
// runs, each once.
func (r *Result) profiledRight() bool {
	return r.Profiled == r.Completed && math.Abs(r.ProfiledSeconds-r.CompletedSeconds) <= 1e-6*max(1, r.CompletedSeconds)
}

func (c *Config) defaults() error {
	if c.Exe == "" || c.Dir == "" {
		return errors.New("chaos: Exe and Dir are required")
	}
	if c.Jobs <= 0 {
		c.Jobs = 500
	}
	if c.Rate <= 0 {
		c.Rate = 20
	}
	if c.JobTime <= 0 {
		c.JobTime = time.Second
	}
	if c.Bad < 0 {
		c.Bad = 0
	}
	if c.Kills < 0 {
		c.Kills = 0
	}
	if c.MaxDown <= 0 {
		c.MaxDown = 1500 * time.Millisecond
	}
	if c.Slots <= 0 {
		c.Slots = 8
	}
	if c.DiskBytes <= 0 {
		c.DiskBytes = 32 << 20
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Minute
	}
	// Unless told otherwise, the reaper rotates the accounting log at each
	// of its starts once it is over 2 KiB (about six records), keeping
	// every generation: the records and the profiler's count are then
	// checked across rotations, made while daemons are killed.
	settings := map[string]string{"retention.accounting_bytes": "2048", "retention.accounting_keep": "1000"}
	maps.Copy(settings, c.Settings)
	c.Settings = settings
	return nil
}

// submission is one file put into submitted/.
type submission struct {
	file string // name in submitted/ (as asked)
	name string // the name its record carries
	good bool   // a job that must run once and exit 0
	kind string // hostile kind, "" for a good job
	data []byte // a good job's file; a hostile file's random bytes
}

// run is one chaos run under way.
type run struct {
	cfg    Config
	rng    *rand.Rand
	sp     *spool.Spool
	root   string // spool directory
	env    []string
	log    *os.File
	ranLog string
	say    func(format string, a ...any)

	mu        sync.Mutex
	procs     map[string]*proc
	shepherds map[string]bool // JIDs whose shepherd was killed
	kills     map[string]int
	retries   int
	full      time.Duration
}

// proc is one `msched daemon X` process.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// Daemons are the five daemons, each run as its own process.
var Daemons = []string{"init", "sched", "run", "reaper", "stats"}

// Run performs one chaos run and counts its outcome. An error means the
// run could not be carried out (no spool, a daemon that cannot start);
// broken guarantees are in the Result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	r := &run{cfg: cfg, rng: rand.New(rand.NewSource(cfg.Seed)), procs: map[string]*proc{},
		shepherds: map[string]bool{}, kills: map[string]int{}}
	r.say = func(format string, a ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "chaos: %6.1fs "+format+"\n", append([]any{time.Since(t0).Seconds()}, a...)...)
		}
	}
	r.root = filepath.Join(cfg.Dir, "spool")
	if err := os.MkdirAll(r.root, 0o755); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	if cfg.Full > 0 {
		if err := syscall.Mount("tmpfs", r.root, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", cfg.DiskBytes)); err != nil {
			return nil, fmt.Errorf("chaos: the full-disk phase mounts a tmpfs on %s (needs root): %w", r.root, err)
		}
		defer syscall.Unmount(r.root, syscall.MNT_DETACH)
	}
	sp, err := spool.Create(r.root)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	r.sp = sp
	hosts := make([]hoststat.Host, cfg.Slots)
	for i := range hosts {
		hosts[i] = hoststat.Host{Name: fmt.Sprintf("slot%d", i), Arch: "generic", Cluster: "chaos", Address: "local"}
	}
	if err := hoststat.WriteHosts(filepath.Join(sp.Path(spool.DirDB), "hosts.yaml"), hosts); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	r.ranLog = filepath.Join(cfg.Dir, "ran.log")
	if err := os.WriteFile(r.ranLog, nil, 0o666); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	r.log, err = os.OpenFile(filepath.Join(cfg.Dir, "daemons.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	defer r.log.Close()
	r.env = append(os.Environ(), "MSCHED_SPOOL="+r.root, "MSCHED_LOG_LEVEL=info")
	keys := make([]string, 0, len(cfg.Settings))
	for k := range cfg.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r.env = append(r.env, "MSCHED_"+strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(k))+"="+cfg.Settings[k])
	}

	for _, n := range Daemons {
		if err := r.start(n); err != nil {
			r.stopAll()
			return nil, err
		}
	}
	defer r.stopAll()

	subs := r.plan()
	submitTime := time.Duration(float64(len(subs)) / cfg.Rate * float64(time.Second))
	var wg sync.WaitGroup
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 3)
	wg.Add(1)
	go func() { defer wg.Done(); errc <- r.submitAll(rctx, subs) }()
	// The kills' and the full phase's instants are drawn here, on this
	// goroutine, so that the seed decides them whatever the timing.
	kills := r.killTimes(submitTime)
	victims := make([]string, len(kills))
	for i := range victims {
		victims[i] = victimKinds[r.rng.Intn(len(victimKinds))]
	}
	downs := make([]time.Duration, len(kills))
	for i := range downs {
		downs[i] = time.Duration(50e6 + r.rng.Int63n(int64(cfg.MaxDown)))
	}
	picks := make([]int, len(kills))
	for i := range picks {
		picks[i] = r.rng.Int()
	}
	wg.Add(1)
	go func() { defer wg.Done(); errc <- r.killAll(rctx, t0, kills, victims, downs, picks) }()
	if cfg.Full > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); errc <- r.fill(rctx, t0.Add(submitTime/3)) }()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			return nil, err
		}
	}
	r.say("submissions, kills and the full phase over; waiting for %d reports", len(subs))
	if err := r.wait(ctx, subs); err != nil {
		r.say("%v", err)
	}
	r.stopAll()
	res, err := r.count(ctx, subs)
	if err != nil {
		return nil, err
	}
	res.Kills, res.FullSeconds, res.SubmitRetries = r.kills, r.full.Seconds(), r.retries
	res.Seconds, res.Seed = time.Since(t0).Seconds(), cfg.Seed
	return res, nil
}

// start starts daemon n.
func (r *run) start(n string) error {
	cmd := exec.Command(r.cfg.Exe, "daemon", n)
	cmd.Env = r.env
	cmd.Stdout, cmd.Stderr = r.log, r.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("chaos: start %s: %w", n, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	r.mu.Lock()
	r.procs[n] = p
	r.mu.Unlock()
	return nil
}

// kill sends SIGKILL to daemon n and waits for it to end.
func (r *run) kill(n string) {
	r.mu.Lock()
	p := r.procs[n]
	r.mu.Unlock()
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stopAll stops every daemon with SIGTERM (SIGKILL after 20 s). Jobs
// still running are left to their shepherds, as a stop of msched does.
func (r *run) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for n, p := range r.procs {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			r.say("%s did not stop within 20 s of SIGTERM; killed", n)
			p.cmd.Process.Kill()
			<-p.done
		}
		delete(r.procs, n)
	}
}

// plan is the submissions in order: the good jobs with the hostile files
// at random places among them.
func (r *run) plan() []submission {
	subs := make([]submission, 0, r.cfg.Jobs+r.cfg.Bad)
	for i := range r.cfg.Jobs {
		n := fmt.Sprintf("g%05d", i)
		subs = append(subs, submission{file: n + ".yaml", name: n, good: true, data: r.jobFile(n)})
	}
	for i := range r.cfg.Bad {
		k := hostileKinds[i%len(hostileKinds)]
		f := fmt.Sprintf("bad%03d-%s", i, k.name)
		if k.name == "long-name" {
			f += "-" + strings.Repeat("x", 240-len(f))
		}
		s := submission{file: f, name: f, good: k.good, kind: k.name}
		switch {
		case k.good:
			s.data = r.jobFile(f)
		case k.name == "binary":
			s.data = make([]byte, 4096)
			r.rng.Read(s.data)
		}
		at := r.rng.Intn(len(subs) + 1)
		subs = slices.Insert(subs, at, s)
	}
	return subs
}

// jobFile is good job name's file: it starts a process that leaves the
// job's session and process group and would sleep 5 minutes (see
// Result.LeftRunning), logs "JID name" to the jobs' log, then sleeps.
func (r *run) jobFile(name string) []byte {
	sleep := r.rng.Int63n(int64(r.cfg.JobTime) + 1)
	script := fmt.Sprintf(`setsid sleep 300 </dev/null >/dev/null 2>&1 & printf '%%s %%s\n' "$MSCHED_JID" %s >> %s; sleep %.3f`,
		name, shellQuote(r.ranLog), float64(sleep)/1e9)
	b, _ := json.Marshal([]string{"/bin/sh", "-c", script})
	return []byte(fmt.Sprintf("name: %s\nwalltime: 5m\ncommand: %s\n", name, b))
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// submitAll submits subs at the configured rate. A good job goes through
// spool.Submit (msched submit's atomic write), retried while the file
// system is full; a hostile file is made in submitted/ directly.
func (r *run) submitAll(ctx context.Context, subs []submission) error {
	every := time.Duration(float64(time.Second) / r.cfg.Rate)
	next := time.Now()
	for _, s := range subs {
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(d):
			}
		}
		next = next.Add(every)
		for {
			var err error
			if s.kind == "" {
				_, err = r.sp.Submit(s.file, s.data)
			} else {
				err = r.hostile(s)
			}
			if err == nil {
				break
			}
			if !errors.Is(err, syscall.ENOSPC) {
				return fmt.Errorf("chaos: submit %s: %w", s.file, err)
			}
			r.mu.Lock()
			r.retries++
			r.mu.Unlock()
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// hostileKind is one kind of file a user may drop into submitted/.
type hostileKind struct {
	name string
	good bool // a job that must still run (once) and exit 0
	make func(path string, data []byte) error
}

var hostileKinds = []hostileKind{
	{"symlink", false, func(p string, _ []byte) error { return os.Symlink("/etc/passwd", p) }},
	{"fifo", false, func(p string, _ []byte) error { return syscall.Mkfifo(p, 0o644) }},
	{"directory", false, func(p string, _ []byte) error { return os.Mkdir(p, 0o755) }},
	{"huge", false, func(p string, _ []byte) error {
		// 4 MiB of YAML: a job file far over any sane bound.
		var b bytes.Buffer
		b.WriteString("command: [\"true\"]\nenv:\n")
		for i := 0; b.Len() < 4<<20; i++ {
			fmt.Fprintf(&b, "  V%07d: %s\n", i, strings.Repeat("x", 100))
		}
		return writeNew(p, b.Bytes())
	}},
	{"deep", false, func(p string, _ []byte) error {
		return writeNew(p, []byte("command: "+strings.Repeat("[", 10000)+strings.Repeat("]", 10000)+"\n"))
	}},
	{"not-yaml", false, func(p string, _ []byte) error { return writeNew(p, []byte("command: [\"true\"\n\tname: : :\n")) }},
	{"binary", false, writeNew},
	{"empty", false, func(p string, _ []byte) error { return writeNew(p, nil) }},
	{"merge-key", false, func(p string, _ []byte) error { return writeNew(p, []byte("env: {<<, {0}}\n")) }},
	{"aliases", false, func(p string, _ []byte) error {
		// A billion laughs: each level names the last ten times.
		b := "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
		for i := 1; i < 12; i++ {
			b += fmt.Sprintf("a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
		}
		return writeNew(p, []byte(b+"command: [\"true\"]\n"))
	}},
	{"no-command", false, func(p string, _ []byte) error {
		return writeNew(p, []byte("name: "+filepath.Base(p)+"\nwalltime: 1m\n"))
	}},
	{"user-field", false, func(p string, _ []byte) error {
		return writeNew(p, []byte("name: "+filepath.Base(p)+"\nuser: root\ncommand: [\"true\"]\n"))
	}},
	{"long-name", false, func(p string, _ []byte) error {
		return writeNew(p, []byte("command: [\"true\"\n")) // also not YAML
	}},
	{"in-place", true, func(p string, data []byte) error {
		// Written where it lies, in pieces with pauses, as an editor or a
		// shell redirection does: it must run once, whole.
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		piece := len(data)/4 + 1
		for len(data) > 0 {
			n := min(len(data), piece)
			if _, err := f.Write(data[:n]); err != nil {
				return err
			}
			data = data[n:]
			time.Sleep(150 * time.Millisecond)
		}
		return nil
	}},
}

// writeNew writes a new file at p (never replacing one).
func writeNew(p string, b []byte) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(p)
		return err
	}
	return f.Close()
}

// hostile makes s's file in submitted/.
func (r *run) hostile(s submission) error {
	for _, k := range hostileKinds {
		if k.name == s.kind {
			err := k.make(filepath.Join(r.sp.Dir(spool.Submitted), s.file), s.data)
			if errors.Is(err, syscall.ENOSPC) {
				os.RemoveAll(filepath.Join(r.sp.Dir(spool.Submitted), s.file))
			}
			return err
		}
	}
	return fmt.Errorf("chaos: no hostile kind %q", s.kind)
}

// victimKinds are what a kill hits: a daemon, a running job's shepherd, or
// run and a shepherd together (the case where README allows a job to run
// twice).
var victimKinds = append(slices.Clone(Daemons), "shepherd", "run+shepherd")

// killTimes draws the kills' instants, from a second in to the end of the
// submissions plus five seconds, in order.
func (r *run) killTimes(submitTime time.Duration) []time.Duration {
	span := submitTime + 5*time.Second
	out := make([]time.Duration, r.cfg.Kills)
	for i := range out {
		out[i] = time.Second + time.Duration(r.rng.Int63n(int64(span)))
	}
	slices.Sort(out)
	return out
}

// killAll carries out the kills.
func (r *run) killAll(ctx context.Context, t0 time.Time, at []time.Duration, victims []string, downs []time.Duration, picks []int) error {
	for i := range at {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(t0.Add(at[i]))):
		}
		v := victims[i]
		switch v {
		case "shepherd":
			if jid := r.killShepherd(picks[i]); jid != "" {
				r.say("killed the shepherd of %s", jid)
				r.count1("shepherd")
				continue
			}
			// No job running: the kill goes to a daemon, so that every
			// kill is one.
			v = Daemons[picks[i]%len(Daemons)]
			r.kill(v)
			r.say("no shepherd to kill; killed %s", v)
			r.count1(v)
		case "run+shepherd":
			r.kill("run")
			jid := r.killShepherd(picks[i])
			r.say("killed run and the shepherd of %q", jid)
			r.count1("run")
			if jid != "" {
				r.count1("shepherd")
			}
			v = "run"
		default:
			r.kill(v)
			r.say("killed %s", v)
			r.count1(v)
		}
		select {
		case <-ctx.Done():
		case <-time.After(downs[i]):
		}
		if err := r.start(v); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) count1(v string) {
	r.mu.Lock()
	r.kills[v]++
	r.mu.Unlock()
}

// killShepherd kills the shepherd of a running job, chosen by pick among
// those whose shepherd is alive, and returns its JID ("" if none).
func (r *run) killShepherd(pick int) string {
	es, err := r.sp.List(spool.Running)
	if err != nil {
		return ""
	}
	var cands []*spool.Job
	for _, e := range es {
		j, err := r.sp.Read(spool.Running, e.Name)
		if err == nil && j.Run != nil && j.Run.PID > 0 && syscall.Kill(j.Run.PID, 0) == nil {
			cands = append(cands, j)
		}
	}
	if len(cands) == 0 {
		return ""
	}
	j := cands[pick%len(cands)]
	r.mu.Lock()
	r.shepherds[j.JID] = true // before the kill: a job may re-run at once
	r.mu.Unlock()
	if syscall.Kill(j.Run.PID, syscall.SIGKILL) != nil {
		return ""
	}
	return j.JID
}

// fill fills the spool's file system at the instant at, keeps it full for
// Config.Full, and frees it.
func (r *run) fill(ctx context.Context, at time.Time) error {
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(time.Until(at)):
	}
	p := filepath.Join(r.root, ".chaos-fill")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("chaos: fill: %w", err)
	}
	buf := make([]byte, 1<<20)
	for {
		if _, err = f.Write(buf); err != nil {
			break
		}
	}
	// The last bytes: a file system full to the byte.
	for n := 64 << 10; n > 0; n /= 2 {
		for {
			if _, err := f.Write(buf[:n]); err != nil {
				break
			}
		}
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		os.Remove(p)
		return fmt.Errorf("chaos: fill: %w", err)
	}
	full := time.Now()
	r.say("file system full")
	select {
	case <-ctx.Done():
	case <-time.After(r.cfg.Full):
	}
	if err := os.Remove(p); err != nil {
		return fmt.Errorf("chaos: fill: %w", err)
	}
	r.mu.Lock()
	r.full = time.Since(full)
	r.mu.Unlock()
	r.say("file system freed after %.1f s", time.Since(full).Seconds())
	return nil
}

// wait waits until every submission has an accounting record and no job
// file is left in the spool, or Config.Timeout.
func (r *run) wait(ctx context.Context, subs []submission) error {
	deadline := time.Now().Add(r.cfg.Timeout)
	last := -1
	for {
		recs, _, _, err := r.records()
		if err == nil {
			seen := map[string]bool{}
			for _, rec := range recs {
				seen[rec.Name] = true
			}
			n := 0
			for _, s := range subs {
				if matched(s, seen) {
					n++
				}
			}
			if n != last {
				r.say("%d of %d reported", n, len(subs))
				last = n
			}
			if n == len(subs) && r.left() == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v with %d of %d reported", r.cfg.Timeout, last, len(subs))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// matched reports whether s has a record among names. A long name may have
// been cut to fit a claim's name.
func matched(s submission, names map[string]bool) bool {
	_, ok := recordName(s, names)
	return ok
}

func recordName(s submission, names map[string]bool) (string, bool) {
	if names[s.name] {
		return s.name, true
	}
	if s.kind == "long-name" {
		for n := range names {
			if len(n) >= 32 && strings.HasPrefix(s.name, n) {
				return n, true
			}
		}
	}
	return "", false
}

// records reads the accounting log, its rotated generations (oldest
// first, as acct.Generations lists them) and the live log: its whole
// records, and the number of lines that are not one (a torn append). A
// generation's leading records whose JIDs the generation before it has are
// a rotation's copies and are left out; any other JID seen before is kept
// again (a duplicate).
func (r *run) records() (recs []acct.Record, torn, rotations int, err error) {
	gens, err := acct.Generations(r.sp.Path(spool.DirDB), acct.JSONL)
	if err != nil {
		return nil, 0, 0, err
	}
	var prev map[string]bool // the JIDs of the generation before
	for k := len(gens) - 1; k >= 0; k-- {
		if gens[k].N > 0 {
			rotations++
		}
		b, err := os.ReadFile(gens[k].Path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, 0, 0, err
		}
		here := map[string]bool{}
		leading := true
		for len(b) > 0 {
			line, rest, nl := bytes.Cut(b, []byte("\n"))
			b = rest
			var rec acct.Record
			if !nl || json.Unmarshal(line, &rec) != nil || rec.JID == "" {
				torn++
				continue
			}
			here[rec.JID] = true
			if leading = leading && prev[rec.JID]; leading {
				continue // a copy of the generation before's record
			}
			recs = append(recs, rec)
		}
		prev = here
	}
	return recs, torn, rotations, nil
}

// profiled catches the profiler's feed up with the accounting log, as the
// sched daemon runs it (profiler.FeedFromAccounting, from the position it
// stored), once the daemons have stopped, and returns the runs it counted
// and their seconds: it waits until the count reaches want and holds for a
// second (a double count would show), or for up to a minute.
func (r *run) profiled(ctx context.Context, want int) (runs int, seconds float64, err error) {
	db := r.sp.Path(spool.DirDB)
	p, err := profiler.Open(filepath.Join(db, "profiler.db"), profiler.Options{})
	if err != nil {
		return 0, 0, err
	}
	defer p.Close()
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- profiler.FeedFromAccounting(fctx, filepath.Join(db, acct.JSONL), p) }()
	// Caught up, and then three of the feed's looks more, in which a
	// record counted twice would show.
	deadline := time.Now().Add(time.Minute)
	for at := 0; ctx.Err() == nil && time.Now().Before(deadline) && at < 30; {
		time.Sleep(profiler.FeedEvery / 10)
		if p.Count() >= want {
			at++
		}
	}
	cancel()
	if err := <-done; err != nil {
		return 0, 0, err
	}
	for _, b := range p.Bins(profiler.LevelSystem, "", "", 0) {
		seconds += float64(b.N) * b.Mean()
	}
	return p.Count(), seconds, nil
}

// left counts job files in the state directories and claims in tmp/.
func (r *run) left() int {
	n := 0
	for _, st := range spool.States {
		es, err := os.ReadDir(r.sp.Dir(st))
		if err != nil {
			continue
		}
		for _, e := range es {
			if !strings.HasPrefix(e.Name(), ".") {
				n++
			}
		}
	}
	es, _ := os.ReadDir(r.sp.Path(spool.DirTmp))
	for _, e := range es {
		if strings.HasPrefix(e.Name(), "claim.") {
			n++
		}
	}
	return n
}

// ranLines reads the jobs' log: how often each name ran, and under which
// JIDs.
func (r *run) ranLines() (map[string][]string, error) {
	f, err := os.Open(r.ranLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		jid, name, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if ok {
			out[name] = append(out[name], jid)
		}
	}
	return out, sc.Err()
}

// count measures the outcome.
func (r *run) count(ctx context.Context, subs []submission) (*Result, error) {
	recs, torn, rotations, err := r.records()
	if err != nil {
		return nil, fmt.Errorf("chaos: accounting: %w", err)
	}
	ran, err := r.ranLines()
	if err != nil {
		return nil, fmt.Errorf("chaos: jobs' log: %w", err)
	}
	res := &Result{Jobs: len(subs), Records: len(recs), TornRecords: torn, LeftInSpool: r.left(), Rotations: rotations}
	problem := func(format string, a ...any) {
		if len(res.Problems) < 20 {
			res.Problems = append(res.Problems, fmt.Sprintf(format, a...))
		}
	}
	left, err := launch.JobsRunningFrom(filepath.Join(r.sp.Path(spool.DirDB), daemons.RunDir))
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	for _, pid := range left {
		res.LeftRunning++
		problem("process %d of a reported job still runs", pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, rec := range recs {
		if profiler.Counts(&rec) {
			res.Completed++
			res.CompletedSeconds += *rec.ActualSeconds
		}
	}
	if res.Profiled, res.ProfiledSeconds, err = r.profiled(ctx, res.Completed); err != nil {
		return nil, fmt.Errorf("chaos: profiler: %w", err)
	}
	if !res.profiledRight() {
		problem("the profiler counted %d runs of %.6f s; the %d completed jobs ran %.6f s", res.Profiled, res.ProfiledSeconds, res.Completed, res.CompletedSeconds)
	}
	byName := map[string][]acct.Record{}
	names := map[string]bool{}
	for _, rec := range recs {
		byName[rec.Name] = append(byName[rec.Name], rec)
		names[rec.Name] = true
	}
	for _, s := range subs {
		if s.good {
			res.Good++
		} else {
			res.Bad++
		}
		n, ok := recordName(s, names)
		rs := byName[n]
		switch {
		case !ok:
			res.Lost++
			problem("%s: no accounting record", s.file)
		case len(rs) > 1:
			res.Duplicated++
			problem("%s: %d accounting records", s.file, len(rs))
		default:
			if _, err := os.Stat(filepath.Join(r.sp.Path(spool.DirReports), rs[0].JID+".txt")); err == nil {
				res.ReportedOnce++
			} else {
				problem("%s (%s): no report file", s.file, rs[0].JID)
			}
		}
		jids := ran[s.name]
		if !s.good {
			if len(jids) > 0 {
				res.WrongOutcome++
				problem("%s: a hostile file ran", s.file)
			} else if ok && slices.ContainsFunc(rs, func(x acct.Record) bool { return x.State != "rejected" }) {
				res.WrongOutcome++
				problem("%s: not rejected (%s)", s.file, rs[0].State)
			}
			continue
		}
		switch {
		case len(jids) == 0:
			res.NotRun++
			problem("%s: never ran", s.file)
		case len(jids) > 1:
			res.RanTwice++
			allowed := false
			for _, j := range jids {
				allowed = allowed || r.shepherds[j]
			}
			if allowed {
				res.RanTwiceAllowed++
			} else {
				problem("%s: ran %d times (JIDs %s), its shepherd never killed", s.file, len(jids), strings.Join(jids, " "))
			}
		}
		if ok && slices.ContainsFunc(rs, func(x acct.Record) bool {
			return x.State != "exited" || x.ExitStatus == nil || *x.ExitStatus != 0
		}) {
			res.Failed++
			problem("%s (%s): %s, exit %v, %s", s.file, rs[0].JID, rs[0].State, deref(rs[0].ExitStatus), rs[0].Reason)
		}
	}
	return res, nil
}

func deref(p *int) any {
	if p == nil {
		return "none"
	}
	return *p
}
