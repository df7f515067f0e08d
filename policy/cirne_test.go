package policy

import (
	"testing"
	"time"
)

// Cirne-Berman on hand-built queues. M is the moldable job of scojo_test.go
// (2..8 hosts, N_opt 4, T = 1625, 1238.1, 1000, 945.5, 896.6, 852.5, 812.5 s
// on 2..8), submitted now. Ten hosts; R holds 6 until +100 s.
//
// Alone: on up to 4 hosts M starts now and ends at T(n), at best 1000 s; on
// 5..8 it starts at +100 s and ends at 1045.5, 996.6, 952.5 and 912.5 s: 8
// ends soonest. M waits for R's end, on 8.
//
// Behind W (rigid, 6 hosts, 400 s, medium like M and submitted before it, so
// ahead of it): W is placed at +100..+500 s; 8 hosts are free for M from
// +500 s (ends 1312.5 s), 4 from now (ends 1000 s), so M takes 4 and EASY
// backfills it now (4 hosts spare beside W's reservation).
//
// X (rigid, 6 hosts, 20,000 s: long, behind M in priority order although
// submitted first) does not count in M's simulation: with it, M still takes
// 8.
func TestCirne_SizeAtSubmission(t *testing.T) {
	r := running("R", 100*time.Second, "h0", "h1", "h2", "h3", "h4", "h5")
	for _, c := range []struct {
		what   string
		queue  []QueuedJob
		n      int
		now    bool
		inWhy  string
		waitOn string
	}{
		{"alone", []QueuedJob{moldJob("M", t0, 1000*time.Second)}, 8, false, "(in 15 min)", ""},
		{"behind W", []QueuedJob{rigidJob("W", t0.Add(-time.Second), 6, 400*time.Second), moldJob("M", t0, 1000*time.Second)}, 4, true, "(in 17 min)", "W"},
		{"X behind", []QueuedJob{rigidJob("X", t0.Add(-time.Minute), 6, 20000*time.Second), moldJob("M", t0, 1000*time.Second)}, 8, false, "(in 15 min)", ""},
	} {
		s := Snapshot{Now: t0, Hosts: hosts(10), Running: []RunningJob{r}, Queue: c.queue}
		pl := newHarness(t, "cirne-berman", Options{}).plan(s)
		checkSound(t, s, pl)
		part := pl.Later
		if c.now {
			part = pl.StartNow
		}
		m, ok := placed(part, "M")
		if !ok || len(m.Hosts) != c.n {
			t.Errorf("%s: start %+v, later %+v; want M on %d (now %v)", c.what, pl.StartNow, pl.Later, c.n, c.now)
			continue
		}
		if want := "of 2–8 hosts: chosen when submitted, the size the simulated schedule then finished soonest " + c.inWhy; m.Why[2:] != want {
			t.Errorf("%s: why %q", c.what, m.Why)
		}
		if c.waitOn != "" && (len(pl.Later) != 1 || pl.Later[0].Job != c.waitOn) {
			t.Errorf("%s: later %+v, want %s reserved", c.what, pl.Later, c.waitOn)
		}
	}
}

// The size is fixed at submission: at +50 s R is predicted to end at
// +5000 s, so that M would now end sooner on the 4 hosts free, but it keeps
// its 8 and waits.
func TestCirne_SizeIsFixed(t *testing.T) {
	h := newHarness(t, "cirne-berman", Options{})
	s := Snapshot{Now: t0, Hosts: hosts(10), Running: []RunningJob{running("R", 100*time.Second, "h0", "h1", "h2", "h3", "h4", "h5")},
		Queue: []QueuedJob{moldJob("M", t0, 1000*time.Second)}}
	if pl := h.plan(s); len(pl.Later) != 1 || len(pl.Later[0].Hosts) != 8 {
		t.Fatalf("first call: later %+v, want M on 8", pl.Later)
	}
	s.Now = t0.Add(50 * time.Second)
	s.Running = []RunningJob{running("R", 5000*time.Second, "h0", "h1", "h2", "h3", "h4", "h5")}
	pl := h.plan(s)
	checkSound(t, s, pl)
	if len(pl.StartNow) != 0 || len(pl.Later) != 1 || len(pl.Later[0].Hosts) != 8 || !pl.Later[0].Start.Equal(t0.Add(5000*time.Second)) {
		t.Fatalf("second call: start %+v, later %+v; want M to wait for 8 at +5000 s", pl.StartNow, pl.Later)
	}
	// A fresh policy sizes M anew: 4 hosts now.
	if pl := newHarness(t, "cirne-berman", Options{}).plan(s); len(pl.StartNow) != 1 || len(pl.StartNow[0].Hosts) != 4 {
		t.Fatalf("fresh: start %+v, want M on 4 now", pl.StartNow)
	}
}

// The simulation is EASY's, as the scheduler's is: only the head is
// protected, so M may backfill ahead of a waiting job that is not the head.
// Ten hosts: R holds 6 until +100 s, R2 2 until +1000 s, R3 2 until
// +5000 s. Ahead of M (all medium, submitted before it): W1 (6 hosts,
// 400 s), W2 (10, 400 s), W3 (8, 1000 s). M: T_opt 3000 s, 2..8 hosts,
// T = 4875, 3714.3, 3000, 2836.4, 2689.7, 2557.5, 2437.5 s on 2..8.
//
// EASY: W1 starts at +100 s; W2, the head from then, is reserved for
// +5000 s (R3's end) with no host spare. At +500 s 6 hosts are free and
// W3 (8) does not fit: M on 3..6 hosts ends by +5000 s and backfills, on 6
// ending at +3189.7 s, the soonest (on 8 it would start at +2000 s, after
// W3, and end at +4437.5 s). Conservative backfilling would have reserved
// W3's +1000..+2000 s first, leaving 6 hosts for only +500..+1000 s, and
// M would take 8 from +2000 s.
func TestCirne_SimulatesEASY(t *testing.T) {
	s := Snapshot{Now: t0, Hosts: hosts(10), Running: []RunningJob{
		running("R", 100*time.Second, "h0", "h1", "h2", "h3", "h4", "h5"),
		running("R2", 1000*time.Second, "h6", "h7"),
		running("R3", 5000*time.Second, "h8", "h9"),
	}, Queue: []QueuedJob{
		rigidJob("W1", t0.Add(-3*time.Second), 6, 400*time.Second),
		rigidJob("W2", t0.Add(-2*time.Second), 10, 400*time.Second),
		rigidJob("W3", t0.Add(-time.Second), 8, 1000*time.Second),
		moldJob("M", t0, 3000*time.Second),
	}}
	h := newHarness(t, "cirne-berman", Options{})
	pl := h.plan(s)
	checkSound(t, s, pl)
	if len(pl.StartNow) != 0 || len(pl.Later) != 1 || pl.Later[0].Job != "W1" {
		t.Fatalf("start %+v, later %+v; want only W1 reserved", pl.StartNow, pl.Later)
	}
	mp := h.p.(*moldPolicy)
	if got := mp.fixed["M"]; got != 6 {
		t.Errorf("M sized %d, want 6", got)
	}
	if want := "6 of 2–8 hosts: chosen when submitted, the size the simulated schedule then finished soonest (in 53 min)"; mp.whyOf["M"] != want {
		t.Errorf("why %q, want %q", mp.whyOf["M"], want)
	}
	// At +500 s, as simulated, M backfills on its 6 hosts beside W2's
	// reservation.
	s.Now = t0.Add(500 * time.Second)
	s.Running, s.Queue = s.Running[1:], s.Queue[1:] // R and W1 have ended
	pl = h.plan(s)
	checkSound(t, s, pl)
	if m, ok := placed(pl.StartNow, "M"); !ok || len(m.Hosts) != 6 {
		t.Errorf("at +500 s: start %+v, want M on 6", pl.StartNow)
	}
}

// Hosts freed together at the shadow time all count towards the spare
// ones, as in easy.go. Ten hosts: R1 and R2 hold 3 each until +100 s, R3 2
// until +10000 s, 2 free. W (4 hosts, 1000 s, ahead of M) is reserved for
// +100 s, when 8 hosts are free: 4 spare. M (T_opt 100 s: 162.5 s on 2)
// backfills now on the 2 free hosts although it runs past +100 s, ending
// at +162.5 s. Counting only R1's hosts (5 free at +100 s, 1 spare) it
// would wait for +100 s and take 4, ending at +200 s.
func TestCirne_SpareHostsCountEveryEndAtTheShadow(t *testing.T) {
	s := Snapshot{Now: t0, Hosts: hosts(10), Running: []RunningJob{
		running("R1", 100*time.Second, "h0", "h1", "h2"),
		running("R2", 100*time.Second, "h3", "h4", "h5"),
		running("R3", 10000*time.Second, "h6", "h7"),
	}, Queue: []QueuedJob{
		rigidJob("W", t0.Add(-time.Second), 4, 1000*time.Second),
		moldJob("M", t0, 100*time.Second),
	}}
	h := newHarness(t, "cirne-berman", Options{})
	pl := h.plan(s)
	checkSound(t, s, pl)
	if m, ok := placed(pl.StartNow, "M"); !ok || len(m.Hosts) != 2 {
		t.Errorf("start %+v, later %+v; want M backfilled now on 2", pl.StartNow, pl.Later)
	}
}
