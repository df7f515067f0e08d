package daemons

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"msched/policy"
	"msched/spool"
)

// A start with nothing waiting is one cycle: the schedule is published
// once. sched used to cycle before the watcher's first wake-up and again at
// it, publishing twice within a millisecond, which made
// TestSched_IdleReplanTicksDoNothing fail when it read the schedule
// between the two.
func TestSched_OnePublicationAtStart(t *testing.T) {
	sp := schedSpool(t, 0, 1)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(sp.Path(spool.DirDB)); err != nil {
		t.Fatal(err)
	}
	pol, _ := policy.New("fifo", policy.Options{})
	d := &Sched{Env: Env{Spool: sp}, Hosts: localHosts(2), Policy: pol, Replan: 10 * time.Millisecond}
	stop := startDaemon(t, d.Run)
	defer stop()
	n := 0
	var quiet <-chan time.Time // from the first publication on
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-w.Events:
			if filepath.Base(ev.Name) == spool.ScheduleFile && ev.Has(fsnotify.Create) {
				n++
				if quiet == nil {
					quiet = time.After(500 * time.Millisecond)
				}
			}
			continue
		case err := <-w.Errors:
			t.Fatal(err)
		case <-deadline:
			t.Fatal("no schedule published within 30 s")
		case <-quiet:
		}
		break
	}
	if n != 1 {
		t.Fatalf("the schedule was published %d times at a start with nothing waiting, want 1", n)
	}
}
