package policy

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"
	"time"
)

// Ten hosts. R1 holds h0-h3 until +100 s, R2 h4-h7 until +200 s; h8, h9
// are free. HEAD wants 5 hosts: 2 are free, R1's end frees 4 more, so its
// shadow time is +100 s and 6 - 5 = 1 host is spare ("extra"). Reserved:
// R1's four hosts and one free host, the highest: h9.
//
//	LONG2 (2 hosts, 1000 s): runs past +100 s and needs 2 spare hosts, there
//	      is 1: starting it would delay HEAD. Refused.
//	LONG1 (1 host, 1000 s): runs past +100 s but fits on the spare host h8.
//	SHORT (1 host, 100 s): ends at +100 s, no later than the shadow time: it
//	      may use the reserved h9.
//	LATE (1 host, 101 s): ends after the shadow time, and no host is free.
func TestEASY_Backfilling(t *testing.T) {
	s := Snapshot{
		Now:   t0,
		Hosts: hosts(10),
		Running: []RunningJob{
			running("R1", 100*time.Second, "h0", "h1", "h2", "h3"),
			running("R2", 200*time.Second, "h4", "h5", "h6", "h7"),
		},
		Queue: []QueuedJob{
			job("HEAD", 0, 5, 5, 50*time.Second),
			job("LONG2", 1, 2, 2, 1000*time.Second),
			job("LONG1", 2, 1, 1, 1000*time.Second),
			job("SHORT", 3, 1, 1, 100*time.Second),
			job("LATE", 4, 1, 1, 101*time.Second),
		},
	}
	pl := newHarness(t, "easy", Options{}).plan(s)
	ids, hs := started(pl)
	if !slices.Equal(ids, []string{"LONG1", "SHORT"}) {
		t.Fatalf("started %v, want [LONG1 SHORT]", ids)
	}
	if !slices.Equal(hs["LONG1"], []string{"h8"}) || !slices.Equal(hs["SHORT"], []string{"h9"}) {
		t.Fatalf("LONG1 on %v, SHORT on %v; want the spare h8 and the reserved h9", hs["LONG1"], hs["SHORT"])
	}
	if len(pl.Later) != 1 || pl.Later[0].Job != "HEAD" || !pl.Later[0].Start.Equal(t0.Add(100*time.Second)) {
		t.Fatalf("later = %+v, want HEAD reserved at +100s", pl.Later)
	}
	got := slices.Sorted(slices.Values(pl.Later[0].Hosts))
	if want := []string{"h0", "h1", "h2", "h3", "h9"}; !slices.Equal(got, want) {
		t.Fatalf("HEAD reserved %v, want %v", got, want)
	}

	// Without LONG1: LONG2 still may not start (2 > 1 spare); SHORT takes
	// h9 (reserved hosts first), which leaves the spare h8 to LATE: it runs
	// past the shadow time, but on a host HEAD does not need.
	s.Queue = slices.Delete(slices.Clone(s.Queue), 2, 3)
	ids, hs = started(newHarness(t, "easy", Options{}).plan(s))
	if !slices.Equal(ids, []string{"SHORT", "LATE"}) || !slices.Equal(hs["SHORT"], []string{"h9"}) || !slices.Equal(hs["LATE"], []string{"h8"}) {
		t.Fatalf("started %v on %v, want SHORT on h9, LATE on h8", ids, hs)
	}
}

// The head starts while it fits, and a later head's reservation counts the
// predicted ends of the jobs just started. Four free hosts: A (2 hosts,
// 10 s) and B (2 hosts, 30 s) start; C wants 3: A's end frees 2 at +10 s,
// not enough, B's end at +30 s: C's shadow is +30 s. D (1 host, 40 s) ends
// after that and no host is spare (4 free at +30 s, C takes 3, but none is
// free now): refused.
func TestEASY_HeadLoopThenReservation(t *testing.T) {
	s := Snapshot{Now: t0, Hosts: hosts(4), Queue: []QueuedJob{
		job("A", 0, 2, 2, 10*time.Second),
		job("B", 1, 2, 2, 30*time.Second),
		job("C", 2, 3, 3, 5*time.Second),
		job("D", 3, 1, 1, 40*time.Second),
	}}
	pl := newHarness(t, "easy", Options{}).plan(s)
	if ids, _ := started(pl); !slices.Equal(ids, []string{"A", "B"}) {
		t.Fatalf("started %v, want [A B]", ids)
	}
	if len(pl.Later) != 1 || pl.Later[0].Job != "C" || !pl.Later[0].Start.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("later = %+v, want C at +30s", pl.Later)
	}
}

// With arch constraints the reservation holds the head's own hosts. Hosts
// h0-h3 alternate arch a, b; h1 (b) is busy until +100 s, h3 (b) is free,
// h0, h2 (a) are free. HEAD needs 2 b hosts: shadow +100 s, reserving h1
// and h3. X (arch b, 1 host, 500 s) would take h3 past +100 s: refused.
// Y (any arch, 500 s) takes an a host, which HEAD can never use.
func TestEASY_ConstrainedReservation(t *testing.T) {
	s := Snapshot{Now: t0, Hosts: mixedHosts(4),
		Running: []RunningJob{running("R", 100*time.Second, "h1")},
		Queue: []QueuedJob{
			{ID: "HEAD", Min: 2, Max: 2, Arch: "b", Estimate: 10 * time.Second},
			{ID: "X", Min: 1, Max: 1, Arch: "b", Estimate: 500 * time.Second},
			{ID: "Y", Min: 1, Max: 1, Estimate: 500 * time.Second},
		}}
	pl := newHarness(t, "easy", Options{}).plan(s)
	ids, hs := started(pl)
	if !slices.Equal(ids, []string{"Y"}) || hs["Y"][0] == "h3" {
		t.Fatalf("started %v on %v, want Y on an arch-a host", ids, hs)
	}
	if got := slices.Sorted(slices.Values(pl.Later[0].Hosts)); !slices.Equal(got, []string{"h1", "h3"}) {
		t.Fatalf("HEAD reserved %v, want [h1 h3]", got)
	}
}

// refEASY is pyss's EasyBackfillScheduler written as plainly as possible
// over processor counts, as an oracle: start the head while it fits; then
// for each later job, copy the machine, put the head at its earliest start
// and see whether the job can start now for its whole estimate. It returns
// the IDs started.
func refEASY(s Snapshot) []string {
	type iv struct{ from, to, n int64 } // n processors busy over [from, to), ns after now
	var busy []iv
	total := int64(len(s.Hosts))
	for _, r := range s.Running {
		busy = append(busy, iv{0, max(int64(r.End.Sub(s.Now)), 1), int64(len(r.Hosts))})
	}
	freeAt := func(b []iv, t int64) int64 {
		f := total
		for _, x := range b {
			if x.from <= t && t < x.to {
				f -= x.n
			}
		}
		return f
	}
	// n processors free at every instant of [t, t+d): check t and every
	// interval boundary inside.
	fits := func(b []iv, n, t, d int64) bool {
		pts := []int64{t}
		for _, x := range b {
			for _, e := range []int64{x.from, x.to} {
				if e > t && e < t+d {
					pts = append(pts, e)
				}
			}
		}
		for _, p := range pts {
			if freeAt(b, p) < n {
				return false
			}
		}
		return true
	}
	est := func(q QueuedJob) int64 {
		if q.Estimate > 0 {
			return int64(q.Estimate)
		}
		return int64(time.Hour)
	}
	queue := slices.Clone(s.Queue)
	var out []string
	for len(queue) > 0 && freeAt(busy, 0) >= int64(queue[0].Min) {
		busy = append(busy, iv{0, est(queue[0]), int64(queue[0].Min)})
		out = append(out, queue[0].ID)
		queue = queue[1:]
	}
	if len(queue) == 0 {
		return out
	}
	head := queue[0]
	for _, q := range queue[1:] {
		n := int64(q.Min)
		if freeAt(busy, 0) < n {
			continue
		}
		// The head's earliest start on the machine as it is now (running
		// and backfilled jobs): now or some job's end.
		cands := []int64{0}
		for _, x := range busy {
			cands = append(cands, x.to)
		}
		sort.Slice(cands, func(i, j int) bool { return cands[i] < cands[j] })
		shadow := int64(-1)
		for _, c := range cands {
			if fits(busy, int64(head.Min), c, est(head)) {
				shadow = c
				break
			}
		}
		tmp := append(slices.Clone(busy), iv{shadow, shadow + est(head), int64(head.Min)})
		if fits(tmp, n, 0, est(q)) {
			busy = append(busy, iv{0, est(q), n})
			out = append(out, q.ID)
		}
	}
	return out
}

// On identical hosts and unconstrained jobs easy starts exactly the jobs
// pyss's algorithm (refEASY) starts, on random snapshots. Estimates are
// whole seconds and running jobs end on whole seconds, so jobs ending
// exactly at the shadow time are common.
func TestEASY_MatchesPyssOracle(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	backfilled := 0
	for i := 0; i < 3000; i++ {
		m := 1 + rng.Intn(12)
		s := Snapshot{Now: t0, Hosts: hosts(m)}
		perm := rng.Perm(m)
		for len(perm) > 0 && rng.Intn(5) > 0 {
			k := 1 + rng.Intn(min(len(perm), 3))
			var names []string
			for _, h := range perm[:k] {
				names = append(names, fmt.Sprintf("h%d", h))
			}
			perm = perm[k:]
			s.Running = append(s.Running, running(fmt.Sprintf("r%d", i), time.Duration(1+rng.Intn(8))*10*time.Second, names...))
		}
		for k := rng.Intn(8); k >= 0; k-- {
			n := 1 + rng.Intn(m)
			if rng.Intn(2) == 0 {
				n = min(1+rng.Intn(2), m) // the oracle, like pyss, has no rejections
			}
			s.Queue = append(s.Queue, job(fmt.Sprintf("q%d", k), 0, n, n, time.Duration(1+rng.Intn(8))*10*time.Second))
		}
		want := refEASY(s)
		pl, err := mustNew(t, "easy").Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := started(pl)
		if !slices.Equal(got, want) {
			t.Fatalf("snapshot %d (%d hosts, running %+v, queue %+v):\n easy started %v\n pyss starts  %v", i, m, s.Running, s.Queue, got, want)
		}
		if len(got) > 0 && len(pl.Later) > 0 {
			backfilled++
		}
	}
	if backfilled < 100 {
		t.Fatalf("only %d snapshots backfilled past a blocked head: the oracle is barely exercised", backfilled)
	}
}

// With exact estimates, once a job is at the head with a reservation, it
// starts no later than that reservation: backfilling never delays it.
func TestEASY_HeadNeverDelayed(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		jobs := randomJobs(rand.New(rand.NewSource(seed)), 200, 16, false, false)
		for i := range jobs {
			jobs[i].actual = jobs[i].est
		}
		res := drive(t, mustNew(t, "easy"), hosts(16), jobs)
		reserved := 0
		for id, plans := range res.plans {
			for _, at := range plans {
				if res.start[id] > at {
					t.Fatalf("seed %d: %s reserved at %d, started at %d", seed, id, at, res.start[id])
				}
			}
			reserved += len(plans) - 1
		}
		if reserved == 0 {
			t.Fatalf("seed %d: no reservation was ever made", seed)
		}
	}
}

// The predictor is asked once per job while the hosts stay the same (its
// answer does not depend on which hosts are free), on the first Min hosts
// the job may use, and again once the hosts change.
func TestEASY_PredictorAskedOncePerJob(t *testing.T) {
	calls := map[string]int{}
	var asked []string
	pred := PredictorFunc(func(_ context.Context, q *QueuedJob, hs []Host) (time.Duration, error) {
		calls[q.ID]++
		asked = asked[:0]
		for _, h := range hs {
			asked = append(asked, h.Name)
		}
		return 20 * time.Second, nil
	})
	h := newHarness(t, "easy", Options{Predictor: pred})
	s := Snapshot{Now: t0, Hosts: mixedHosts(4),
		Running: []RunningJob{running("R", 100*time.Second, "h0", "h1", "h2")},
		Queue: []QueuedJob{
			job("HEAD", 0, 4, 4, time.Hour),
			{ID: "B", Min: 1, Max: 1, Arch: "b", Estimate: time.Hour},
		}}
	pl := h.plan(s)
	// B is predicted 20 s on h1 (the first b host), so it ends before
	// HEAD's reservation at +100 s and backfills on h3.
	if ids, _ := started(pl); !slices.Equal(ids, []string{"B"}) || pl.StartNow[0].Predicted != 20*time.Second {
		t.Fatalf("started %+v, want B predicted 20s", pl.StartNow)
	}
	if !slices.Equal(asked, []string{"h1"}) {
		t.Fatalf("B predicted on %v, want [h1]", asked)
	}
	s.Queue = s.Queue[:1]
	h.plan(s)
	h.plan(s)
	if calls["HEAD"] != 1 {
		t.Fatalf("HEAD predicted %d times over three calls, want once", calls["HEAD"])
	}
	s.Hosts = mixedHosts(4)
	s.Hosts[2].Load = 1
	h.plan(s)
	if calls["HEAD"] != 2 {
		t.Fatalf("HEAD predicted %d times after a host's load changed, want twice", calls["HEAD"])
	}
}
