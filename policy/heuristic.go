package policy

import (
	"context"

	"msched/ga"
)

var (
	_ = register("fifo", func(o Options) (Policy, error) { return newList("fifo", ga.FIFO, o), nil })
	_ = register("greedy", func(o Options) (Policy, error) { return newList("greedy", ga.Greedy, o), nil })
)

// listPolicy plans with one of the core's list heuristics over the window:
// fifo (arrival order, each job on its peak-speedup host count, earliest
// free hosts) or greedy (longest job first, the host count and hosts that
// finish it earliest).
type listPolicy struct {
	name string
	h    func(*ga.Problem) (*ga.Chromosome, error)
	o    Options
	b    *builder
}

func newList(name string, h func(*ga.Problem) (*ga.Chromosome, error), o Options) *listPolicy {
	o = o.withDefaults()
	return &listPolicy{name: name, h: h, o: o, b: newBuilder(o.Predictor, o.Fallback, o.Log)}
}

func (p *listPolicy) Name() string { return p.name }

// Reads implements Policy: the heuristic plans the window (Options.Window).
func (p *listPolicy) Reads() int { return p.o.Window }

// Plan implements Policy.
func (p *listPolicy) Plan(ctx context.Context, s Snapshot) (Plan, error) {
	prob, rejects := p.b.build(ctx, &s, p.o.window(s.Queue))
	if len(prob.Tasks) == 0 {
		return Plan{Reject: rejects}, nil
	}
	c, err := p.h(prob)
	if err != nil {
		return Plan{}, err
	}
	plan := p.b.planFrom(&s, prob, c)
	plan.Reject = rejects
	return plan, nil
}
