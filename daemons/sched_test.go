package daemons

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"msched/hoststat"
	"msched/policy"
	"msched/spool"
)

// schedSpool makes a spool with n jobs already in queued/, as init leaves
// them, each needing `need` hosts.
func schedSpool(t testing.TB, n, need int) *spool.Spool {
	t.Helper()
	sp := newTestSpool(t)
	in := sp.As(spool.Init)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("job%02d.yaml", i)
		body := fmt.Sprintf("name: j%d\ncommand: [\"true\"]\nhosts: {count: %d}\nwalltime: %ds\n", i, need, 10+i)
		if _, err := sp.Submit(name, []byte(body)); err != nil {
			t.Fatal(err)
		}
		c, err := in.Claim(name)
		if err != nil {
			t.Fatal(err)
		}
		j, err := c.Job()
		if err != nil {
			t.Fatal(err)
		}
		if err := in.Move(j, spool.Submitted, spool.Queued, "test"); err != nil {
			t.Fatal(err)
		}
	}
	return sp
}

func localHosts(n int) []hoststat.Host {
	hs := make([]hoststat.Host, n)
	for i := range hs {
		hs[i] = hoststat.Host{Name: fmt.Sprintf("h%d", i), Arch: "generic"}
	}
	return hs
}

// Sched places as many jobs as the hosts hold, each on distinct free hosts
// with its prediction, keeps the jobs the policy reads (a window of 4) in
// scheduling/, and publishes the schedule.
func TestSched_PlacesOnFreeHostsAndPublishes(t *testing.T) {
	for _, name := range []string{"ga-xms", "fifo"} {
		t.Run(name, func(t *testing.T) {
			sp := schedSpool(t, 6, 2)
			pol, err := policy.New(name, policy.Options{Seed: 1, Generations: 10, Window: 4})
			if err != nil {
				t.Fatal(err)
			}
			d := &Sched{Env: Env{Spool: sp}, Hosts: localHosts(4), Policy: pol, Replan: 50 * time.Millisecond}
			stop := startDaemon(t, d.Run)
			eventually(t, "two jobs runnable", func() bool { return jobsIn(t, sp, spool.Runnable) == 2 })
			// The 4 jobs left all fit the window of 4: published as planned
			// at once, and moved to scheduling/ once they have been in the
			// window for admitAfter.
			var pub spool.PublishedSchedule
			eventually(t, "2 running and the other 4 planned in the published schedule", func() bool {
				p, err := sp.ReadSchedule()
				if err != nil || p == nil {
					return false
				}
				pub = *p
				states := map[string]int{}
				for _, j := range pub.Jobs {
					states[j.State]++
				}
				return states["running"] == 2 && states["planned"] == 4
			})
			eventually(t, "the window in scheduling/", func() bool { return jobsIn(t, sp, spool.Scheduling) == 4 })
			if len(pub.Hosts) != 4 || jobsIn(t, sp, spool.Scheduling) != 4 || jobsIn(t, sp, spool.Queued) != 0 {
				t.Fatalf("published %d hosts, %d in scheduling, %d queued; want 4, 4, 0", len(pub.Hosts), jobsIn(t, sp, spool.Scheduling), jobsIn(t, sp, spool.Queued))
			}
			stop()
			es, _ := sp.List(spool.Runnable)
			used := map[string]bool{}
			for _, e := range es {
				j, err := sp.Read(spool.Runnable, e.Name)
				if err != nil {
					t.Fatal(err)
				}
				if j.Schedule == nil || len(j.Schedule.Hosts) != 2 || j.Schedule.PredictedSeconds <= 0 || j.Schedule.Policy != name {
					t.Fatalf("%s schedule = %+v", j.JID, j.Schedule)
				}
				for _, h := range j.Schedule.Hosts {
					if used[h] {
						t.Fatalf("host %s double-booked", h)
					}
					used[h] = true
				}
			}
		})
	}
}

// A restarted sched returns scheduling/ to queued/ before anything else,
// and a job that can never fit is rejected with its reason.
func TestSched_RecoveryAndImpossibleJobs(t *testing.T) {
	sp := schedSpool(t, 2, 8) // 8 hosts wanted, 4 exist
	s := sp.As(spool.Sched)
	es, _ := s.List(spool.Queued)
	j, _ := s.Read(spool.Queued, es[0].Name)
	crashed := j.JID
	if err := s.Move(j, spool.Queued, spool.Scheduling, "left by a crashed sched"); err != nil {
		t.Fatal(err)
	}
	pol, _ := policy.New("ga-xms", policy.Options{Seed: 1, Generations: 5})
	d := &Sched{Env: Env{Spool: sp}, Hosts: localHosts(4), Policy: pol}
	stop := startDaemon(t, d.Run)
	eventually(t, "both jobs rejected", func() bool { return jobsIn(t, sp, spool.Rejected) == 2 })
	stop()
	es, _ = sp.List(spool.Rejected)
	for _, e := range es {
		j, err := sp.Read(spool.Rejected, e.Name)
		if err != nil {
			t.Fatal(err)
		}
		if j.Reason != "needs at least 8 hosts, only 4 hosts exist" {
			t.Fatalf("reason = %q", j.Reason)
		}
		var sawRestart bool
		for _, ev := range j.History {
			sawRestart = sawRestart || ev.Note == "sched restarted: back to the queue"
		}
		if j.JID == crashed && !sawRestart {
			t.Fatalf("%s history %+v lacks the restart recovery", j.JID, j.History)
		}
	}
}

// With nothing waiting, the replan tick does not run a cycle: the schedule
// published by the first cycle is not rewritten until something happens.
func TestSched_IdleReplanTicksDoNothing(t *testing.T) {
	sp := schedSpool(t, 0, 1)
	pol, _ := policy.New("fifo", policy.Options{})
	d := &Sched{Env: Env{Spool: sp}, Hosts: localHosts(2), Policy: pol, Replan: 10 * time.Millisecond}
	stop := startDaemon(t, d.Run)
	path := filepath.Join(sp.Path(spool.DirDB), spool.ScheduleFile)
	var first []byte
	eventually(t, "the first cycle's schedule", func() bool {
		b, err := os.ReadFile(path)
		first = b
		return err == nil
	})
	if fi, err := os.Stat(path); err != nil {
		t.Fatal(err)
	} else if fi.Mode().Perm() != spool.FilePerm {
		t.Errorf("published schedule has mode %o, want %o (readable by the web page)", fi.Mode().Perm(), spool.FilePerm)
	}
	time.Sleep(200 * time.Millisecond) // twenty replan ticks
	again, err := os.ReadFile(path)
	stop()
	if err != nil || string(again) != string(first) {
		t.Fatalf("the schedule was republished with nothing waiting:\n%s\n---\n%s", first, again)
	}
}

// A job's hosts are busy while it is in running/, whatever files run
// keeps for it (a shepherd's result among them), and free once run has
// moved it to finished/: sched places the next job there then. The job
// stays in finished/, which is the reaper's: sched no longer moves it on.
func TestSched_HostsFreeWhenJobLeavesRunning(t *testing.T) {
	sp := schedSpool(t, 2, 2)
	pol, err := policy.New("fifo", policy.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := &Sched{Env: Env{Spool: sp}, Hosts: localHosts(2), Policy: pol, Replan: 50 * time.Millisecond}
	stop := startDaemon(t, d.Run)
	eventually(t, "the first job runnable", func() bool { return jobsIn(t, sp, spool.Runnable) == 1 })
	// What run does: runnable → running, the shepherd's result, then
	// running → finished.
	run := sp.As(spool.Run)
	es, _ := sp.List(spool.Runnable)
	j, err := run.Read(spool.Runnable, es[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Move(j, spool.Runnable, spool.Running, "test"); err != nil {
		t.Fatal(err)
	}
	result := resultPath(sp, j.JID)
	if err := os.MkdirAll(filepath.Dir(result), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(result, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // several replans: the second job must wait
	if n := jobsIn(t, sp, spool.Runnable); n != 0 {
		t.Fatalf("%d jobs placed while the hosts' job is in running/", n)
	}
	if err := run.Move(j, spool.Running, spool.Finished, "exit status 0"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the second job placed on the ended job's hosts", func() bool { return jobsIn(t, sp, spool.Runnable) == 1 })
	time.Sleep(100 * time.Millisecond)
	stop()
	if jobsIn(t, sp, spool.Finished) != 1 {
		t.Error("the ended job left finished/; only the reaper takes it from there")
	}
}

// spy records the longest queue its policy is shown.
type spy struct {
	policy.Policy
	mu      sync.Mutex
	longest int
}

func (s *spy) Plan(ctx context.Context, snap policy.Snapshot) (policy.Plan, error) {
	s.mu.Lock()
	s.longest = max(s.longest, len(snap.Queue))
	s.mu.Unlock()
	return s.Policy.Plan(ctx, snap)
}

// Sched hands the policy the head of the queue it reads (Policy.Reads), as
// the simulator does: easy the whole queue, fifo its window of 20. fifo's
// window waits in scheduling/, the others in queued/; easy's jobs all wait
// in queued/.
func TestSched_HandsThePolicyWhatItReads(t *testing.T) {
	for _, c := range []struct {
		name  string
		reads int // of the 30 jobs
	}{{"easy", 30}, {"fifo", policy.DefaultWindow}} {
		t.Run(c.name, func(t *testing.T) {
			sp := schedSpool(t, 30, 4) // one job at a time on 4 hosts
			pol, err := policy.New(c.name, policy.Options{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			s := &spy{Policy: pol}
			d := &Sched{Env: Env{Spool: sp}, Hosts: localHosts(4), Policy: s, PolicyName: c.name, Replan: 20 * time.Millisecond}
			stop := startDaemon(t, d.Run)
			// Once the first job has started, 29 wait: the policy reads
			// min(29, reads) of them, in scheduling/ once read for
			// admitAfter when it reads a window.
			want := min(29, c.reads)
			if c.reads > policy.DefaultWindow {
				want = 0
			}
			eventually(t, "the jobs read in scheduling/", func() bool {
				return jobsIn(t, sp, spool.Runnable) == 1 && jobsIn(t, sp, spool.Scheduling) == want
			})
			time.Sleep(2 * admitAfter) // long enough for a wrong admission to show
			stop()
			if n := jobsIn(t, sp, spool.Scheduling); n != want {
				t.Errorf("%d jobs in scheduling/, want %d", n, want)
			}
			if q := jobsIn(t, sp, spool.Queued); q != 29-want {
				t.Errorf("%d jobs in queued/, want %d", q, 29-want)
			}
			if s.longest != c.reads {
				t.Errorf("the policy was shown up to %d waiting jobs, want %d", s.longest, c.reads)
			}
		})
	}
}

// One cycle over a queue of 2,000 waiting jobs, all read by the policy
// (easy; they stay in queued/), once each file has been parsed: a cycle
// lists the directory and reads no file (sched owns queued/:
// Cache.ReadOwned).
//
//	go test -run XXX -bench CycleWholeQueue ./daemons
func BenchmarkSched_CycleWholeQueue(b *testing.B) {
	sp := schedSpool(b, 2000, 4) // one job at a time on 4 hosts
	pol, err := policy.New("easy", policy.Options{})
	if err != nil {
		b.Fatal(err)
	}
	d := &Sched{Env: Env{Spool: sp}, Hosts: localHosts(4), Policy: pol, PolicyName: "easy"}
	d.sp = sp.As(spool.Sched)
	d.cache = d.sp.NewCache()
	d.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	d.path = policy.Decider{Policy: pol}
	ctx := context.Background()
	for range 2 { // the first start, then a cycle that parses nothing
		if _, err := d.cycle(ctx); err != nil {
			b.Fatal(err)
		}
		time.Sleep(admitAfter)
	}
	if n := jobsIn(b, sp, spool.Queued); n != 1999 {
		b.Fatalf("%d jobs in queued/, want 1999", n)
	}
	for b.Loop() {
		if _, err := d.cycle(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
