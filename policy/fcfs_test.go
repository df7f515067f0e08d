package policy

import (
	"context"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// baselines are the policies of fcfs.go, lwf.go, easy.go and
// conservative.go.
var baselines = []string{"fcfs", "fcfs-fill", "fpfs", "lwf", "lwf-strict", "easy", "conservative", "ga-plan"}

// started lists the jobs a plan starts now, in plan order, and their hosts.
func started(pl Plan) ([]string, map[string][]string) {
	var ids []string
	hs := map[string][]string{}
	for _, p := range pl.StartNow {
		ids = append(ids, p.Job)
		hs[p.Job] = p.Hosts
	}
	return ids, hs
}

func running(id string, end time.Duration, hosts ...string) RunningJob {
	return RunningJob{ID: id, Name: id, Hosts: hosts, Start: t0, End: t0.Add(end)}
}

// Four hosts, h0 and h1 busy for 100 s; A wants 1 host, B 3, C 1.
//   - fcfs: A starts (on h2, the lowest free); B needs 3 of the 1 left
//     (h3): stop, so C waits although h3 is free.
//   - fcfs-fill: A on h2; B skipped; C on h3.
//   - fpfs (MaxJumps 7): as fcfs-fill; B is overtaken once (by C).
func TestScan_FCFSStopsFillSkips(t *testing.T) {
	s := Snapshot{
		Now:     t0,
		Hosts:   hosts(4),
		Running: []RunningJob{running("R", 100*time.Second, "h0", "h1")},
		Queue: []QueuedJob{
			job("A", 1, 1, 1, 50*time.Second),
			job("B", 2, 3, 3, 50*time.Second),
			job("C", 3, 1, 1, 50*time.Second),
		},
	}
	for _, c := range []struct {
		policy string
		want   []string
		hosts  map[string][]string
	}{
		{"fcfs", []string{"A"}, map[string][]string{"A": {"h2"}}},
		{"fcfs-fill", []string{"A", "C"}, map[string][]string{"A": {"h2"}, "C": {"h3"}}},
		{"fpfs", []string{"A", "C"}, map[string][]string{"A": {"h2"}, "C": {"h3"}}},
	} {
		t.Run(c.policy, func(t *testing.T) {
			pl := newHarness(t, c.policy, Options{}).plan(s)
			ids, hs := started(pl)
			if !slices.Equal(ids, c.want) {
				t.Fatalf("started %v, want %v", ids, c.want)
			}
			for id, want := range c.hosts {
				if !slices.Equal(hs[id], want) {
					t.Errorf("%s on %v, want %v", id, hs[id], want)
				}
			}
			if pl.StartNow[0].Predicted != 50*time.Second {
				t.Errorf("A predicted %v, want its 50s estimate", pl.StartNow[0].Predicted)
			}
		})
	}
}

// fpfs with MaxJumps 2, across calls. WIDE wants all 4 hosts; h0 is busy
// for 1000 s, so small jobs arriving behind WIDE could always overtake it.
//
//	call 1: [WIDE S1]: WIDE does not fit; S1 starts on h1 (WIDE overtaken 1).
//	call 2: [WIDE S2 S3]: S2 starts on h2 (overtaken 2 = MaxJumps); S3 fits
//	        on h3 but may not start: WIDE is at its bound.
//	call 3: [WIDE S3 S4]: nothing starts, h3 stays idle for WIDE.
//
// fcfs-fill on the same calls starts S3 at call 2.
func TestScan_FPFSBoundsOvertakingAcrossCalls(t *testing.T) {
	h := newHarness(t, "fpfs", Options{MaxJumps: new(2)})
	fill := newHarness(t, "fcfs-fill", Options{})
	r := running("R", 1000*time.Second, "h0")
	wide := job("WIDE", 0, 4, 4, 10*time.Second)
	small := func(id string, at int) QueuedJob { return job(id, at, 1, 1, 500*time.Second) }
	s1 := Snapshot{Now: t0.Add(1 * time.Second), Hosts: hosts(4), Running: []RunningJob{r},
		Queue: []QueuedJob{wide, small("S1", 1)}}
	if ids, _ := started(h.plan(s1)); !slices.Equal(ids, []string{"S1"}) {
		t.Fatalf("call 1 started %v, want [S1]", ids)
	}
	r1 := running("S1", 501*time.Second, "h1")
	s2 := Snapshot{Now: t0.Add(2 * time.Second), Hosts: hosts(4), Running: []RunningJob{r, r1},
		Queue: []QueuedJob{wide, small("S2", 2), small("S3", 2)}}
	if ids, _ := started(h.plan(s2)); !slices.Equal(ids, []string{"S2"}) {
		t.Fatalf("call 2 started %v, want [S2] (S3 would overtake WIDE a third time)", ids)
	}
	if ids, _ := started(fill.plan(s2)); !slices.Equal(ids, []string{"S2", "S3"}) {
		t.Fatalf("fcfs-fill call 2 started %v, want [S2 S3]", ids)
	}
	r2 := running("S2", 502*time.Second, "h2")
	s3 := Snapshot{Now: t0.Add(3 * time.Second), Hosts: hosts(4), Running: []RunningJob{r, r1, r2},
		Queue: []QueuedJob{wide, small("S3", 2), small("S4", 3)}}
	if ids, _ := started(h.plan(s3)); len(ids) != 0 {
		t.Fatalf("call 3 started %v, want nothing: WIDE was overtaken twice", ids)
	}
}

// fpfs never lets a job be overtaken more than MaxJumps times over a whole
// run, and it does overtake (else the bound is untested); fcfs never
// overtakes.
func TestScan_FPFSBoundHoldsOverRuns(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		jobs := randomJobs(rand.New(rand.NewSource(seed)), 150, 12, false, false)
		for _, c := range []struct {
			name string
			p    Policy
			max  int
		}{
			{"fpfs-3", newHarness(t, "fpfs", Options{MaxJumps: new(3)}).p, 3},
			{"fpfs-0", newHarness(t, "fpfs", Options{MaxJumps: new(0)}).p, 0},
			{"fcfs", mustNew(t, "fcfs"), 0},
		} {
			res := drive(t, c.p, hosts(12), jobs)
			most := 0
			for id, n := range res.overtaken {
				if n > c.max {
					t.Fatalf("seed %d %s: %s overtaken %d times", seed, c.name, id, n)
				}
				most = max(most, n)
			}
			if c.max > 0 && most == 0 {
				t.Fatalf("seed %d %s: no job was ever overtaken; the bound is untested", seed, c.name)
			}
		}
	}
}

// fpfs with MaxJumps 0 is fcfs: the same plans on random snapshots, on
// which skipping (fcfs-fill) would start other jobs.
func TestScan_FPFSZeroIsFCFS(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	differs := 0
	for i := 0; i < 200; i++ {
		s := randomSnapshot(rng, false)
		var ids [3][]string
		for k, h := range []*harness{newHarness(t, "fpfs", Options{MaxJumps: new(0)}), newHarness(t, "fcfs", Options{}), newHarness(t, "fcfs-fill", Options{})} {
			ids[k], _ = started(h.plan(s))
		}
		if !slices.Equal(ids[0], ids[1]) {
			t.Fatalf("snapshot %d: fpfs-0 started %v, fcfs %v", i, ids[0], ids[1])
		}
		if !slices.Equal(ids[1], ids[2]) {
			differs++
		}
	}
	if differs == 0 {
		t.Fatal("fcfs-fill started what fcfs did on every snapshot: the test shows nothing")
	}
}

// Three hosts free (h0 busy). By estimate the order is D (50 s, 4 hosts),
// B (100 s, 3), C (200 s, 1), A (300 s, 2).
//   - lwf: D does not fit, skip; B takes h1-h3; C and A find nothing.
//   - lwf-strict: D does not fit: stop; nothing starts.
//   - fcfs, for contrast: A (first to arrive) takes h1, h2; B does not fit.
func TestScan_LWFOrdersByEstimate(t *testing.T) {
	s := Snapshot{
		Now:     t0,
		Hosts:   hosts(4),
		Running: []RunningJob{running("R", 100*time.Second, "h0")},
		Queue: []QueuedJob{
			job("A", 1, 2, 2, 300*time.Second),
			job("B", 2, 3, 3, 100*time.Second),
			job("C", 3, 1, 1, 200*time.Second),
			job("D", 4, 4, 4, 50*time.Second),
		},
	}
	for _, c := range []struct {
		policy string
		want   []string
	}{
		{"lwf", []string{"B"}},
		{"lwf-strict", nil},
		{"fcfs", []string{"A"}},
	} {
		ids, _ := started(newHarness(t, c.policy, Options{}).plan(s))
		if !slices.Equal(ids, c.want) {
			t.Errorf("%s started %v, want %v", c.policy, ids, c.want)
		}
	}
	// All hosts free: lwf starts in estimate order, first fit: D takes all
	// four, nothing else fits.
	s.Running = nil
	ids, _ := started(newHarness(t, "lwf", Options{}).plan(s))
	if !slices.Equal(ids, []string{"D"}) {
		t.Errorf("lwf on an idle machine started %v, want [D]", ids)
	}
}

// lwf asks the predictor when there is one: here it reverses the
// estimates, so A (predicted shortest) goes first.
func TestScan_LWFUsesPredictor(t *testing.T) {
	pred := PredictorFunc(func(_ context.Context, q *QueuedJob, _ []Host) (time.Duration, error) {
		return time.Hour - q.Estimate, nil
	})
	s := Snapshot{Now: t0, Hosts: hosts(2), Queue: []QueuedJob{
		job("A", 1, 2, 2, 300*time.Second),
		job("B", 2, 2, 2, 100*time.Second),
	}}
	pl := newHarness(t, "lwf", Options{Predictor: pred}).plan(s)
	if ids, _ := started(pl); !slices.Equal(ids, []string{"A"}) || pl.StartNow[0].Predicted != time.Hour-300*time.Second {
		t.Fatalf("started %+v, want A predicted 55m", pl.StartNow)
	}
}

func mustNew(t *testing.T, name string) Policy {
	t.Helper()
	p, err := New(name, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
