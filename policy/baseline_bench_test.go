package policy

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// benchSnapshot is a loaded machine: m hosts, r running jobs holding all
// but a few hosts with ends over the next day, q queued jobs (mostly small,
// some wide) with estimates up to a day, as the simulator would show it.
func benchSnapshot(m, r, q int) Snapshot {
	rng := rand.New(rand.NewSource(1))
	s := Snapshot{Now: t0, Hosts: hosts(m)}
	perm := rng.Perm(m)
	per := max((m-4)/r, 1)
	for i := 0; i < r && len(perm) >= per; i++ {
		var names []string
		for _, h := range perm[:per] {
			names = append(names, s.Hosts[h].Name)
		}
		perm = perm[per:]
		end := t0.Add(time.Duration(1+rng.Intn(86400)) * time.Second)
		s.Running = append(s.Running, RunningJob{ID: fmt.Sprintf("r%d", i), Hosts: names, End: end})
	}
	for i := 0; i < q; i++ {
		n := 1 + rng.Intn(4)
		if rng.Intn(5) == 0 {
			n = 1 + rng.Intn(m/2)
		}
		s.Queue = append(s.Queue, job(fmt.Sprintf("q%d", i), i, n, n, time.Duration(1+rng.Intn(86400))*time.Second))
	}
	return s
}

func benchPlan(b *testing.B, name string, m, r, q int) { benchPlanOn(b, name, benchSnapshot(m, r, q)) }

// benchPlanOn times policy name's Plan on s.
func benchPlanOn(b *testing.B, name string, s Snapshot) {
	p, err := New(name, Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Plan(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
}

// The reference point: 128 hosts, 100 running, 200 queued.
func BenchmarkEASYPlan(b *testing.B)         { benchPlan(b, "easy", 128, 100, 200) }
func BenchmarkEASYPlan1000(b *testing.B)     { benchPlan(b, "easy", 1000, 400, 1000) }
func BenchmarkConservativePlan(b *testing.B) { benchPlan(b, "conservative", 128, 100, 200) }
func BenchmarkFCFSFillPlan(b *testing.B)     { benchPlan(b, "fcfs-fill", 128, 100, 200) }
func BenchmarkFPFSPlan(b *testing.B)         { benchPlan(b, "fpfs", 128, 100, 200) }
func BenchmarkLWFPlan(b *testing.B)          { benchPlan(b, "lwf", 128, 100, 200) }

// scojo-p with a long queue behind a head that waits and no job fitting
// the hole (adaptive backfilling sizes jobs by their own targets, at most
// scojoMaxOwnTargets of them): 128 hosts, half held for a day, a rigid
// head of 100, then q long moldable jobs of 2..8 hosts.
func benchScojoLongQueue(b *testing.B, q int) {
	s := Snapshot{Now: t0, Hosts: hosts(128)}
	var held []string
	for i := range 64 {
		held = append(held, s.Hosts[i].Name)
	}
	s.Running = []RunningJob{running("R", 24*time.Hour, held...)}
	s.Queue = append(s.Queue, rigidJob("H", longAgo, 100, time.Hour))
	for i := range q {
		s.Queue = append(s.Queue, moldJob(fmt.Sprintf("M%d", i), longAgo.Add(time.Duration(i+1)*time.Second), 48*time.Hour))
	}
	benchPlanOn(b, "scojo-p", s)
}

func BenchmarkScojoPPlanQueue500(b *testing.B)  { benchScojoLongQueue(b, 500) }
func BenchmarkScojoPPlanQueue5000(b *testing.B) { benchScojoLongQueue(b, 5000) }

// cirne-berman sizing a queue of q moldable jobs it has not seen (2..8
// hosts, 1 min to a day at N_opt) on 128 hosts, half held by running jobs
// ending over the next day: its first call after a restart, when every
// waiting job is sized in one call (the worst case), and a later call in
// which one job is new (the usual one).
func benchCirneQueue(b *testing.B, q int, first bool) {
	rng := rand.New(rand.NewSource(1))
	s := Snapshot{Now: t0, Hosts: hosts(128)}
	for i := range 32 {
		s.Running = append(s.Running, running(fmt.Sprintf("R%d", i), time.Duration(1+rng.Intn(86400))*time.Second,
			s.Hosts[2*i].Name, s.Hosts[2*i+1].Name))
	}
	for i := range q {
		s.Queue = append(s.Queue, moldJob(fmt.Sprintf("M%d", i), longAgo.Add(time.Duration(i+1)*time.Second),
			time.Duration(60+rng.Intn(86400))*time.Second))
	}
	ctx := context.Background()
	p, err := New("cirne-berman", Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.Plan(ctx, s); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if first {
			if p, err = New("cirne-berman", Options{}); err != nil {
				b.Fatal(err)
			}
		} else {
			s.Queue[len(s.Queue)-1].ID = fmt.Sprintf("N%d", i)
		}
		if _, err := p.Plan(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCirnePlanFirst500(b *testing.B)  { benchCirneQueue(b, 500, true) }
func BenchmarkCirnePlanFirst5000(b *testing.B) { benchCirneQueue(b, 5000, true) }
func BenchmarkCirnePlanNew500(b *testing.B)    { benchCirneQueue(b, 500, false) }
func BenchmarkCirnePlanNew5000(b *testing.B)   { benchCirneQueue(b, 5000, false) }
