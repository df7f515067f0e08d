package policy

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// The overrun rule: a running job whose predicted end is before now plus
// the margin is shown ending at now plus the margin, its hosts busy until
// then at least; the caller's slices are left alone.
func TestShowOverruns(t *testing.T) {
	hs := hosts(4)
	hs[1].FreeAt = t0.Add(-time.Minute) // R's host, by a stale end
	hs[2].FreeAt = t0.Add(time.Hour)    // S's host, and down past S's end
	s := Snapshot{Now: t0, Hosts: hs, Running: []RunningJob{
		running("R", -time.Minute, "h1"),  // overran a minute ago
		running("S", time.Second/2, "h2"), // ends within the margin: shown ending at it
		running("U", time.Second, "h3"),   // ends at now+margin: not overrun
	}}
	got := ShowOverruns(s, time.Second)
	var ends []time.Duration
	for _, r := range got.Running {
		ends = append(ends, r.End.Sub(t0))
	}
	if want := []time.Duration{time.Second, time.Second, time.Second}; !slices.Equal(ends, want) {
		t.Errorf("ends %v, want %v", ends, want)
	}
	for i, want := range []time.Time{{}, t0.Add(time.Second), t0.Add(time.Hour), {}} {
		if h := got.Hosts[i]; !h.FreeAt.Equal(want) {
			t.Errorf("%s free at %v, want %v", h.Name, h.FreeAt, want)
		}
	}
	if s.Running[0].End != t0.Add(-time.Minute) || s.Hosts[1].FreeAt != t0.Add(-time.Minute) {
		t.Error("the caller's snapshot was changed")
	}
	// Nothing overran: the same slices back.
	s.Running = s.Running[2:]
	if got := ShowOverruns(s, time.Second); &got.Running[0] != &s.Running[0] || &got.Hosts[0] != &s.Hosts[0] {
		t.Error("copied a snapshot with no overrun")
	}
}

// reader is a policy that reads n jobs and records the queue it was shown.
type reader struct {
	n     int
	shown []string
	plan  Plan
}

func (r *reader) Name() string { return "reader" }
func (r *reader) Reads() int   { return r.n }
func (r *reader) Plan(_ context.Context, s Snapshot) (Plan, error) {
	r.shown = r.shown[:0]
	for _, q := range s.Queue {
		r.shown = append(r.shown, q.ID)
	}
	return r.plan, nil
}

// The Decider hands the policy the head of the queue it reads, shows it
// overruns, keeps jobs inside one cluster (adding the rejections of the
// jobs no cluster can hold after the policy's), and checks the plan.
func TestDecider(t *testing.T) {
	queue := []QueuedJob{job("A", 0, 1, 1, time.Minute), job("B", 1, 1, 1, time.Minute), job("C", 2, 1, 1, time.Minute)}
	for _, c := range []struct {
		reads int
		want  string
	}{{0, "A B C"}, {2, "A B"}, {3, "A B C"}, {5, "A B C"}} {
		r := &reader{n: c.reads}
		d := Decider{Policy: r}
		if _, err := d.Decide(context.Background(), Snapshot{Now: t0, Hosts: hosts(2), Queue: queue}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(r.shown, " "); got != c.want {
			t.Errorf("reads %d: shown %q, want %q", c.reads, got, c.want)
		}
	}

	// R overran on a0: a start there is refused; BIG fits no one cluster.
	hs := twoClusters()
	inA := slices.Clone(queue)
	for i := range inA {
		inA[i].Cluster = "a"
	}
	big := job("BIG", 3, 5, 5, time.Minute)
	r := &reader{plan: Plan{
		StartNow: []Placement{{Job: "A", Hosts: []string{"a0"}, Start: t0}, {Job: "B", Hosts: []string{"a1"}, Start: t0}},
		Reject:   []Rejection{{Job: "C", Reason: "policy's own"}},
	}}
	d := Decider{Policy: r}
	dec, err := d.Decide(context.Background(), Snapshot{Now: t0, Hosts: hs,
		Running: []RunningJob{running("R", -time.Hour, "a0")}, Queue: append(inA, big)})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.shown, " "); got != "A B C" {
		t.Errorf("shown %q, want BIG left out by OneCluster", got)
	}
	if len(dec.Faults) != 1 || dec.Faults[0].Job != "A" || !strings.Contains(dec.Faults[0].Reason, "a0 (running job R)") {
		t.Errorf("faults %v, want A's start on a0 refused", dec.Faults)
	}
	if end := dec.Snapshot.Running[0].End; end != t0.Add(OverrunMargin) {
		t.Errorf("R shown ending at %v, want now+%v", end.Sub(t0), OverrunMargin)
	}
	var rejected []string
	for _, x := range dec.Plan.Reject {
		rejected = append(rejected, x.Job)
	}
	if !slices.Equal(rejected, []string{"C", "BIG"}) {
		t.Errorf("rejected %v, want C (the policy's) then BIG (OneCluster's)", rejected)
	}
	sound := dec.Plan.Without(dec.Faults)
	if len(sound.StartNow) != 1 || sound.StartNow[0].Job != "B" || len(sound.Reject) != 2 || len(dec.Plan.StartNow) != 2 {
		t.Errorf("without the faults: %+v (from %+v)", sound, dec.Plan)
	}
}

// Without drops exactly the refused parts, by position: a job started
// twice keeps its first start.
func TestPlan_Without(t *testing.T) {
	s := Snapshot{Now: t0, Hosts: hosts(3), Queue: []QueuedJob{job("A", 0, 1, 1, 0), job("B", 1, 1, 1, 0)}}
	p := Plan{StartNow: []Placement{{Job: "A", Hosts: []string{"h0"}, Start: t0}, {Job: "A", Hosts: []string{"h1"}, Start: t0}},
		Later: []Placement{{Job: "B", Hosts: []string{"h9"}, Start: t0.Add(time.Minute)}}}
	faults := Check(s, p)
	if len(faults) != 2 || faults[0].Index != 1 || faults[1].Part != "later" {
		t.Fatalf("faults %+v", faults)
	}
	got := p.Without(faults)
	if len(got.StartNow) != 1 || got.StartNow[0].Hosts[0] != "h0" || len(got.Later) != 0 {
		t.Errorf("without: %+v", got)
	}
}
