package policy

import (
	"context"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// easy-fast starts a job on the fastest free hosts, where easy takes them
// by index; the head's reservation holds the slowest free host.
func TestEasyFast_TakesFastestHosts(t *testing.T) {
	hs := []Host{
		{Name: "s0", Speed: 1}, {Name: "s1", Speed: 1}, {Name: "m0", Speed: 1.5},
		{Name: "f0", Speed: 2}, {Name: "f1", Speed: 2},
	}
	s := Snapshot{Now: t0, Hosts: hs,
		Running: []RunningJob{{ID: "R", Hosts: []string{"f1"}, Start: t0, End: t0.Add(time.Hour)}},
		Queue:   []QueuedJob{job("A", 0, 2, 2, time.Minute), job("HEAD", 1, 5, 5, time.Minute), job("B", 2, 1, 1, 2*time.Hour)}}
	for name, want := range map[string][]string{"easy": {"s0", "s1"}, "easy-fast": {"f0", "m0"}} {
		p := mustNew(t, name)
		pl, err := p.Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if faults := Check(s, pl); len(faults) > 0 {
			t.Fatal(faults)
		}
		if len(pl.StartNow) == 0 || !slices.Equal(pl.StartNow[0].Hosts, want) {
			t.Errorf("%s: started %v, want A on %v", name, pl.StartNow, want)
		}
		if name == "easy-fast" && (len(pl.StartNow) != 1) {
			// B is long: it may only take a host the head's reservation
			// leaves spare, and the head needs every host.
			t.Errorf("easy-fast started %v, want only A", pl.StartNow)
		}
	}
}

// On identical hosts easy-fast is easy: the same plans for the same
// snapshots.
func TestEasyFast_IsEasyOnIdenticalHosts(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	a, b := mustNew(t, "easy"), mustNew(t, "easy-fast")
	for i := 0; i < 300; i++ {
		s := randomSnapshot(rng, i%2 == 0)
		pa, err := a.Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		pb, err := b.Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if !samePlacements(pa.StartNow, pb.StartNow) {
			t.Fatalf("snapshot %d: easy %v, easy-fast %v", i, pa.StartNow, pb.StartNow)
		}
	}
}

func samePlacements(a, b []Placement) bool {
	return slices.EqualFunc(a, b, func(x, y Placement) bool {
		return x.Job == y.Job && slices.Equal(x.Hosts, y.Hosts) && x.Start.Equal(y.Start) && x.Predicted == y.Predicted
	})
}
