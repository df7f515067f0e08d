package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"msched/workload"
)

func TestAssignClusters(t *testing.T) {
	for _, c := range []struct {
		name  string
		t     workload.RequestType
		comps []int
		free  []int
		fit   Fit
		want  []int // nil: does not fit
	}{
		{"ordered", workload.Ordered, []int{2, 1, 3}, []int{2, 4, 3}, FirstFit, []int{0, 1, 2}},
		{"ordered, fewer components than clusters", workload.Ordered, []int{1, 1}, []int{1, 1, 0}, FirstFit, []int{0, 1}},
		{"ordered, a cluster too full", workload.Ordered, []int{3, 1, 1}, []int{2, 8, 8}, FirstFit, nil},
		{"ordered, more components than clusters", workload.Ordered, []int{1, 1, 1, 1}, []int{8, 8, 8}, FirstFit, nil},
		// Largest first: 3 (component 1) to the first cluster of 3 or
		// more, b; 2 (component 2) to a; 1 (component 0) to c.
		{"unordered first fit", workload.Unordered, []int{1, 3, 2}, []int{2, 4, 3}, FirstFit, []int{2, 1, 0}},
		// 3 to the freest, b (4); 2 to c (3); 1 to a.
		{"unordered worst fit", workload.Unordered, []int{1, 3, 2}, []int{2, 4, 3}, WorstFit, []int{0, 1, 2}},
		// Equal components keep their order; equal clusters theirs.
		{"unordered first fit, ties", workload.Unordered, []int{2, 2}, []int{2, 2, 5}, FirstFit, []int{0, 1}},
		{"unordered worst fit, ties", workload.Unordered, []int{2, 2}, []int{2, 2, 5}, WorstFit, []int{2, 0}},
		{"unordered, no two clusters of 3", workload.Unordered, []int{3, 3}, []int{3, 2, 2}, FirstFit, nil},
		{"unordered worst fit, no two clusters of 3", workload.Unordered, []int{3, 3}, []int{3, 2, 2}, WorstFit, nil},
		{"unordered, more components than clusters", workload.Unordered, []int{1, 1, 1}, []int{8, 8}, FirstFit, nil},
		{"unordered, a component larger than every cluster", workload.Unordered, []int{9}, []int{8, 8}, WorstFit, nil},
		{"total across clusters", workload.Total, []int{4, 4}, []int{2, 3, 3}, FirstFit, []int{}},
		{"total too large", workload.Total, []int{4, 5}, []int{2, 3, 3}, FirstFit, nil},
		{"not a request", 0, []int{1}, []int{8}, FirstFit, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			to := make([]int, len(c.comps))
			ok := AssignClusters(c.t, c.comps, c.free, c.fit, to)
			switch {
			case ok != (c.want != nil):
				t.Fatalf("fits %v, want %v", ok, c.want != nil)
			case ok && c.t != workload.Total && !slices.Equal(to, c.want):
				t.Errorf("clusters %v, want %v", to, c.want)
			}
		})
	}
}

// Hand-built cluster states: cluster a's free hosts are 0, 2, 4; b's 1, 3;
// c's 5..8. Hosts come back component by component.
func TestCoallocate(t *testing.T) {
	free := [][]int{{0, 2, 4}, {1, 3}, {5, 6, 7, 8}}
	req := func(rt workload.RequestType, comps ...int) QueuedJob {
		n := 0
		for _, c := range comps {
			n += c
		}
		return QueuedJob{ID: "J", Min: n, Max: n, Request: rt, Components: comps}
	}
	for _, c := range []struct {
		name string
		q    QueuedJob
		fit  Fit
		want []int // nil: does not fit now
	}{
		{"ordered", req(workload.Ordered, 2, 1, 3), FirstFit, []int{0, 2, 1, 5, 6, 7}},
		{"ordered does not fit", req(workload.Ordered, 1, 3), FirstFit, nil},
		// 3 (component 1) to a, the first with 3 free; 2 to b; 1 to c.
		{"unordered first fit", req(workload.Unordered, 1, 3, 2), FirstFit, []int{5, 0, 2, 4, 1, 3}},
		// 3 to c (4 free); 2 to a (3 free); 1 to b.
		{"unordered worst fit", req(workload.Unordered, 1, 3, 2), WorstFit, []int{1, 5, 6, 7, 0, 2}},
		{"unordered does not fit", req(workload.Unordered, 3, 3, 3), FirstFit, nil},
		{"total", QueuedJob{ID: "J", Min: 6, Max: 6, Request: workload.Total}, FirstFit, []int{0, 2, 4, 1, 3, 5}},
		{"total from components", req(workload.Total, 4, 5), WorstFit, []int{0, 2, 4, 1, 3, 5, 6, 7, 8}},
		{"total does not fit", req(workload.Total, 5, 5), FirstFit, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, ok := Coallocate(&c.q, free, c.fit, []int{99})
			if ok != (c.want != nil) {
				t.Fatalf("fits %v (hosts %v), want %v", ok, out, c.want)
			}
			if want := append([]int{99}, c.want...); !slices.Equal(out, want) {
				t.Errorf("out %v, want %v", out, want)
			}
		})
	}
}

// threeClusters is clusters a, b and c of 4 generic hosts each, in order;
// job R runs on a0, a1, a2 and b0, so a has 1 host free (a3), b 3 (b1..b3)
// and c 4.
func threeClusters() Snapshot {
	var hs []Host
	for _, c := range []string{"a", "b", "c"} {
		for i := range 4 {
			hs = append(hs, Host{Name: fmt.Sprintf("%s%d", c, i), Arch: "generic", Cluster: c})
		}
	}
	return Snapshot{Now: t0, Hosts: hs, Running: []RunningJob{running("R", time.Hour, "a0", "a1", "a2", "b0")}}
}

// request is a queued job with a multicluster request.
func request(id string, rt workload.RequestType, comps ...int) QueuedJob {
	n := 0
	for _, c := range comps {
		n += c
	}
	q := job(id, 0, n, n, time.Minute)
	q.Request, q.Components = rt, comps
	if rt == workload.Total {
		q.Components = nil
	}
	return q
}

// fcfs, fcfs-fill and fpfs place each kind of request, one job at a time,
// on threeClusters, and reject those that no state of the clusters holds.
func TestScan_Coallocates(t *testing.T) {
	for _, c := range []struct {
		name   string
		q      QueuedJob
		fit    Fit
		hosts  string // "": does not start
		reject string // a fragment of the reason
	}{
		{"ordered", request("J", workload.Ordered, 1, 3, 2), FirstFit, "a3 b1 b2 b3 c0 c1", ""},
		{"ordered, cluster a too full now", request("J", workload.Ordered, 2, 1, 1), FirstFit, "", ""},
		// 3 (component 3) to b, the first with room; 2 to c; 1 to a.
		{"unordered first fit", request("J", workload.Unordered, 2, 1, 3), FirstFit, "c0 c1 a3 b1 b2 b3", ""},
		// 3 to c, the freest; 2 to b; 1 to a.
		{"unordered worst fit", request("J", workload.Unordered, 2, 1, 3), WorstFit, "b1 b2 a3 c0 c1 c2", ""},
		{"unordered, no two clusters of 4 now", request("J", workload.Unordered, 4, 4), FirstFit, "", ""},
		{"total across clusters", request("J", workload.Total, 8), FirstFit, "a3 b1 b2 b3 c0 c1 c2 c3", ""},
		{"total, 9 hosts not free now", request("J", workload.Total, 9), FirstFit, "", ""},
		{"never: ordered", request("J", workload.Ordered, 5, 1), FirstFit, "",
			`ordered request [5 1]: component 1 needs 5 hosts in cluster "a" (the 1st), which has 4 hosts`},
		{"never: more components than clusters", request("J", workload.Unordered, 1, 1, 1, 1), FirstFit, "",
			"unordered request [1 1 1 1]: 4 components, each in its own cluster, but only 3 clusters"},
		{"never: a component larger than every cluster", request("J", workload.Unordered, 5, 1), WorstFit, "",
			"unordered request [5 1]: a component of 5 hosts is larger than every cluster (the largest has 4 hosts)"},
		{"never: total", request("J", workload.Total, 13), FirstFit, "", "total request of 13 hosts: only 12 hosts exist"},
		{"never: arch", func() QueuedJob { q := request("J", workload.Ordered, 1); q.Arch = "sparc"; return q }(), FirstFit, "",
			`ordered request [1]: component 1 needs 1 host in cluster "a" (the 1st), which has 0 sparc hosts`},
		{"malformed", func() QueuedJob { q := request("J", workload.Unordered, 2, 2); q.Min = 3; return q }(), FirstFit, "",
			"unordered request [2 2]: components of 4 hosts in all, but the job asks for 3 to 4 hosts"},
	} {
		for _, name := range []string{"fcfs", "fcfs-fill", "fpfs"} {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				s := threeClusters()
				s.Queue = []QueuedJob{c.q}
				pl := newHarness(t, name, Options{Fit: c.fit}).plan(s)
				if f := Check(s, pl); f != nil {
					t.Fatalf("Check: %v", f)
				}
				_, hs := started(pl)
				if got := strings.Join(hs["J"], " "); got != c.hosts {
					t.Errorf("started on %q, want %q", got, c.hosts)
				}
				switch {
				case c.reject == "" && len(pl.Reject) > 0:
					t.Errorf("rejected: %v", pl.Reject)
				case c.reject != "" && (len(pl.Reject) != 1 || pl.Reject[0].Reason != c.reject):
					t.Errorf("rejections %v, want %q", pl.Reject, c.reject)
				}
			})
		}
	}
}

// The policies place a co-allocated job on the clusters of one launcher
// (Host.Via), never across: a and b are reached locally, c and d by ssh.
// With a busy, [1, 1] goes to c and d (First Fit would pick b and c);
// [2, 2, 1] no clusters of one launcher can ever hold, and it is rejected
// with the reason.
func TestScan_CoallocatesThroughOneLauncher(t *testing.T) {
	var hs []Host
	for _, c := range []struct{ name, via string }{{"a", "local"}, {"b", "local"}, {"c", "ssh"}, {"d", "ssh"}} {
		for i := range 2 {
			hs = append(hs, Host{Name: fmt.Sprintf("%s%d", c.name, i), Arch: "generic", Cluster: c.name, Via: c.via})
		}
	}
	for _, name := range []string{"fcfs", "fcfs-fill", "fpfs"} {
		s := Snapshot{Now: t0, Hosts: hs, Running: []RunningJob{running("R", time.Hour, "a0", "a1")},
			Queue: []QueuedJob{request("J", workload.Unordered, 1, 1), request("K", workload.Unordered, 2, 2, 1)}}
		pl := newHarness(t, name, Options{}).plan(s)
		if f := Check(s, pl); f != nil {
			t.Fatalf("%s: Check: %v", name, f)
		}
		if _, got := started(pl); strings.Join(got["J"], " ") != "c0 d0" {
			t.Errorf("%s: J on %v, want c0 d0", name, got["J"])
		}
		if len(pl.Reject) != 1 || pl.Reject[0].Job != "K" || !strings.Contains(pl.Reject[0].Reason, "only clusters reached in different ways (local, ssh)") {
			t.Errorf("%s: rejections %v", name, pl.Reject)
		}
	}
	// Check refuses a plan that puts one job across launchers.
	s := Snapshot{Now: t0, Hosts: hs, Queue: []QueuedJob{request("J", workload.Unordered, 1, 1), request("T", workload.Total, 3)}}
	pl := Plan{StartNow: []Placement{{Job: "J", Hosts: []string{"b0", "c0"}, Start: t0}, {Job: "T", Hosts: []string{"a0", "a1", "d0"}, Start: t0}}}
	f := Check(s, pl)
	if len(f) != 2 || !strings.Contains(f[0].Reason, "hosts b0 and c0 are reached differently (local, ssh): a job runs through one launcher") ||
		!strings.Contains(f[1].Reason, "hosts a0 and d0 are reached differently") {
		t.Errorf("Check: %v", f)
	}
}

// A co-allocated job that does not fit now stops fcfs and is overtaken by
// fpfs, which counts the jump.
func TestScan_CoallocatedJobThatDoesNotFit(t *testing.T) {
	s := threeClusters()
	s.Queue = []QueuedJob{
		request("WIDE", workload.Unordered, 4, 4),   // only c has 4 free
		request("SMALL", workload.Ordered, 1, 1, 1), // a3, b1, c0
		job("ORD", 1, 2, 2, time.Minute),            // an ordinary job, in one cluster (pinned by OneCluster in the Decider)
	}
	if ids, _ := started(newHarness(t, "fcfs", Options{}).plan(s)); len(ids) != 0 {
		t.Errorf("fcfs started %v behind WIDE", ids)
	}
	h := newHarness(t, "fpfs", Options{MaxJumps: new(1)})
	d := Decider{Policy: h.p}
	dec, err := d.Decide(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if dec.Faults != nil {
		t.Fatalf("faults %v", dec.Faults)
	}
	ids, hs := started(dec.Plan)
	if !slices.Equal(ids, []string{"SMALL"}) || !slices.Equal(hs["SMALL"], []string{"a3", "b1", "c0"}) {
		t.Errorf("fpfs started %v on %v, want SMALL on a3 b1 c0 (then WIDE may not be overtaken again)", ids, hs)
	}
}

// Every policy but fcfs, fcfs-fill and fpfs rejects a co-allocated job,
// saying which policies place them; a total request on hosts of one cluster
// is an ordinary rigid job for all.
func TestPolicies_RejectCoallocated(t *testing.T) {
	for _, name := range Names() {
		if name == "fcfs" || name == "fcfs-fill" || name == "fpfs" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, name, Options{Seed: 1, Generations: 5, Population: 10})
			s := threeClusters()
			s.Queue = []QueuedJob{
				request("O", workload.Ordered, 1, 1), request("U", workload.Unordered, 1, 1),
				request("T", workload.Total, 2), job("J", 1, 1, 1, time.Minute),
			}
			pl := h.plan(s)
			if len(pl.Reject) != 3 {
				t.Fatalf("rejections %v, want O, U and T", pl.Reject)
			}
			for _, r := range pl.Reject {
				if !strings.Contains(r.Reason, "co-allocated requests are placed by fcfs, fcfs-fill and fpfs; this policy keeps a job inside one cluster") {
					t.Errorf("%s: reason %q", r.Job, r.Reason)
				}
			}
			one := Snapshot{Now: t0, Hosts: hosts(4), Queue: []QueuedJob{request("T", workload.Total, 3), request("U", workload.Unordered, 1)}}
			pl = h.plan(one)
			if ids, _ := started(pl); !slices.Equal(ids, []string{"T"}) || len(pl.Reject) != 1 || pl.Reject[0].Job != "U" {
				t.Errorf("one cluster: started %v, rejected %v; want T started, U rejected", ids, pl.Reject)
			}
		})
	}
}

// OneCluster pins ordinary jobs and leaves multicluster requests alone; with
// only requests waiting it returns the snapshot as it is.
func TestOneCluster_LeavesRequestsAlone(t *testing.T) {
	s := threeClusters()
	s.Queue = []QueuedJob{request("U", workload.Unordered, 2, 2), job("J", 1, 2, 2, time.Minute), request("T", workload.Total, 9)}
	got, pins, rej := OneCluster(s, nil)
	if rej != nil || len(pins) != 1 || pins["J"] == "" {
		t.Errorf("pins %v, rejections %v; want J pinned", pins, rej)
	}
	if len(got.Queue) != 3 || got.Queue[0].Cluster != "" || got.Queue[2].Cluster != "" || got.Queue[1].Cluster == "" {
		t.Errorf("queue %+v", got.Queue)
	}
	s.Queue = []QueuedJob{request("U", workload.Unordered, 2, 2), request("T", workload.Total, 9)}
	if got, pins, rej := OneCluster(s, nil); pins != nil || rej != nil || &got.Queue[0] != &s.Queue[0] {
		t.Error("requests only: snapshot changed")
	}
}

// fpfs and fcfs through the Decider on threeClusters while jobs of every
// kind come and go: Check refuses nothing, every job that can ever run
// starts, and the co-allocated placements respect their requests.
func TestDecider_CoallocationRun(t *testing.T) {
	for _, name := range []string{"fcfs", "fpfs"} {
		for _, fit := range []Fit{FirstFit, WorstFit} {
			t.Run(name+"/"+fit.String(), func(t *testing.T) {
				p, err := New(name, Options{Fit: fit})
				if err != nil {
					t.Fatal(err)
				}
				s := threeClusters()
				s.Running = nil
				var queue []QueuedJob
				for i := range 30 {
					var q QueuedJob
					switch i % 4 {
					case 0:
						q = request("", workload.Ordered, 1+i%4, 1+i%3, 2)
					case 1:
						q = request("", workload.Unordered, 1+i%4, 3)
					case 2:
						q = request("", workload.Total, 1+i%9)
					default:
						q = job("", 0, 1+i%4, 1+i%4, 0)
					}
					q.ID, q.Estimate = fmt.Sprintf("J%02d", i), time.Duration(10+i%7*10)*time.Second
					queue = append(queue, q)
				}
				queue = append(queue, request("NEVER", workload.Unordered, 5))
				d := Decider{Policy: p}
				started := map[string]bool{}
				var running []RunningJob
				now := t0
				for round := 0; round < 500 && len(queue) > 0; round++ {
					running = slices.DeleteFunc(running, func(r RunningJob) bool { return !r.End.After(now) })
					s.Now, s.Running, s.Queue = now, running, queue
					dec, err := d.Decide(context.Background(), s)
					if err != nil {
						t.Fatal(err)
					}
					if dec.Faults != nil {
						t.Fatalf("at %v: %v", now.Sub(t0), dec.Faults)
					}
					for _, r := range dec.Plan.Reject {
						if r.Job != "NEVER" {
							t.Errorf("rejected %v", r)
						}
						started[r.Job] = true
					}
					for _, pl := range dec.Plan.StartNow {
						started[pl.Job] = true
						running = append(running, RunningJob{ID: pl.Job, Hosts: pl.Hosts, Start: now, End: now.Add(pl.Predicted)})
					}
					queue = slices.DeleteFunc(queue, func(q QueuedJob) bool { return started[q.ID] })
					now = now.Add(5 * time.Second)
				}
				if len(queue) > 0 {
					t.Errorf("left waiting: %d jobs, first %s", len(queue), queue[0].ID)
				}
			})
		}
	}
}

func TestParseFit(t *testing.T) {
	for _, f := range []Fit{FirstFit, WorstFit} {
		if g, err := ParseFit(f.String()); err != nil || g != f {
			t.Errorf("ParseFit(%q) = %v, %v", f, g, err)
		}
	}
	if f, err := ParseFit(""); err != nil || f != FirstFit {
		t.Errorf(`ParseFit("") = %v, %v; want the default, first`, f, err)
	}
	if _, err := ParseFit("best"); err == nil {
		t.Error("best fit parsed")
	}
}
