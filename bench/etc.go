package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"text/tabwriter"
	"time"

	"msched/ga"
)

// ETCConfig is the setting of `msched bench etc`: Braun et al.'s ETC
// instances (one-host tasks on heterogeneous machines), the GA seeded with
// Min-min in its first population (as Braun's GA was) against Min-min,
// Max-min, Sufferage and the lower bound, all minimising makespan.
type ETCConfig struct {
	Evaluations int           // GA budget per instance; default 200,000
	TimeLimit   time.Duration // wall-time cap per instance; default 10 s
	Seed        int64         // GA seed
}

// ETCResult is one instance's line of --json output.
type ETCResult struct {
	Instance   string  `json:"instance"`
	LowerBound float64 `json:"lower_bound"`
	MinMin     float64 `json:"min_min"`
	MaxMin     float64 `json:"max_min"`
	Sufferage  float64 `json:"sufferage"`
	GA         float64 `json:"ga"`
	Seconds    float64 `json:"seconds"`
	// Evaluations the GA made within its budget and time cap.
	Evaluations int `json:"evaluations"`
}

// ETC runs the benchmark on one instance.
func ETC(ctx context.Context, name string, etc [][]float64, cfg ETCConfig) (ETCResult, error) {
	if cfg.Evaluations <= 0 {
		cfg.Evaluations = 200000
	}
	if cfg.TimeLimit <= 0 {
		cfg.TimeLimit = 10 * time.Second
	}
	start := time.Now()
	p := ga.FromETC(etc)
	r := ETCResult{Instance: name, LowerBound: ga.LowerBound(p)}
	var s ga.Schedule
	var seed *ga.Chromosome
	for _, h := range []struct {
		f   func(*ga.Problem) (*ga.Chromosome, error)
		out *float64
	}{{ga.MinMin, &r.MinMin}, {ga.MaxMin, &r.MaxMin}, {ga.Sufferage, &r.Sufferage}} {
		c, err := h.f(p)
		if err != nil {
			return r, err
		}
		*h.out = ga.Evaluate(p, c, ga.MS, &s)
		if seed == nil {
			seed = c // Min-min
		}
	}
	g, err := ga.New(p, ga.Config{Cost: ga.MS}, rand.New(rand.NewSource(cfg.Seed)))
	if err != nil {
		return r, err
	}
	if err := g.Seed(seed); err != nil {
		return r, err
	}
	rctx, cancel := context.WithTimeout(ctx, cfg.TimeLimit-time.Since(start))
	defer cancel()
	if err := g.Run(rctx, cfg.Evaluations); err != nil && !(errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil) {
		return r, err
	}
	_, r.GA = g.Best()
	r.Evaluations = g.Evaluations()
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}

// ETCTable writes results as a table with the GA's gain over Min-min.
func ETCTable(w io.Writer, rs []ETCResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "instance\tlower bound\tMin-min\tMax-min\tSufferage\tGA\tGA vs Min-min\tevals\tseconds\t\n")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%+.2f%%\t%d\t%.2f\t\n", r.Instance, r.LowerBound, r.MinMin,
			r.MaxMin, r.Sufferage, r.GA, 100*(r.GA-r.MinMin)/r.MinMin, r.Evaluations, r.Seconds)
	}
	return tw.Flush()
}
