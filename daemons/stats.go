package daemons

import (
	"context"
	"fmt"
	"os/user"
	"slices"
	"sync"
	"time"

	"msched/hoststat"
	"msched/launch"
	"msched/spool"
)

// DefaultStatsInterval is how often the stats daemon samples its hosts: the
// MS system's five minutes, often enough for load averages that are
// themselves 1, 5 and 15 minute means.
const DefaultStatsInterval = 5 * time.Minute

// DefaultProbeTimeout bounds one probe of a host or cluster: an ssh login
// over a slow link takes a few seconds, and a host that has not answered in
// ten is as good as down for a job that would start there now. (A Slurm
// controller that does not answer makes scontrol wait its MessageTimeout,
// 10 s by default: it is then killed here, and the cluster is down.)
const DefaultProbeTimeout = 10 * time.Second

// downRetry is how often, while any host is down, the stats daemon probes
// the down ones again (those it found down and those the run daemon marked
// down when a job could not reach them): a host that comes back is used
// again within seconds, not after a whole Interval. A probe of a down host
// costs one ssh connection attempt or one scontrol ping.
const downRetry = 5 * time.Second

// maxProbes bounds the probes that run at once: each is a process (ssh or
// scontrol) here and a login on the host; eight keep a round over a hundred
// hosts within a few probe timeouts even when many do not answer.
const maxProbes = 8

// Stats is the stats daemon: every Interval, and once at start, it probes
// each host, records its uptime, load average and user idle time into
// Store, and records in db/health/ (hoststat.MarkDown, MarkUp) whether it
// answered. While any host is down it probes the down ones every downRetry.
//
// Local hosts are sampled from /proc and utmp; every local host (with no
// hosts file, each CPU of this machine is one) gets the same sample of this
// machine, and they are never marked down: this machine is where msched
// runs. An ssh host is sampled by one ssh login running
// hoststat.RemoteCommand, with the jobs' connection settings (SSH); hosts
// with the same address share the login and its sample. A failed login (ssh
// exits 255, or no answer within Timeout) marks the address's hosts down
// with ssh's message, except a login refused to this daemon's user (the
// host answered; the jobs log in as theirs): no sample then, and a
// warning. A login that runs marks them up. A Slurm cluster (the
// hosts with one slurm:// address) is probed through its controller:
// `scontrol ping`, then `scontrol show node -o` for the nodes' loads; a
// controller that does not answer marks every host of the cluster down, and
// a host named as a node that Slurm has taken out of service (down,
// drained, not responding) is down too.
type Stats struct {
	Env
	Hosts    []hoststat.Host
	Interval time.Duration   // 0: DefaultStatsInterval
	Store    *hoststat.Store // nil: opened in spool/db and closed on return
	// SSH is how ssh hosts are reached: the same settings as jobs'. The
	// login user is the address's, else this daemon's own.
	SSH launch.SSHConfig
	// SlurmBin is the directory holding scontrol; "": the PATH.
	SlurmBin string
	// Timeout bounds each probe; 0: DefaultProbeTimeout.
	Timeout time.Duration
	// Retry is how often down hosts are probed again; 0: downRetry.
	Retry time.Duration
}

// Run samples until ctx is done.
//
// Recovery at start: none is needed. The stats daemon owns no spool
// directory and moves no job; the store cuts a torn last line itself
// (hoststat.OpenStore), and db/health/ is whole by construction (atomic
// writes). It probes at once rather than after the first interval, so a
// restarted scheduler has fresh loads, and hosts left marked down are
// probed again, without waiting.
func (d *Stats) Run(ctx context.Context) error {
	log := d.logger("stats")
	release, err := d.Spool.LockDaemon("stats")
	if err != nil {
		return err
	}
	defer release()
	d.Heart.Idle() // it runs: its heartbeat may begin (probe rounds are not scans: a slow host is no hang)
	store := d.Store
	if store == nil {
		var err error
		if store, err = hoststat.OpenStore(d.Spool.Path(spool.DirDB), 0); err != nil {
			return fmt.Errorf("daemons: stats: %w", err)
		}
		defer store.Close()
	}
	every, retry := d.Interval, d.Retry
	if every <= 0 {
		every = DefaultStatsInterval
	}
	if retry <= 0 {
		retry = downRetry
	}
	targets, err := probeTargets(d.Hosts)
	if err != nil {
		return fmt.Errorf("daemons: stats: %w", err)
	}
	p := &prober{log: log, store: store, db: d.Spool.Path(spool.DirDB), ssh: d.SSH, slurmBin: d.SlurmBin, timeout: d.Timeout}
	if p.timeout <= 0 {
		p.timeout = DefaultProbeTimeout
	}
	if u, err := user.Current(); err == nil {
		p.user = u.Username
	}
	if len(targets) == 0 {
		log.Warn("no hosts to sample")
	}
	p.round(ctx, targets)
	full := time.NewTicker(every)
	defer full.Stop()
	again := time.NewTicker(retry)
	defer again.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-full.C:
			p.round(ctx, targets)
		case <-again.C:
			// One ReadDir of db/health/ while every host is up.
			down, err := hoststat.Down(p.db)
			if err != nil {
				log.Warn("cannot read which hosts are down", "err", err)
				continue
			}
			var some []*probeTarget
			for _, t := range targets {
				if slices.ContainsFunc(t.hosts, func(h string) bool { _, ok := down[h]; return ok }) {
					some = append(some, t)
				}
			}
			if len(some) > 0 {
				p.round(ctx, some)
			}
		}
	}
}

// round probes targets, at most maxProbes at once, and records what each
// probe found. It returns when every probe has.
func (p *prober) round(ctx context.Context, targets []*probeTarget) {
	down, err := hoststat.Down(p.db)
	if err != nil {
		p.log.Warn("cannot read which hosts are down", "err", err)
		down = map[string]hoststat.DownInfo{}
	}
	sem := make(chan struct{}, maxProbes)
	var wg sync.WaitGroup
	for _, t := range targets {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			r := p.probe(ctx, t)
			if ctx.Err() != nil {
				return // stopped: a probe cut short says nothing of the host
			}
			p.record(t, r, down)
		}()
	}
	wg.Wait()
}
