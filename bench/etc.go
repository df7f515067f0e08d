package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"text/tabwriter"
	"time"

	"msched/ga"
)

// ETCConfig is the setting of `msched bench etc`: Braun et al.'s ETC
// instances (one-host tasks on heterogeneous machines), the memetic GA
// (ga.Memetic) whose first population is Min-min's mapping (as Braun's GA's
// held it) and the LP relaxation's dual responses (ga.DualResponses),
// against Min-min, Max-min, Sufferage, an iterated local search from
// Min-min given the same time (ga.ILS), and the LP relaxation bound, all
// minimising makespan. The LP is solved within the GA's time.
type ETCConfig struct {
	// Evaluations is the GA's and the ILS's budget per instance; default:
	// unlimited (time decides). The GA's eight seeds are descended and
	// evaluated as they enter, and their evaluations count against the
	// budget; a budget below eight is exceeded by them.
	Evaluations int
	TimeLimit   time.Duration // wall time of the GA, and again of the ILS, per instance; default 10 s
	Seed        int64         // GA and ILS seed
	// ILSFromDual starts the ILS from the GA's first dual response, at the
	// LP's own weights, instead of Min-min: a start as good as the GA's, to
	// tell how much of the GA's lead over the ILS is its start.
	ILSFromDual bool
}

// ETCResult is one instance's line of --json output.
type ETCResult struct {
	Instance string `json:"instance"`
	// LPBound is the LP relaxation bound (ga.LPBound), exact to LPGap.
	LPBound float64 `json:"lp_bound"`
	LPGap   float64 `json:"lp_gap"`
	// LowerBound is ga.LowerBound's classical bound, far looser.
	LowerBound float64 `json:"lower_bound"`
	MinMin     float64 `json:"min_min"`
	MaxMin     float64 `json:"max_min"`
	Sufferage  float64 `json:"sufferage"`
	ILS        float64 `json:"ils"`
	// ILSStart is where the ILS started: "min-min" (the baseline) or "dual"
	// (--ils-from-dual: the GA's first dual response, the LP's time not
	// charged to the ILS).
	ILSStart string  `json:"ils_start"`
	GA       float64 `json:"ga"`
	// GAOverLP and ILSOverLP are the makespans over the LP bound.
	GAOverLP  float64 `json:"ga_over_lp"`
	ILSOverLP float64 `json:"ils_over_lp"`
	Seconds   float64 `json:"seconds"` // the GA's
	// Evaluations the GA made within its budget and time cap (decodes;
	// local-search moves are priced from loads and not counted).
	Evaluations    int     `json:"evaluations"`
	ILSSeconds     float64 `json:"ils_seconds"`
	ILSEvaluations int     `json:"ils_evaluations"`
}

// ETC runs the benchmark on one instance.
func ETC(ctx context.Context, name string, etc [][]float64, cfg ETCConfig) (ETCResult, error) {
	if cfg.Evaluations <= 0 {
		cfg.Evaluations = math.MaxInt
	}
	if cfg.TimeLimit <= 0 {
		cfg.TimeLimit = 10 * time.Second
	}
	p := ga.FromETC(etc)
	r := ETCResult{Instance: name, LowerBound: ga.LowerBound(p), ILSStart: "min-min"}
	if cfg.ILSFromDual {
		r.ILSStart = "dual"
	}
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
	start := time.Now() // the GA's time: it is seeded from the LP
	lp, err := ga.LPBound(ctx, p)
	if err != nil {
		return r, err
	}
	r.LPBound, r.LPGap = lp.Bound, lp.Gap()
	rng := rand.New(rand.NewSource(cfg.Seed)) // the jitter's, then the GA's
	gcfg := ga.Memetic(ga.MS)
	duals, err := ga.DualResponses(p, lp.Weights, gcfg.Population-1, rng)
	if err != nil {
		return r, err
	}
	g, err := ga.New(p, gcfg, rng)
	if err != nil {
		return r, err
	}
	for _, c := range append([]*ga.Chromosome{seed}, duals...) {
		if err := g.Seed(c); err != nil {
			return r, err
		}
	}
	if err := runFor(ctx, g, cfg, start); err != nil {
		return r, err
	}
	_, r.GA = g.Best()
	r.Evaluations = g.Evaluations()
	r.Seconds = time.Since(start).Seconds()

	start = time.Now()
	if cfg.ILSFromDual {
		seed = duals[0]
	}
	ils, err := ga.NewILS(p, seed, ga.ILSConfig{Cost: ga.MS}, rand.New(rand.NewSource(cfg.Seed)))
	if err != nil {
		return r, err
	}
	if err := runFor(ctx, ils, cfg, start); err != nil {
		return r, err
	}
	_, r.ILS = ils.Best()
	r.ILSEvaluations = ils.Evaluations()
	r.ILSSeconds = time.Since(start).Seconds()
	r.GAOverLP, r.ILSOverLP = r.GA/r.LPBound, r.ILS/r.LPBound
	return r, nil
}

// runFor runs o until its budget, or until cfg.TimeLimit after start.
func runFor(ctx context.Context, o ga.Optimizer, cfg ETCConfig, start time.Time) error {
	rctx, cancel := context.WithTimeout(ctx, cfg.TimeLimit-time.Since(start))
	defer cancel()
	if err := o.Run(rctx, cfg.Evaluations); err != nil && !(errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil) {
		return err
	}
	return nil
}

// ETCTable writes results as a table: each method's makespan, the GA's
// gain over Min-min and the ILS, and how far the GA and the ILS end above
// the LP bound, then the means of those last figures.
func ETCTable(w io.Writer, rs []ETCResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	ilsName := "ILS"
	if len(rs) > 0 && rs[0].ILSStart != "min-min" {
		ilsName = "ILS from " + rs[0].ILSStart
	}
	fmt.Fprintf(tw, "instance\tLP bound\tMin-min\tMax-min\tSufferage\t%s\tGA\tGA vs Min-min\tGA vs ILS\tILS/LP\tGA/LP\tGA evals\tseconds\t\n", ilsName)
	var ils, gaLP float64
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%+.2f%%\t%+.2f%%\t%.4f\t%.4f\t%d\t%.2f\t\n", r.Instance, r.LPBound,
			r.MinMin, r.MaxMin, r.Sufferage, r.ILS, r.GA, 100*(r.GA-r.MinMin)/r.MinMin, 100*(r.GA-r.ILS)/r.ILS,
			r.ILSOverLP, r.GAOverLP, r.Evaluations, r.Seconds)
		ils += r.ILSOverLP
		gaLP += r.GAOverLP
	}
	if n := float64(len(rs)); n > 1 {
		fmt.Fprintf(tw, "mean\t\t\t\t\t\t\t\t\t%.4f\t%.4f\t\t\t\n", ils/n, gaLP/n)
	}
	return tw.Flush()
}
