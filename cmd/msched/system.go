package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"msched/daemons"
	"msched/evaluator"
	"msched/examples"
	"msched/hoststat"
	"msched/launch"
	"msched/models"
	"msched/notify"
	"msched/policy"
	"msched/spool"
)

// daemonNames lists the five daemons in the order `msched up` starts them.
var daemonNames = []string{"init", "sched", "run", "reaper", "stats"}

// system builds daemons from a config. It holds what they share in one
// process (the spool, the hosts) and what must be closed after them.
type system struct {
	cfg   config
	sp    *spool.Spool
	hosts []hoststat.Host
	log   *slog.Logger
	// launcher starts jobs; the zero Local runs launch.DefaultShepherd
	// (msched-shepherd next to this binary, else this binary re-executed).
	// Tests set Exe to a built msched.
	launcher launch.Launcher
	// notifier receives every report after its file is written; nil: log it.
	notifier notify.Notifier
	closers  []func() error
	// hearts are the running daemons' heartbeats, by name (set by run).
	hearts map[string]*spool.Heart
}

// openSystem opens the spool (it must exist) and loads the hosts.
func openSystem(cfg config, log *slog.Logger) (*system, error) {
	sp, err := spool.Open(cfg.Spool)
	if err != nil {
		return nil, fmt.Errorf("%w (`msched up` creates a spool)", err)
	}
	if err := sp.SetMaxJobFile(cfg.MaxJobBytes); err != nil {
		return nil, fmt.Errorf("config: init.max_job_bytes: %w", err)
	}
	hosts, err := loadHosts(cfg)
	if err != nil {
		return nil, err
	}
	return &system{cfg: cfg, sp: sp, hosts: hosts, log: log, launcher: launch.Local{}}, nil
}

// loadHosts reads the hosts file. Without one (and none configured) the
// hosts are this machine's CPUs.
func loadHosts(cfg config) ([]hoststat.Host, error) {
	hs, err := hoststat.LoadHosts(cfg.HostsFile)
	if errors.Is(err, fs.ErrNotExist) && !cfg.HostsGiven {
		return hoststat.LocalHosts()
	}
	return hs, err
}

// close releases what the daemons held (evaluator, stats store).
func (s *system) close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	s.closers = nil
	return errors.Join(errs...)
}

// env is what daemon name needs: the spool, the log, the rescan and its
// heartbeat.
func (s *system) env(name string) daemons.Env {
	return daemons.Env{Spool: s.sp, Log: s.log, Rescan: s.cfg.Rescan, Heart: s.hearts[name]}
}

// daemon builds one daemon by name.
func (s *system) daemon(ctx context.Context, name string) (interface{ Run(context.Context) error }, error) {
	switch name {
	case "init":
		return &daemons.Init{Env: s.env(name)}, nil
	case "sched":
		return s.sched(ctx)
	case "run":
		if l, ok := s.launcher.(launch.Local); ok && l.Exe == "" {
			_, _, how, err := launch.DefaultShepherd()
			if err != nil {
				return nil, err
			}
			s.log.Info("job shepherd", "daemon", "run", "exec", how)
		}
		return &daemons.Run{Env: s.env(name), Launcher: s.launcher, MaxAttempts: s.cfg.MaxAttempts, KillGrace: s.cfg.KillGrace,
			Hosts: s.hosts, SSH: s.cfg.SSH, MPI: s.cfg.MPI, SlurmBin: s.cfg.SlurmBin, Path: s.cfg.RunPath,
			MarkDown: s.markDown}, nil
	case "reaper":
		n := s.notifier
		if n == nil && s.cfg.Mail.Host != "" {
			m, err := notify.OpenMailer(s.cfg.Mail, s.sp.Path(spool.DirDB), s.log.With("daemon", "reaper"))
			if err != nil {
				return nil, err
			}
			s.closers = append(s.closers, m.Close)
			n = m
		}
		if n == nil {
			log := s.log.With("daemon", "reaper")
			n = notify.NotifierFunc(func(_ context.Context, r notify.Report) error {
				log.Info("report", "jid", r.JID, "to", r.To, "subject", r.Subject) // smtp.host is not set
				return nil
			})
		}
		return &daemons.Reaper{Env: s.env(name), Notifier: n, Retention: s.cfg.Retention}, nil
	case "stats":
		st, err := hoststat.OpenStore(s.statsDir(), 0)
		if err != nil {
			return nil, err
		}
		s.closers = append(s.closers, st.Close)
		return &daemons.Stats{Env: s.env(name), Hosts: s.hosts, Interval: s.cfg.StatsEvery, Store: st, SSH: s.cfg.SSH, SlurmBin: s.cfg.SlurmBin}, nil
	}
	return nil, fmt.Errorf("unknown daemon %q (known: %s)", name, strings.Join(daemonNames, ", "))
}

func (s *system) statsDir() string { return s.sp.Path(spool.DirDB) }

// markDown records a host the run daemon could not reach (db/health/), so
// that sched places nothing on it until the stats daemon finds it answers.
func (s *system) markDown(host, reason string) {
	if err := hoststat.MarkDown(s.statsDir(), host, reason, time.Now()); err != nil {
		s.log.Error("cannot record host down", "daemon", "run", "host", host, "err", err)
	}
}

// sched builds the scheduler: models, the evaluator with its persistent
// cache in db/, the predictor and the policy with a logged seed.
func (s *system) sched(ctx context.Context) (*daemons.Sched, error) {
	hw, err := s.cfg.hardware()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(s.cfg.ModelsDir); errors.Is(err, fs.ErrNotExist) {
		// A spool made by hand, or by another tool: give it the examples'
		// models, as `msched up` does, rather than refuse to schedule.
		if err := installModels(s.cfg.ModelsDir); err != nil {
			return nil, err
		}
	}
	lib, err := models.LoadDir(s.cfg.ModelsDir, hw)
	if err != nil {
		return nil, err
	}
	// Closers run last-first: the evaluator stops asking before the
	// library stops its external model processes.
	s.closers = append(s.closers, lib.Close)
	// A second sched would wait for the evaluator's database and fail with
	// "timeout"; say what is wrong instead (Sched.Run takes the lock for good).
	release, err := s.sp.LockDaemon("sched")
	if err != nil {
		return nil, err
	}
	release()
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ev, err := evaluator.Open(octx, evaluator.Options{
		Models: lib, Hardware: hw, Path: filepath.Join(s.sp.Path(spool.DirDB), "evaluations.db"),
	})
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, ev.Close)
	seed := s.cfg.Seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	log := s.log.With("daemon", "sched")
	pred, err := s.predictor(ctx, policy.NewModelPredictor(ev, hw, log), log)
	if err != nil {
		return nil, err
	}
	pol, err := policy.New(s.cfg.Policy, policy.Options{
		Predictor:   pred,
		Seed:        seed,
		Log:         log,
		Population:  s.cfg.Population,
		Window:      s.cfg.Window,
		MaxJumps:    new(s.cfg.MaxJumps),
		Fit:         s.cfg.Fit,
		TimeBudget:  s.cfg.TimeBudget,
		Stall:       s.cfg.Stall,
		LocalSearch: s.cfg.LocalSearch,
		Plan:        s.cfg.Plan,
	})
	if err != nil {
		return nil, err
	}
	log.Info("policy", "name", s.cfg.Policy, "seed", seed, "models", lib.Names(), "time_budget", s.cfg.TimeBudget, "stall", s.cfg.Stall)
	// The evaluator's counters and the GA's generations, for the status
	// page's /metrics (which may run in another process, or as CGI).
	var gens func() (int64, bool)
	if g, ok := pol.(interface{ Generations() int64 }); ok {
		gens = func() (int64, bool) { return g.Generations(), true }
	}
	go daemons.PublishSchedStats(ctx, s.sp, 5*time.Second, ev, gens)
	return &daemons.Sched{
		Env: s.env("sched"), Hosts: s.hosts, Policy: pol, PolicyName: s.cfg.Policy,
		StatsDir: s.statsDir(), Speeds: speeds(hw, s.hosts),
	}, nil
}

// run runs the named daemons until ctx is done or one of them fails; a
// failure stops the others. It returns after every daemon has returned.
func (s *system) run(ctx context.Context, names []string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		name string
		err  error
	}
	var ds []interface{ Run(context.Context) error }
	s.hearts = map[string]*spool.Heart{}
	for _, n := range names {
		d := spool.Daemon(n)
		s.hearts[n] = s.sp.As(d).Heart(d)
	}
	for _, n := range names {
		d, err := s.daemon(ctx, n)
		if err != nil {
			return fmt.Errorf("daemon %s: %w", n, err)
		}
		ds = append(ds, d)
	}
	done := make(chan result, len(ds))
	for i, d := range ds {
		go func() {
			// The heartbeat lives as long as the daemon's Run: a clean
			// stop (ctx cancelled) writes "stopped"; a daemon that fails
			// leaves its last beat, which goes stale.
			hctx, stop := context.WithCancel(context.Background())
			beat := make(chan struct{})
			log := s.log.With("daemon", names[i])
			go func() {
				s.hearts[names[i]].Run(hctx, func(err error) { log.Warn("heartbeat not written", "err", err) })
				close(beat)
			}()
			err := d.Run(ctx)
			stop()
			<-beat
			if err == nil && ctx.Err() != nil {
				if err := s.hearts[names[i]].Stop(); err != nil {
					log.Warn("heartbeat not written", "err", err)
				}
			}
			done <- result{names[i], err}
		}()
	}
	var errs []error
	for range ds {
		r := <-done
		if r.err != nil {
			errs = append(errs, fmt.Errorf("daemon %s: %w", r.name, r.err))
			cancel()
		}
	}
	return errors.Join(errs...)
}

// installModels creates dir with the examples' model files.
func installModels(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Model files, and the programs of external models beside them.
	for _, pat := range []struct {
		glob string
		mode os.FileMode
	}{{"models/*.yaml", 0o644}, {"models/*.sh", 0o755}} {
		files, err := fs.Glob(examples.Models, pat.glob)
		if err != nil {
			return err
		}
		for _, f := range files {
			b, err := fs.ReadFile(examples.Models, f)
			if err != nil {
				return err
			}
			if err := spool.WriteAtomic(dir, filepath.Base(f), b); err != nil {
				return err
			}
			if err := os.Chmod(filepath.Join(dir, filepath.Base(f)), pat.mode); err != nil {
				return err
			}
		}
	}
	return nil
}

// daemonGCPercent is the GOGC of processes that run daemons. Their live heap
// is small (job files in flight, the GA's population, caches) and they
// allocate steadily (YAML), so Go's default of 100 collects many times a
// second under load: at 400 the collector (background marking and assists)
// fell from 4.5 % to 1.2 % of the daemons' CPU in a 2000-job burst. A GOGC
// in the environment wins.
const daemonGCPercent = 400

func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(daemonGCPercent)
	}
}

// speeds maps the architectures of hosts to the hardware database's
// speeds (architectures it does not know are left out).
func speeds(hw *models.Hardware, hosts []hoststat.Host) map[string]float64 {
	out := map[string]float64{}
	for _, h := range hosts {
		if a, err := hw.Lookup(h.Arch); err == nil {
			out[h.Arch] = a.Speed
		}
	}
	return out
}
