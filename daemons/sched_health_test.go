package daemons

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"msched/hoststat"
	"msched/policy"
	"msched/spool"
)

// placements returns the hosts of every job in runnable/, by JID.
func placements(t *testing.T, sp *spool.Spool) map[string][]string {
	t.Helper()
	es, err := sp.List(spool.Runnable)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]string{}
	for _, e := range es {
		j, err := sp.Read(spool.Runnable, e.Name)
		if err != nil {
			t.Fatal(err)
		}
		m[j.JID] = j.Schedule.Hosts
	}
	return m
}

// A down host (db/health/) receives no placement, whatever the policy; a
// job that only down hosts could run waits, neither placed nor rejected;
// once a host is marked up, it is used again within a cycle or two.
func TestSched_DownHostGetsNoPlacement(t *testing.T) {
	for _, name := range []string{"ga-xms", "fifo", "easy", "conservative", "fpfs"} {
		t.Run(name, func(t *testing.T) {
			sp := schedSpool(t, 5, 1)
			db := sp.Path(spool.DirDB)
			big := putJob(t, sp, spool.Queued, &spool.Job{Name: "big", Command: []string{"true"}, Hosts: &spool.Hosts{Count: 4}})
			for _, h := range []string{"h1", "h2"} {
				if err := hoststat.MarkDown(db, h, "ssh: connect to host "+h+" port 22: Connection refused", time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			pol, err := policy.New(name, policy.Options{Seed: 1, Generations: 10})
			if err != nil {
				t.Fatal(err)
			}
			d := &Sched{Env: testEnv(t, sp), Hosts: localHosts(4), Policy: pol, Replan: 20 * time.Millisecond}
			stop := startDaemon(t, d.Run)
			eventually(t, "two jobs runnable", func() bool { return jobsIn(t, sp, spool.Runnable) == 2 })
			time.Sleep(200 * time.Millisecond) // ten replans: nothing more may be placed
			pl := placements(t, sp)
			if len(pl) != 2 {
				t.Fatalf("placed %v with two hosts up", pl)
			}
			for jid, hs := range pl {
				if slices.Contains(hs, "h1") || slices.Contains(hs, "h2") {
					t.Fatalf("%s placed on down hosts %v", jid, hs)
				}
			}
			if n := jobsIn(t, sp, spool.Rejected); n != 0 {
				t.Fatalf("%d jobs rejected while hosts are down", n)
			}
			if _, err := hoststat.MarkUp(db, "h1", time.Now()); err != nil {
				t.Fatal(err)
			}
			eventually(t, "a job placed on h1, back up", func() bool {
				for _, hs := range placements(t, sp) {
					if slices.Equal(hs, []string{"h1"}) {
						return true
					}
				}
				return false
			})
			for jid, hs := range placements(t, sp) {
				if slices.Contains(hs, "h2") || jid == big {
					t.Fatalf("%s placed on %v with h2 down", jid, hs)
				}
			}
			stop()
		})
	}
}

// With hosts in two clusters every job is placed inside one, whatever the
// policy, and a job that no one cluster can hold is rejected with why.
func TestSched_OneClusterPerJob(t *testing.T) {
	hosts := []hoststat.Host{
		{Name: "a0", Arch: "generic", Cluster: "a"}, {Name: "b0", Arch: "generic", Cluster: "b"},
		{Name: "a1", Arch: "generic", Cluster: "a"}, {Name: "b1", Arch: "generic", Cluster: "b"},
		{Name: "b2", Arch: "generic", Cluster: "b"},
	}
	for _, name := range []string{"ga-xms", "fifo", "greedy"} {
		t.Run(name, func(t *testing.T) {
			sp := schedSpool(t, 0, 1)
			jobs := map[string]int{}
			for i, n := range []int{2, 2, 1, 4} {
				jid := putJob(t, sp, spool.Queued, &spool.Job{Name: fmt.Sprintf("j%d", i), Command: []string{"true"},
					Hosts: &spool.Hosts{Min: n, Max: 5}})
				jobs[jid] = n
			}
			pol, err := policy.New(name, policy.Options{Seed: 1, Generations: 10})
			if err != nil {
				t.Fatal(err)
			}
			d := &Sched{Env: testEnv(t, sp), Hosts: hosts, Policy: pol, Replan: 20 * time.Millisecond}
			stop := startDaemon(t, d.Run)
			eventually(t, "one job rejected", func() bool { return jobsIn(t, sp, spool.Rejected) == 1 })
			eventually(t, "two jobs placed", func() bool { return jobsIn(t, sp, spool.Runnable) >= 2 })
			stop()
			for jid, hs := range placements(t, sp) {
				c := hs[0][:1]
				for _, h := range hs {
					if h[:1] != c {
						t.Errorf("%s spans clusters: %v", jid, hs)
					}
				}
				if len(hs) < jobs[jid] {
					t.Errorf("%s on %v, needs %d", jid, hs, jobs[jid])
				}
			}
			es, _ := sp.List(spool.Rejected)
			j, err := sp.Read(spool.Rejected, es[0].Name)
			if err != nil {
				t.Fatal(err)
			}
			if jobs[j.JID] != 4 || !strings.Contains(j.Reason, "in one cluster") {
				t.Errorf("rejected %s (needs %d): %q", j.JID, jobs[j.JID], j.Reason)
			}
		})
	}
}
