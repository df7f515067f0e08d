package daemons

import (
	"context"
	"fmt"
	"time"

	"msched/hoststat"
	"msched/spool"
)

// DefaultStatsInterval is how often the stats daemon samples its hosts: the
// MS system's five minutes, often enough for load averages that are
// themselves 1, 5 and 15 minute means.
const DefaultStatsInterval = 5 * time.Minute

// Stats is the stats daemon: every Interval, and once at start, it records
// the uptime, load average and user idle time of each host into Store.
// Local hosts are sampled from /proc and utmp; every local host (with no
// hosts file, each CPU of this machine is one) gets the same sample of this
// machine. Remote hosts are not sampled yet: that comes with the remote
// launchers, and until then they are logged once and skipped.
type Stats struct {
	Env
	Hosts    []hoststat.Host
	Interval time.Duration   // 0: DefaultStatsInterval
	Store    *hoststat.Store // nil: opened in spool/db and closed on return
}

// Run samples until ctx is done.
//
// Recovery at start: none is needed. The stats daemon owns no spool
// directory and moves no job; the store cuts a torn last line itself
// (hoststat.OpenStore). It samples at once rather than after the first
// interval, so a restarted scheduler has fresh loads without waiting.
func (d *Stats) Run(ctx context.Context) error {
	log := d.logger("stats")
	release, err := d.Spool.LockDaemon("stats")
	if err != nil {
		return err
	}
	defer release()
	store := d.Store
	if store == nil {
		var err error
		if store, err = hoststat.OpenStore(d.Spool.Path(spool.DirDB), 0); err != nil {
			return fmt.Errorf("daemons: stats: %w", err)
		}
		defer store.Close()
	}
	every := d.Interval
	if every <= 0 {
		every = DefaultStatsInterval
	}
	var local []string
	for _, h := range d.Hosts {
		if h.IsLocal() {
			local = append(local, h.Name)
		} else {
			log.Warn("remote host statistics are not collected yet; skipping host", "host", h.Name, "address", h.Address)
		}
	}
	if len(local) == 0 {
		log.Warn("no local hosts to sample")
	}
	sample := func() {
		if len(local) == 0 {
			return
		}
		st, err := hoststat.Local()
		if err != nil {
			log.Error("cannot sample this machine", "err", err)
			return
		}
		for _, h := range local {
			if err := store.Record(h, st); err != nil {
				log.Error("cannot record sample", "host", h, "err", err)
			}
		}
	}
	sample()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			sample()
		}
	}
}
