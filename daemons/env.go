package daemons

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"msched/atomicfile"
	"msched/spool"
)

// DefaultRescan is how often a daemon rescans its directories besides the
// fsnotify events: a lost event then delays a job by at most this long.
const DefaultRescan = 30 * time.Second

// Env is what every daemon needs: the spool, a logger and the rescan
// interval.
type Env struct {
	Spool  *spool.Spool  // the daemon uses Spool.As(<its spool.Daemon>) for writes
	Log    *slog.Logger  // nil: slog.Default()
	Rescan time.Duration // periodic rescan besides fsnotify; 0: DefaultRescan
	// Heart is told when the daemon scans and when it waits (nil: no
	// heartbeat), so that a daemon stuck in a scan goes stale.
	Heart *spool.Heart
}

func (e Env) logger(name string) *slog.Logger {
	l := e.Log
	if l == nil {
		l = slog.Default()
	}
	return l.With("daemon", name)
}

func (e Env) rescan() time.Duration {
	if e.Rescan > 0 {
		return e.Rescan
	}
	return DefaultRescan
}

// serve calls scan at once and then on every wake-up of the spool's
// watcher for states (and control/), or of extra (nil: none), until ctx is
// done: the one loop of init, run and the reaper. An error from scan is
// logged and the next wake-up tries again: scans are idempotent, and what
// failed for one job must not stop the others. A scan may ask to be called
// again at a time of its own (next; zero: no need), for what waits without
// a file event to wake it. A scan that failed for want of space
// (atomicfile.NoSpace) is tried again without waiting for a wake-up,
// atomicfile.NoSpaceWait apart: nothing in the spool may change to wake
// the daemon when space comes back, and the periodic rescan is late.
func (e Env) serve(ctx context.Context, log *slog.Logger, states []spool.State, extra <-chan struct{},
	scan func(context.Context) (next time.Time, err error)) {
	wake := e.Spool.Watch(ctx, states, e.rescan())
	timer := time.NewTimer(time.Hour)
	timer.Stop() // until a scan asks for a time
	defer timer.Stop()
	full := 0 // scans in a row that found no space
	for {
		select {
		case _, ok := <-wake:
			if !ok {
				return
			}
		case <-extra:
		case <-timer.C:
		case <-ctx.Done():
			return
		}
		if ctx.Err() != nil {
			return // select picks at random among what is ready
		}
		e.Heart.Busy()
		next, err := scan(ctx)
		e.Heart.Idle()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			log.Error("scan failed", "err", err)
		}
		if atomicfile.NoSpace(err) {
			next = earliest(next, time.Now().Add(atomicfile.NoSpaceWait(full)))
			full++
		} else {
			full = 0
		}
		timer.Stop()
		if !next.IsZero() {
			timer.Reset(max(time.Until(next), time.Millisecond))
		}
	}
}

// earliest is the earlier of two times, zero meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// noNext adapts a scan that never asks for a time of its own to serve.
func noNext(scan func(context.Context) error) func(context.Context) (time.Time, error) {
	return func(ctx context.Context) (time.Time, error) { return time.Time{}, scan(ctx) }
}

// moveWorkers bounds how many job files a daemon moves at once. Moves are
// fsync-bound, and a journalling file system commits concurrent fsyncs
// together (spool's BenchmarkMoveParallel: 0.44 ms a move with 6 workers
// against 0.98 ms one at a time), so a daemon that moves a batch of jobs
// does them concurrently.
const moveWorkers = 8

// each calls fn for every item, moveWorkers at a time, and joins the
// errors: one job's failure must not stop the others.
func each[T any](items []T, fn func(T) error) error {
	if len(items) == 1 {
		return fn(items[0])
	}
	var mu sync.Mutex
	var errs []error
	var g errgroup.Group
	g.SetLimit(moveWorkers)
	for _, it := range items {
		g.Go(func() error {
			if err := fn(it); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
	}
	g.Wait()
	return errors.Join(errs...)
}
