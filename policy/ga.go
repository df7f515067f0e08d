package policy

import (
	"context"
	"math/rand"
	"sync/atomic"
	"time"

	"msched/ga"
)

var (
	_ = register("ga-xms", func(o Options) (Policy, error) { return newGA("ga-xms", ga.XMS, o), nil })
	_ = register("ga-ms", func(o Options) (Policy, error) { return newGA("ga-ms", ga.MS, o), nil })
	_ = register("ga-xms-continuous", func(o Options) (Policy, error) {
		return newGA("ga-xms-continuous", ga.XMSContinuous, o), nil
	})
)

// gaPolicy is the MS paper's real-time GA scheduler. Its population lives
// across decisions: each Plan updates it to the new snapshot (finished jobs
// gone, new jobs inserted, the new base of running work), evolves it for the
// budget, and starts the jobs at the bottom of the best schedule whose hosts
// are all free now. Jobs beyond the window wait in arrival order.
//
// No job waits forever: a job overtaken by MaxJumps later jobs leads every
// schedule the GA considers (ga.Problem.First), so it is placed first and no
// later job may take a host it needs (after FPFS's MaxJumps). The GA then
// optimises the rest around it, as the schedule it will dispatch.
type gaPolicy struct {
	name  string
	cost  ga.CostKind
	o     Options
	b     *builder
	g     *ga.GA
	rng   *rand.Rand
	jumps map[string]int
	gens  atomic.Int64 // read by the stats publisher while Plan runs
	last  time.Time    // when the previous decision's evolution ended
}

func newGA(name string, cost ga.CostKind, o Options) *gaPolicy {
	o = o.withDefaults()
	return &gaPolicy{name: name, cost: cost, o: o,
		b:     newBuilder(o.Predictor, o.Fallback, o.Log),
		rng:   rand.New(rand.NewSource(o.Seed)),
		jumps: map[string]int{}}
}

func (p *gaPolicy) Name() string { return p.name }

// Reads implements Policy: the GA plans the window (Options.Window).
func (p *gaPolicy) Reads() int { return p.o.Window }

// Generations is the number of GA generations run so far (for metrics);
// safe to call while Plan runs.
func (p *gaPolicy) Generations() int64 { return p.gens.Load() }

// Plan implements Policy.
func (p *gaPolicy) Plan(ctx context.Context, s Snapshot) (Plan, error) {
	prob, rejects := p.b.build(ctx, &s, p.o.window(s.Queue))
	if len(prob.Tasks) == 0 {
		p.g = nil
		return Plan{Reject: rejects}, nil
	}
	prob.First = p.starved(prob)
	if err := p.evolve(ctx, prob); err != nil {
		return Plan{}, err
	}
	best, _ := p.g.Best()
	plan := p.b.planFrom(&s, prob, p.dispatchable(prob, best))
	plan.Reject = rejects
	p.countJumps(s.Queue, plan.StartNow)
	return plan, nil
}

// dispatchable returns the schedule to dispatch for the GA's best c: c
// aligned (the GA's order and host counts, each job on the hosts free
// first, so that no job waits for a busy host while another it may use is
// free), unless alignment makes it cost more. Alignment is greedy: under XMS
// it can hand a job that must wait (a starved one above all) the hosts that
// are free now, which the GA had kept for jobs that start now on them.
func (p *gaPolicy) dispatchable(prob *ga.Problem, c *ga.Chromosome) *ga.Chromosome {
	a := ga.Align(prob, c)
	var s ga.Schedule
	if ga.Evaluate(prob, a, p.cost, &s) > ga.Evaluate(prob, c, p.cost, &s) {
		return c
	}
	return a
}

// evolve brings the population to prob and runs the decision's budget.
func (p *gaPolicy) evolve(ctx context.Context, prob *ga.Problem) error {
	if p.g == nil {
		g, err := ga.New(prob, ga.Config{Population: p.o.Population, Cost: p.cost, TieBreak: true, LocalSearch: p.o.LocalSearch}, p.rng)
		if err != nil {
			return err
		}
		p.g = g
	} else if err := p.g.Update(prob); err != nil {
		return err
	}
	// Seed the list heuristics' schedules so that the GA is never worse than
	// the best of them (they are cheap next to a generation's decodes).
	for _, h := range []func(*ga.Problem) (*ga.Chromosome, error){ga.Greedy, ga.FIFO} {
		if c, err := h(prob); err == nil {
			if err := p.g.Seed(c); err != nil {
				return err
			}
		}
	}
	start, gens := time.Now(), 0
	best, stall := p.g.BestCost(), 0
	// Stall applies only right after another decision (a burst), not to
	// the replans of a quiet queue, which keep the whole budget.
	stallOK := p.o.Stall > 0 && start.Sub(p.last) < stallWithin
	defer func() { p.last = time.Now() }()
	for {
		if err := p.g.Step(ctx); err != nil {
			return err
		}
		gens++
		if c := p.g.BestCost(); c < best {
			best, stall = c, 0
		} else {
			stall++
		}
		if p.o.TimeBudget > 0 {
			if time.Since(start) >= p.o.TimeBudget || stallOK && stall >= p.o.Stall {
				break
			}
		} else if gens >= p.o.Generations {
			break
		}
	}
	p.gens.Add(int64(gens))
	return nil
}

// stallWithin is how soon after the previous decision a decision counts as
// part of a burst, for Options.Stall.
const stallWithin = 200 * time.Millisecond

// starved returns, as ga.Problem.First, the oldest job that has been
// overtaken MaxJumps times (prob's tasks are in arrival order), or nil.
func (p *gaPolicy) starved(prob *ga.Problem) []int {
	maxJumps := *p.o.MaxJumps
	if maxJumps < 0 {
		return nil
	}
	for k, t := range prob.Tasks {
		if p.jumps[t.ID] >= maxJumps {
			return []int{k}
		}
	}
	return nil
}

// countJumps adds one overtake to every queued job that arrived before a job
// that starts now and does not start itself; a job that starts leaves the
// count.
func (p *gaPolicy) countJumps(queue []QueuedJob, started []Placement) {
	if len(started) == 0 {
		return
	}
	starts := make(map[string]bool, len(started))
	for _, pl := range started {
		starts[pl.Job] = true
	}
	// Position in arrival order of the latest job that starts now.
	last := -1
	for i, q := range queue {
		if starts[q.ID] {
			last = i
		}
	}
	live := make(map[string]int, len(queue))
	for i, q := range queue {
		if starts[q.ID] {
			continue
		}
		n := p.jumps[q.ID]
		if i < last {
			// Overtaken by every later job that starts now.
			for _, r := range queue[i+1 : last+1] {
				if starts[r.ID] {
					n++
				}
			}
		}
		if n > 0 {
			live[q.ID] = n
		}
	}
	p.jumps = live
}
