package spool

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNames_OldestFirstWithoutDotFiles(t *testing.T) {
	s := newSpool(t)
	var want []string
	for i := 0; i < 12; i++ { // J…10 and up sort after J…9 by number, as by name
		want = append(want, place(t, s, Queued).JID)
	}
	os.WriteFile(filepath.Join(s.Dir(Queued), ".J000001.tmp123"), nil, 0o644)
	os.Mkdir(filepath.Join(s.Dir(Queued), "J999999"), 0o755)
	got, err := s.Names(Queued)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
	es, _ := s.List(Queued)
	for i, e := range es {
		if e.Name != got[i] {
			t.Fatalf("List and Names disagree at %d: %s, %s", i, e.Name, got[i])
		}
	}
	// submitted/: JIDs (none here) first, then other names in byte order.
	for _, n := range []string{"b.yaml", "a.yaml"} {
		if _, err := s.Submit(n, []byte(validJob)); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.Names(Submitted); !slices.Equal(got, []string{"a.yaml", "b.yaml"}) {
		t.Errorf("submitted names %v", got)
	}
	if _, err := s.Names("nowhere"); err == nil {
		t.Error("unknown state accepted")
	}
}

func TestCache_ParsesEachVersionOnce(t *testing.T) {
	s := newSpool(t).As(Sched)
	c := s.NewCache()
	j := place(t, s, Queued)

	a, err := c.Read(Queued, j.JID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, j) {
		t.Fatalf("cached read differs from Spool.Read:\n%+v\n%+v", a, j)
	}
	key := cacheKey{Queued, j.JID}
	parsed := c.m[key].j
	// A copy: changing it (as sched does before a Move) does not reach the cache.
	a.Reason, a.Schedule = "changed", &Schedule{Hosts: []string{"h"}}
	a.History[0].Note = "changed"
	b, _ := c.Read(Queued, j.JID)
	if b.Reason != "" || b.Schedule != nil || b.History[0].Note != "" {
		t.Errorf("a change to one copy shows in the next read: %+v", b)
	}
	if a == b {
		t.Error("two reads returned the same pointer")
	}
	if c.m[key].j != parsed {
		t.Error("the same bytes were parsed again")
	}

	// A new version of the same size, written within the same clock tick,
	// maybe into a reused inode: the bytes decide.
	j2 := j.Clone()
	j2.Name = j.Name[:len(j.Name)-1] + "X"
	writeJob(t, s, Queued, j2)
	got, err := c.Read(Queued, j.JID)
	if err != nil || got.Name != j2.Name {
		t.Errorf("after a rewrite: name %q, %v; want %q", got.Name, err, j2.Name)
	}

	// Moved away: not found, and forgotten.
	if err := s.Move(got, Queued, Scheduling, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(Queued, j.JID); !errors.Is(err, ErrNotFound) {
		t.Errorf("read after the move: %v, want ErrNotFound", err)
	}
	if n := len(c.m); n != 0 {
		t.Errorf("%d entries after the file left", n)
	}
	if got, err := c.Read(Scheduling, j.JID); err != nil || got.State() != Scheduling || len(got.History) != len(j.History)+1 {
		t.Errorf("read in the new state: %v, %v", got, err)
	}

	// A file that no longer parses is an error every time, not a stale copy.
	os.WriteFile(filepath.Join(s.Dir(Scheduling), j.JID), []byte("command: [\n"), 0o644)
	for i := 0; i < 2; i++ {
		var pe *ParseError
		if _, err := c.Read(Scheduling, j.JID); !errors.As(err, &pe) {
			t.Errorf("read %d of a damaged file: %v, want a ParseError", i, err)
		}
	}
}

func TestCache_KeepDropsWhatLeft(t *testing.T) {
	s := newSpool(t)
	c := s.NewCache()
	a, b := place(t, s, Queued), place(t, s, Queued)
	r := place(t, s, Running)
	for _, x := range []struct {
		st  State
		jid string
	}{{Queued, a.JID}, {Queued, b.JID}, {Running, r.JID}} {
		if _, err := c.Read(x.st, x.jid); err != nil {
			t.Fatal(err)
		}
	}
	c.Keep(Queued, []string{b.JID})
	want := map[cacheKey]bool{{Queued, b.JID}: true, {Running, r.JID}: true}
	if len(c.m) != len(want) {
		t.Errorf("after Keep: %d entries, want 2 (b and the running job)", len(c.m))
	}
	for k := range c.m {
		if !want[k] {
			t.Errorf("after Keep: %v still cached", k)
		}
	}
}

func TestClone_IsDeep(t *testing.T) {
	es := 3
	j := &Job{Name: "x", Command: []string{"a"}, Hosts: &Hosts{Count: 2},
		Model:    &Model{Name: "m", Params: map[string]float64{"N": 1}},
		History:  []Event{{State: Queued, At: time.Unix(1, 0)}},
		Schedule: &Schedule{Hosts: []string{"h1"}}, Run: &RunInfo{ExitStatus: &es},
		state: Queued, file: "J000001"}
	c := j.Clone()
	if !reflect.DeepEqual(c, j) {
		t.Fatalf("clone differs: %+v", c)
	}
	c.Command[0], c.Hosts.Count, c.Model.Params["N"], c.History[0].Note = "b", 3, 2, "n"
	c.Schedule.Hosts[0], *c.Run.ExitStatus = "h2", 4
	if j.Command[0] != "a" || j.Hosts.Count != 2 || j.Model.Params["N"] != 1 || j.History[0].Note != "" ||
		j.Schedule.Hosts[0] != "h1" || *j.Run.ExitStatus != 3 {
		t.Errorf("changing the clone changed the original: %+v", j)
	}
}

func TestLockDaemon_OneOfEachKind(t *testing.T) {
	s := newSpool(t)
	defer func(w time.Duration) { lockWait = w }(lockWait)
	lockWait = 100 * time.Millisecond
	release, err := s.LockDaemon("run")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.LockDaemon("run"); !errors.Is(err, ErrDaemonRunning) || !strings.Contains(err.Error(), "pid ") {
		t.Errorf("second run daemon: %v, want ErrDaemonRunning naming the holder", err)
	}
	other, err := s.LockDaemon("sched")
	if err != nil {
		t.Errorf("a sched beside the run daemon: %v", err)
	} else {
		other()
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	again, err := s.LockDaemon("run")
	if err != nil {
		t.Errorf("after release: %v", err)
	} else {
		again()
	}
	if _, err := s.LockDaemon("../x"); err == nil {
		t.Error("bad name accepted")
	}
}

// A daemon restarted in a process that keeps forking (the run daemon
// starting jobs beside it) gets the lock its predecessor released, although
// each fork's child holds a copy of the lock's descriptor until it execs.
func TestLockDaemon_RestartBesideForks(t *testing.T) {
	s := newSpool(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				exec.Command("/bin/true").Run()
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	for i := range 300 {
		release, err := s.LockDaemon("init")
		if err != nil {
			t.Fatalf("restart %d: %v", i, err)
		}
		if err := release(); err != nil {
			t.Fatal(err)
		}
	}
}

// Each daemon stages its writes in a directory of its own, which Open makes
// in spools created before there were any, and leaves nothing there.
func TestStaging_PerDaemon(t *testing.T) {
	s := newSpool(t)
	for _, d := range stagingDaemons {
		os.Remove(filepath.Join(s.tmp, string(d)))
	}
	s, err := Open(s.Root())
	if err != nil {
		t.Fatal(err)
	}
	sched := s.As(Sched)
	if sched.stage != filepath.Join(s.tmp, "sched") || s.stage != s.tmp || s.As(Submitter).stage != s.tmp {
		t.Errorf("staging: sched %s, plain %s", sched.stage, s.stage)
	}
	if fi, err := os.Stat(sched.stage); err != nil || !fi.IsDir() {
		t.Fatalf("As(Sched) did not make %s: %v", sched.stage, err)
	}
	if _, err := os.Stat(filepath.Join(s.tmp, "init")); !os.IsNotExist(err) {
		t.Errorf("Open made init's staging directory (%v): readers need not write", err)
	}
	j := place(t, s, Queued)
	if err := sched.Move(j, Queued, Scheduling, ""); err != nil {
		t.Fatal(err)
	}
	b := sched.Batch()
	if err := b.WriteFile(s.Path(DirDB), "x", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if left := junk(t, s); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// ReadOwned trusts a cached file of a state the caller owns: a rewrite by
// someone else is not seen until the caller forgets the file (it forgets
// the files it moves), and a file not cached is read.
func TestCache_ReadOwnedUntilForgotten(t *testing.T) {
	s := newSpool(t).As(Sched)
	c := s.NewCache()
	j := place(t, s, Queued)
	if got, err := c.ReadOwned(Queued, j.JID); err != nil || got.Name != j.Name {
		t.Fatalf("first read: %v, %v", got, err)
	}
	j2 := j.Clone()
	j2.Name = j.Name + "-2"
	writeJob(t, s, Queued, j2)
	if got, _ := c.ReadOwned(Queued, j.JID); got.Name != j.Name {
		t.Errorf("owned read %q: it read the file again", got.Name)
	}
	if got, _ := c.Read(Queued, j.JID); got.Name != j2.Name {
		t.Errorf("plain read %q, want the new version %q", got.Name, j2.Name)
	}
	j3 := j.Clone()
	j3.Name = j.Name + "-3"
	writeJob(t, s, Queued, j3)
	c.Forget(Queued, j.JID)
	if got, _ := c.ReadOwned(Queued, j.JID); got.Name != j3.Name {
		t.Errorf("after Forget: %q, want %q", got.Name, j3.Name)
	}
}
