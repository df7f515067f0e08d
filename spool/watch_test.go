package spool

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchFor starts a watcher and, at cleanup, stops it and waits for its
// goroutine to finish (so a test's newWatcher replacement cannot race).
func watchFor(t *testing.T, s *Spool, rescan time.Duration) <-chan struct{} {
	ctx, cancel := context.WithCancel(context.Background())
	ch := s.Watch(ctx, []State{Queued}, rescan)
	t.Cleanup(func() {
		cancel()
		for range ch {
		}
	})
	return ch
}

// waitWake waits, with a deadline generous for a loaded machine, for a
// wake-up.
func waitWake(t *testing.T, ch <-chan struct{}, why string) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatalf("%s: channel closed", why)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no wake-up within 20s", why)
	}
}

// quiet reports whether no wake-up arrives within d.
func quiet(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return false
	case <-time.After(d):
		return true
	}
}

func TestWatch_WakesOnNewFile(t *testing.T) {
	s := newSpool(t)
	ch := watchFor(t, s, time.Hour)
	waitWake(t, ch, "initial scan")
	if !quiet(ch, 100*time.Millisecond) {
		t.Fatal("woke with nothing to do")
	}
	// Dot-files (staging) and other directories do not wake.
	os.WriteFile(filepath.Join(s.Dir(Queued), ".staging"), nil, 0o644)
	os.WriteFile(filepath.Join(s.Dir(Running), "J000001"), nil, 0o644)
	if !quiet(ch, 200*time.Millisecond) {
		t.Error("woke for a dot-file or an unwatched directory")
	}
	writeJob(t, s, Queued, &Job{JID: "J000002", Command: []string{"x"}})
	waitWake(t, ch, "job renamed into queued/")
	for !quiet(ch, 100*time.Millisecond) { // the write may have woken twice
	}
	if err := s.RequestCancel("J000002"); err != nil {
		t.Fatal(err)
	}
	waitWake(t, ch, "control request")
}

// A burst of events while nobody reads the channel is one pending wake-up:
// the watcher does not queue one per event. Each file is at least two
// events (create, write), and fsnotify delivers them on its own goroutine:
// draining the channel while that goroutine is still at work lets a
// wake-up through per drain (67 for 200 files were seen under CI's load),
// which measures the machine, not coalescing. So the test reads nothing
// until the watcher has taken every event of the burst: a dot-file made
// after it, whose event (ignored) the watcher takes only after every
// earlier one's, as the test sees through the watcher's Events channel.
// Coalesced, the burst is then one wake-up (two if the watcher had to be
// made again, which wakes too); without coalescing there would be one or
// more per file, n or more.
func TestWatch_CoalescesBursts(t *testing.T) {
	const settled = ".settled"
	taken := takenEvents(t)
	s := newSpool(t)
	ch := watchFor(t, s, time.Hour)
	waitWake(t, ch, "initial scan")
	const n = 200
	for i := 1; i <= n; i++ {
		os.WriteFile(filepath.Join(s.Dir(Queued), FormatJID(int64(i))), nil, 0o644)
	}
	os.WriteFile(filepath.Join(s.Dir(Queued), settled), nil, 0o644)
	deadline := time.Now().Add(20 * time.Second)
	for !taken(settled) {
		if time.Now().After(deadline) {
			t.Fatalf("the watcher did not take the event of %s, made after %d files, within 20s", settled, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	got := 0
	for !quiet(ch, 300*time.Millisecond) {
		got++
	}
	if got < 1 || got > 3 {
		t.Errorf("%d files gave %d wake-ups, want 1 to 3", n, got)
	}
}

// takenEvents puts itself, for one test, between each new watcher and its
// reader (watch's run): it passes every event on and reports whether an
// event for a file of a given base name has been taken by the reader, and
// so every event before it too (the channel is unbuffered, and the reader
// takes the next event only after dealing with the last).
func takenEvents(t *testing.T) (taken func(base string) bool) {
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
		wg   sync.WaitGroup
	)
	quit := make(chan struct{})
	orig := newWatcher
	newWatcher = func() (*fsnotify.Watcher, error) {
		w, err := orig()
		if err != nil {
			return w, err
		}
		in, out := w.Events, make(chan fsnotify.Event)
		w.Events = out
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(out)
			for ev := range in { // closed when the watcher is
				select {
				case out <- ev:
				case <-quit:
					return
				}
				mu.Lock()
				seen[filepath.Base(ev.Name)] = true
				mu.Unlock()
			}
		}()
		return w, nil
	}
	// Registered before watchFor's cleanup, so run after it: watch's
	// goroutine is done.
	t.Cleanup(func() {
		newWatcher = orig
		close(quit)
		wg.Wait()
	})
	return func(base string) bool {
		mu.Lock()
		defer mu.Unlock()
		return seen[base]
	}
}

func TestWatch_RescanTick(t *testing.T) {
	s := newSpool(t)
	ch := watchFor(t, s, 30*time.Millisecond)
	for i := 0; i < 4; i++ { // initial, then ticks with no file activity at all
		waitWake(t, ch, fmt.Sprintf("wake-up %d", i))
	}
}

// recordWatchers replaces newWatcher for one test and returns every watcher made.
func recordWatchers(t *testing.T) func() []*fsnotify.Watcher {
	var mu sync.Mutex
	var ws []*fsnotify.Watcher
	orig := newWatcher
	newWatcher = func() (*fsnotify.Watcher, error) {
		w, err := orig()
		mu.Lock()
		ws = append(ws, w)
		mu.Unlock()
		return w, err
	}
	t.Cleanup(func() { newWatcher = orig })
	return func() []*fsnotify.Watcher {
		mu.Lock()
		defer mu.Unlock()
		return append([]*fsnotify.Watcher(nil), ws...)
	}
}

func TestWatch_OverflowRescansAndRecreates(t *testing.T) {
	watchers := recordWatchers(t)
	s := newSpool(t)
	ch := watchFor(t, s, time.Hour)
	waitWake(t, ch, "initial scan")
	if len(watchers()) != 1 {
		t.Fatalf("%d watchers", len(watchers()))
	}
	if !quiet(ch, 100*time.Millisecond) {
		t.Fatal("woke with nothing to do")
	}
	watchers()[0].Errors <- fsnotify.ErrEventOverflow
	waitWake(t, ch, "after overflow")
	if len(watchers()) != 2 { // the wake-up comes after the new watcher is in place
		t.Fatalf("watcher not recreated after overflow: %d", len(watchers()))
	}
	// Events still arrive through the new watcher.
	writeJob(t, s, Queued, &Job{JID: "J000005", Command: []string{"x"}})
	waitWake(t, ch, "file after overflow")
}

func TestWatch_StopsWithContext(t *testing.T) {
	s := newSpool(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := s.Watch(ctx, []State{Queued}, 10*time.Millisecond)
	waitWake(t, ch, "initial")
	cancel()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("channel not closed after cancel")
		}
	}
}

func TestWatch_KeepsScanningWhenWatcherFails(t *testing.T) {
	s := newSpool(t)
	orig := newWatcher
	newWatcher = func() (*fsnotify.Watcher, error) { return nil, fmt.Errorf("no inotify for you") }
	t.Cleanup(func() { newWatcher = orig })
	ch := watchFor(t, s, 20*time.Millisecond)
	for i := 0; i < 3; i++ {
		waitWake(t, ch, fmt.Sprintf("tick %d without a watcher", i))
	}
}
