package spool

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watch wakes a daemon when its directories may have changed. The channel
// receives:
//
//   - once at the start, as soon as the watches are in place, so the
//     daemon scans before any event and no file slips between the two;
//   - after fsnotify events in the given states' directories or in control/
//     (always watched: any daemon may be the addressee of a request),
//     dot-files (staging) excepted;
//   - every rescan interval, so a lost event delays work by at most that;
//   - at once after an event overflow (fsnotify.ErrEventOverflow) or any
//     watcher error, when the watcher has been recreated. If it cannot be
//     (inotify limits), the rescan tick goes on and creation is retried
//     every second.
//
// A wake-up means "scan your directories", never "this file changed": the
// channel has a buffer of one and wake-ups coalesce, so a burst of a
// thousand files costs one or two scans. The channel is closed when ctx is
// done. rescan ≤ 0 means one minute.
func (s *Spool) Watch(ctx context.Context, states []State, rescan time.Duration) <-chan struct{} {
	dirs := []string{s.Path(DirControl)}
	for _, st := range states {
		dirs = append(dirs, s.Dir(st))
	}
	if rescan <= 0 {
		rescan = time.Minute
	}
	ch := make(chan struct{}, 1)
	go watch(ctx, dirs, rescan, ch)
	return ch
}

// newWatcher is replaced in tests to get hold of the watcher.
var newWatcher = fsnotify.NewWatcher

// watcherRetry is the pause before recreating a watcher that failed to start.
const watcherRetry = time.Second

func watch(ctx context.Context, dirs []string, rescan time.Duration, ch chan struct{}) {
	defer close(ch)
	wake := func() {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is already pending; it covers this one
		}
	}
	tick := time.NewTicker(rescan)
	defer tick.Stop()
	failing := false
	for ctx.Err() == nil {
		w, err := start(dirs)
		if err != nil {
			// No events until the watcher works again; the ticker still
			// scans. Wake once so the first scan is not delayed.
			if !failing {
				wake()
			}
			failing = true
			select {
			case <-ctx.Done():
			case <-tick.C:
				wake()
			case <-time.After(watcherRetry):
			}
			continue
		}
		failing = false
		// The watcher is in place before the wake-up, so a file that
		// arrives during the scan it triggers still gives an event.
		wake()
		run(ctx, w, tick.C, wake)
		w.Close()
	}
}

func start(dirs []string) (*fsnotify.Watcher, error) {
	w, err := newWatcher()
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if err := w.Add(d); err != nil {
			w.Close()
			return nil, err
		}
	}
	return w, nil
}

// run serves one watcher until ctx is done or the watcher reports an error
// (including an overflow) or closes.
func run(ctx context.Context, w *fsnotify.Watcher, tick <-chan time.Time, wake func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			wake()
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if ev.Op == fsnotify.Chmod || filepath.Base(ev.Name)[0] == '.' {
				continue
			}
			wake()
		case <-w.Errors:
			// fsnotify.ErrEventOverflow means events were dropped; any
			// other error may mean the same. Either way: rescan, recreate.
			return
		}
	}
}
