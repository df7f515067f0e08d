package policy

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// planBenchSnapshot is a busy machine of procs hosts (every host running a
// job of 1 to procs/8 hosts, ending within 10 h) and queued jobs of
// 1 to procs/4 hosts (mostly powers of two) with estimates from 1 min to
// 12 h, as in the SDSC-SP2 sample.
func planBenchSnapshot(procs, queued int) Snapshot {
	rng := rand.New(rand.NewSource(1))
	s := Snapshot{Now: t0, Hosts: hosts(procs)}
	for h := 0; h < procs; {
		n := min(1+rng.Intn(max(procs/8, 1)), procs-h)
		var names []string
		for x := 0; x < n; x++ {
			names = append(names, s.Hosts[h+x].Name)
		}
		h += n
		s.Running = append(s.Running, RunningJob{ID: fmt.Sprintf("r%d", h), Hosts: names, Start: t0,
			End: t0.Add(time.Duration(1+rng.Intn(36000)) * time.Second)})
	}
	for i := 0; i < queued; i++ {
		n := 1 << rng.Intn(6)
		n = min(n, max(procs/4, 1))
		est := time.Duration(60+rng.Intn(12*3600)) * time.Second
		s.Queue = append(s.Queue, job(fmt.Sprintf("q%03d", i), -i, n, n, est))
	}
	return s
}

// One decode of a 200-job chromosome, and one generation of the default
// population, on 128 and 1,024 hosts.
func BenchmarkPlanGA(b *testing.B) {
	for _, procs := range []int{128, 1024} {
		s := planBenchSnapshot(procs, 200)
		p, err := newPlanGA(Options{Seed: 1, Generations: 1})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Plan(context.Background(), s); err != nil {
			b.Fatal(err)
		}
		// State as Plan left it: this decision's jobs, profile and
		// population.
		p.m.load(context.Background(), &s)
		p.buildBase()
		if err := p.loadJobs(); err != nil {
			b.Fatal(err)
		}
		p.carried()
		if _, err := p.evolve(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("decode/jobs=200/procs=%d", procs), func(b *testing.B) {
			in := &p.pop[0]
			for b.Loop() {
				p.decode(in.ord, in.dom, &p.dec)
			}
		})
		b.Run(fmt.Sprintf("generation/jobs=200/procs=%d/pop=%d", procs, len(p.pop)), func(b *testing.B) {
			for b.Loop() {
				p.step(time.Time{})
			}
		})
	}
}
