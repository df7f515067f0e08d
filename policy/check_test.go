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

// twoClusters is cluster a (3 generic hosts) and cluster b (3 generic, 1
// sparc), in an order that mixes them.
func twoClusters() []Host {
	return []Host{
		{Name: "a0", Arch: "generic", Cluster: "a"}, {Name: "b0", Arch: "generic", Cluster: "b"},
		{Name: "a1", Arch: "generic", Cluster: "a"}, {Name: "b1", Arch: "generic", Cluster: "b"},
		{Name: "a2", Arch: "generic", Cluster: "a"}, {Name: "b2", Arch: "generic", Cluster: "b"},
		{Name: "b3", Arch: "sparc", Cluster: "b"},
	}
}

// now and later are placements at t0 and a minute after, for one minute.
func now(job string, hosts ...string) Placement {
	return Placement{Job: job, Hosts: hosts, Start: t0, Predicted: time.Minute}
}

func later(job string, hosts ...string) Placement {
	return Placement{Job: job, Hosts: hosts, Start: t0.Add(time.Minute), Predicted: time.Minute}
}

// checkFaults wants exactly the faults want, in order, each "part job:
// reason" starting with its entry.
func checkFaults(t *testing.T, faults []Fault, want []string) {
	t.Helper()
	if len(faults) != len(want) {
		t.Fatalf("faults %v, want %d", faults, len(want))
	}
	for i, f := range faults {
		if got := f.Part + " " + f.Job + ": " + f.Reason; !strings.HasPrefix(got, want[i]) {
			t.Errorf("fault %d: %q, want %q…", i, got, want[i])
		}
	}
}

func TestCheck(t *testing.T) {
	s := Snapshot{Now: t0, Hosts: twoClusters(),
		Running: []RunningJob{{ID: "R", Hosts: []string{"a0"}, Start: t0.Add(-time.Minute), End: t0.Add(time.Minute)}},
		Queue: []QueuedJob{
			job("J1", 0, 1, 2, time.Minute), job("J2", 1, 2, 2, time.Minute),
			{ID: "S", Min: 1, Max: 1, Arch: "sparc"}, {ID: "C", Min: 1, Max: 3, Cluster: "a"},
		}}
	s.Hosts[5].FreeAt = t0.Add(time.Hour) // b2: down, or busy
	for _, tc := range []struct {
		name string
		plan Plan
		want []string // "part job: reason fragment"
	}{
		{"sound", Plan{StartNow: []Placement{now("J1", "a1", "a2"), now("J2", "b0", "b1"), now("S", "b3")}, Later: []Placement{later("C", "a0")}}, nil},
		{"unknown job", Plan{StartNow: []Placement{now("X", "a1")}, Reject: []Rejection{{Job: "Y"}}}, []string{"reject Y", "start X: not a waiting job"}},
		{"twice", Plan{StartNow: []Placement{now("J1", "a1"), now("J1", "a2")}, Later: []Placement{later("J1", "b0")}}, []string{"start J1: already in start", "later J1: already in start"}},
		{"rejected and started", Plan{Reject: []Rejection{{Job: "J1"}}, StartNow: []Placement{now("J1", "a1")}}, []string{"start J1: already in reject"}},
		{"count", Plan{StartNow: []Placement{now("J1", "a1", "a2", "b0"), now("J2", "b1")}, Later: []Placement{later("C", "a0", "a1", "a2", "a0")}},
			[]string{"start J1: 3 hosts", "start J2: 1 hosts", "later C: 4 hosts"}},
		{"later may name too few hosts", Plan{Later: []Placement{later("J2"), later("C", "a1")}}, nil},
		{"unknown host", Plan{StartNow: []Placement{now("J1", "zz")}}, []string{`start J1: unknown host "zz"`}},
		{"host twice", Plan{StartNow: []Placement{now("J2", "a1", "a1")}}, []string{"start J2: host a1 given twice"}},
		{"busy", Plan{StartNow: []Placement{now("J1", "a0"), now("J2", "b1", "b2")}}, []string{"start J1: hosts not free: a0 (running job R)", "start J2: hosts not free: b2 (busy until"}},
		{"double booked", Plan{StartNow: []Placement{now("J1", "a1"), now("C", "a1")}}, []string{"start C: hosts not free: a1 (started J1)"}},
		{"arch", Plan{StartNow: []Placement{now("S", "b0")}}, []string{"start S: host b0 is generic, the job wants arch sparc"}},
		{"cluster constraint", Plan{Later: []Placement{later("C", "b0")}}, []string{`later C: host b0 is in cluster "b", the job wants "a"`}},
		{"spans clusters", Plan{StartNow: []Placement{now("J2", "a1", "b0")}, Later: []Placement{later("J1", "b1", "a2")}},
			[]string{`start J2: hosts in clusters "a" and "b"`, `later J1: hosts in clusters "b" and "a"`}},
		{"not now", Plan{StartNow: []Placement{{Job: "J1", Hosts: []string{"a1"}, Start: t0.Add(time.Second)}}}, []string{"start J1: starts now at"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkFaults(t, Check(s, tc.plan), tc.want) })
	}
	// With one cluster a placement may use any hosts.
	one := Snapshot{Now: t0, Hosts: hosts(3), Queue: []QueuedJob{job("J", 0, 2, 2, 0)}}
	if f := Check(one, Plan{StartNow: []Placement{now("J", "h0", "h2")}}); f != nil {
		t.Errorf("one cluster: %v", f)
	}
}

func TestOneCluster_Choice(t *testing.T) {
	hs := twoClusters()
	q := []QueuedJob{
		job("J1", 0, 2, 6, 10*time.Minute), // both can start it now; b has more hosts free (a0 runs R)
		job("J2", 1, 3, 3, 0),              // b's generic hosts are taken by J1: a, once R ends
		{ID: "S", Min: 1, Max: 1, Arch: "sparc"},
		{ID: "C", Min: 1, Max: 1, Cluster: "a"},
		job("BIG", 2, 5, 5, 0), // no cluster has 5 hosts
		{ID: "NOSPARC", Min: 2, Arch: "sparc"},
	}
	s := Snapshot{Now: t0, Hosts: hs, Queue: q,
		Running: []RunningJob{{ID: "R", Hosts: []string{"a0"}, Start: t0, End: t0.Add(time.Minute)}}}
	got, pins, rej := OneCluster(s, nil)
	want := map[string]string{"J1": "b", "J2": "a", "S": "b"}
	if fmt.Sprint(pins) != fmt.Sprint(want) {
		t.Errorf("pins %v, want %v", pins, want)
	}
	if len(rej) != 2 || rej[0] != (Rejection{Job: "BIG", Reason: "needs at least 5 hosts in one cluster (a job runs inside one cluster); the largest cluster has 4"}) ||
		rej[1] != (Rejection{Job: "NOSPARC", Reason: "needs at least 2 hosts of arch sparc in one cluster (a job runs inside one cluster); the largest cluster has 1"}) {
		t.Errorf("rejections %+v", rej)
	}
	var ids []string
	for _, g := range got.Queue {
		ids = append(ids, g.ID+":"+g.Cluster)
	}
	if strings.Join(ids, " ") != "J1:b J2:a S:b C:a" {
		t.Errorf("queue %v", ids)
	}
	if s.Queue[0].Cluster != "" {
		t.Error("the caller's queue was changed")
	}

	// Equal clusters: the previous choice stands, else the larger cluster.
	eq := Snapshot{Now: t0, Hosts: hosts(4), Queue: []QueuedJob{job("J", 0, 1, 1, 0)}}
	for i := range eq.Hosts {
		eq.Hosts[i].Cluster = []string{"x", "y", "y", "x"}[i]
	}
	if _, p, _ := OneCluster(eq, map[string]string{"J": "y"}); p["J"] != "y" {
		t.Errorf("tie: %v, want the previous y", p)
	}
	if _, p, _ := OneCluster(eq, map[string]string{"J": "x"}); p["J"] != "x" {
		t.Errorf("tie: %v, want the previous x", p)
	}
	eq.Hosts = append(eq.Hosts, Host{Name: "h4", Arch: "generic", Cluster: "y"})
	if _, p, _ := OneCluster(eq, nil); p["J"] != "y" {
		t.Errorf("tie: %v, want the larger y", p)
	}
	// A cluster busy for long (its hosts down) loses to one free sooner,
	// whatever the previous choice.
	for i := range eq.Hosts {
		if eq.Hosts[i].Cluster == "y" {
			eq.Hosts[i].FreeAt = t0.Add(365 * 24 * time.Hour)
		}
	}
	if _, p, _ := OneCluster(eq, map[string]string{"J": "y"}); p["J"] != "x" {
		t.Errorf("y down: %v, want x", p)
	}

	// One cluster: nothing to do.
	if got, p, r := OneCluster(Snapshot{Now: t0, Hosts: hosts(2), Queue: q}, nil); p != nil || r != nil || &got.Queue[0] != &q[0] {
		t.Error("one cluster: snapshot changed")
	}
}

// Every policy, through the Decider (so OneCluster), places every job
// inside one cluster, and Check finds nothing to refuse, while jobs come and
// go and some hosts are down (busy until far ahead).
func TestOneCluster_EveryPolicy(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			p, err := New(name, Options{Seed: 1, Generations: 10, Population: 20})
			if err != nil {
				t.Fatal(err)
			}
			hs := twoClusters()
			hs[1].FreeAt = t0.Add(365 * 24 * time.Hour) // b0 is down for the whole run
			var queue []QueuedJob
			for i := 0; i < 14; i++ {
				q := job(fmt.Sprintf("J%02d", i), i, 1+i%3, 1+i%3+i%2*3, time.Duration(30+10*(i%4))*time.Second)
				if i == 5 {
					q.Arch, q.Min, q.Max = "sparc", 1, 1
				}
				queue = append(queue, q)
			}
			queue = append(queue, job("BIG", 20, 5, 5, time.Minute))
			var running []RunningJob
			path := Decider{Policy: p}
			started, rejected := map[string]bool{}, map[string]bool{}
			now := t0
			for round := 0; round < 200 && len(queue) > 0; round++ {
				var next []RunningJob
				for _, r := range running {
					if r.End.After(now) {
						next = append(next, r)
					}
				}
				running = next
				d, err := path.Decide(context.Background(), Snapshot{Now: now, Hosts: hs, Running: running, Queue: queue})
				if err != nil {
					t.Fatal(err)
				}
				if len(d.Faults) > 0 {
					t.Fatalf("at %s: %v", now.Sub(t0), d.Faults)
				}
				plan := d.Plan
				for _, r := range plan.Reject {
					rejected[r.Job] = true
				}
				for _, pl := range plan.StartNow {
					started[pl.Job] = true
					running = append(running, RunningJob{ID: pl.Job, Hosts: pl.Hosts, Start: now, End: now.Add(pl.Predicted)})
				}
				queue = slices.DeleteFunc(queue, func(q QueuedJob) bool { return started[q.ID] || rejected[q.ID] })
				now = now.Add(10 * time.Second)
			}
			if len(queue) > 0 || !rejected["BIG"] || len(started) != 14 {
				t.Errorf("left waiting %d, rejected %v, started %d", len(queue), rejected, len(started))
			}
		})
	}
}

// Check reads a co-allocated placement component by component: each
// component inside one cluster, an unordered request's in distinct clusters,
// an ordered request's component i in the i-th cluster; a total request's
// hosts may be anywhere. An ordinary job still runs inside one cluster.
func TestCheck_Coallocated(t *testing.T) {
	s := threeClusters() // a0..a3, b0..b3, c0..c3; R holds a0, a1, a2, b0
	s.Running = nil
	s.Queue = []QueuedJob{
		request("O", workload.Ordered, 2, 1), request("U", workload.Unordered, 2, 1),
		request("T", workload.Total, 4), job("J", 0, 2, 2, time.Minute),
	}
	for _, tc := range []struct {
		name string
		plan Plan
		want []string // "part job: reason fragment"
	}{
		{"sound", Plan{StartNow: []Placement{now("O", "a0", "a1", "b0"), now("U", "c0", "c1", "a2"), now("T", "a3", "b1", "c2", "b2")},
			Later: []Placement{later("J", "b0", "b1")}}, nil},
		{"unordered in any clusters", Plan{StartNow: []Placement{now("U", "b3", "b1", "c3")}}, nil},
		{"ordered in the wrong cluster", Plan{StartNow: []Placement{now("O", "b0", "b1", "a0")}},
			[]string{`start O: component 1 is in cluster "b": an ordered request's component 1 goes to the 1st cluster, "a"`}},
		{"ordered second component", Plan{Later: []Placement{later("O", "a0", "a1", "c0")}},
			[]string{`later O: component 2 is in cluster "c": an ordered request's component 2 goes to the 2nd cluster, "b"`}},
		{"component across clusters", Plan{StartNow: []Placement{now("O", "a0", "b0", "b1"), now("U", "c0", "a1", "b2")}},
			[]string{`start O: component 1 (hosts 1 to 2) is in clusters "a" and "b": a component runs inside one cluster`,
				`start U: component 1 (hosts 1 to 2) is in clusters "c" and "a"`}},
		{"unordered in one cluster", Plan{StartNow: []Placement{now("U", "a0", "a1", "a2")}},
			[]string{`start U: components 1 and 2 are both in cluster "a": an unordered request's components go to distinct clusters`}},
		{"too few hosts", Plan{StartNow: []Placement{now("U", "a0", "b1")}, Later: []Placement{later("O", "a0", "a1")}},
			[]string{"start U: 2 hosts, the job takes 3 to 3", "later O: 2 hosts, the ordered request's components [2 1] take 3"}},
		{"total anywhere, ordinary job in one cluster", Plan{StartNow: []Placement{now("T", "a0", "b0", "c0", "c1"), now("J", "a1", "b1")}},
			[]string{`start J: hosts in clusters "a" and "b": a job runs inside one cluster`}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkFaults(t, Check(s, tc.plan), tc.want) })
	}
}
