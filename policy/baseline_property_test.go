package policy

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// randomSnapshot is a snapshot of 1-16 hosts (arch "a" and "b") with
// running jobs on random hosts ending from 10 s ago (overrun) to 500 s
// ahead, some hosts busy by FreeAt alone, and up to 12 queued jobs, some
// needing more hosts than exist, some without estimates and, with
// constrained, some needing arch "b".
func randomSnapshot(rng *rand.Rand, constrained bool) Snapshot {
	m := 1 + rng.Intn(16)
	s := Snapshot{Now: t0.Add(time.Hour), Hosts: mixedHosts(m)}
	perm := rng.Perm(m)
	for len(perm) > 0 && rng.Intn(4) > 0 {
		k := 1 + rng.Intn(min(len(perm), 4))
		var names []string
		for _, h := range perm[:k] {
			names = append(names, s.Hosts[h].Name)
		}
		perm = perm[k:]
		end := s.Now.Add(time.Duration(rng.Intn(510)-10) * time.Second)
		s.Running = append(s.Running, RunningJob{ID: fmt.Sprintf("r%d", len(s.Running)), Hosts: names, Start: t0, End: end})
	}
	if len(perm) > 0 && rng.Intn(3) == 0 {
		s.Hosts[perm[0]].FreeAt = s.Now.Add(time.Duration(1+rng.Intn(300)) * time.Second)
	}
	nq := rng.Intn(13)
	for i := 0; i < nq; i++ {
		n := 1 + rng.Intn(3)
		if rng.Intn(4) == 0 {
			n = 1 + rng.Intn(m+1) // sometimes more than exist
		}
		est := time.Duration(1+rng.Intn(400)) * time.Second
		if rng.Intn(8) == 0 {
			est = 0 // fallback
		}
		q := job(fmt.Sprintf("q%02d", i), i, n, n+rng.Intn(2), est)
		if constrained && rng.Intn(3) == 0 {
			q.Arch = "b"
		}
		s.Queue = append(s.Queue, q)
	}
	return s
}

// No baseline ever starts a job on a busy host, gives a host twice, or
// gives a job other than Min hosts that meet its constraints; it rejects
// exactly the jobs that need more hosts than match them, and names each job
// at most once. Fresh policies and one long-lived policy each (the stateful
// ones must stay safe whatever snapshots they are shown).
func TestBaselines_NeverOvercommit(t *testing.T) {
	for _, name := range baselines {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(11))
			live := mustNew(t, name)
			startedAny := false
			for i := 0; i < 400; i++ {
				s := randomSnapshot(rng, i%2 == 0)
				for _, p := range []Policy{mustNew(t, name), live} {
					pl, err := p.Plan(context.Background(), s)
					if err != nil {
						t.Fatal(err)
					}
					checkPlan(t, name, s, pl)
					startedAny = startedAny || len(pl.StartNow) > 0
					named := map[string]int{}
					for _, x := range pl.StartNow {
						named[x.Job]++
					}
					for _, x := range pl.Later {
						named[x.Job]++
					}
					rejected := map[string]bool{}
					for _, r := range pl.Reject {
						named[r.Job]++
						rejected[r.Job] = true
					}
					for _, q := range s.Queue {
						avail := 0
						for _, h := range s.Hosts {
							if q.Arch == "" || q.Arch == h.Arch {
								avail++
							}
						}
						if rejected[q.ID] != (q.Min > avail) {
							t.Fatalf("snapshot %d: %s rejected=%v with %d of %d hosts", i, q.ID, rejected[q.ID], q.Min, avail)
						}
						if named[q.ID] > 1 {
							t.Fatalf("snapshot %d: %s named %d times", i, q.ID, named[q.ID])
						}
					}
				}
			}
			if !startedAny {
				t.Fatal("nothing ever started: the test shows nothing")
			}
		})
	}
}

// Every baseline runs whole random workloads on mixed hosts, with overruns
// and arch constraints, placing every job on free hosts (drive checks
// each plan) and leaving none behind; the same run twice gives the same
// starts (determinism).
func TestBaselines_DriveWorkloads(t *testing.T) {
	for _, name := range baselines {
		t.Run(name, func(t *testing.T) {
			for seed := int64(1); seed <= 3; seed++ {
				jobs := randomJobs(rand.New(rand.NewSource(seed)), 120, 10, true, true)
				a := drive(t, mustNew(t, name), mixedHosts(10), jobs)
				b := drive(t, mustNew(t, name), mixedHosts(10), jobs)
				if len(a.start) != len(jobs) {
					t.Fatalf("seed %d: %d of %d jobs started", seed, len(a.start), len(jobs))
				}
				for id, x := range a.start {
					if b.start[id] != x {
						t.Fatalf("seed %d: %s started at %d, then at %d", seed, id, x, b.start[id])
					}
				}
			}
		})
	}
}
