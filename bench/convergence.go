package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand"
	"runtime"
	"sort"
	"sync"
	"text/tabwriter"
	"time"

	"msched/ga"
)

// ConvergenceConfig is the setting of `msched bench convergence`: the MS
// paper's Fig. 3 (GA vs SA vs random search, 20 tasks on 16 nodes), every
// optimiser given the same budget of evaluations on one instance, over Runs
// seeds.
type ConvergenceConfig struct {
	Runs        int         // optimiser runs per method; default 20
	Evaluations int         // budget per run; default 30,000
	Tasks       int         // default 20
	Hosts       int         // default 16
	Seed        int64       // instance seed; run r of every method uses Seed+1+r
	Cost        ga.CostKind // default MS: Fig. 3 plots makespan
	Workers     int         // runs in parallel; default GOMAXPROCS
	// LocalSearch is the GA's Config.LocalSearch (0: none, the paper's
	// GA; its descents are not counted as evaluations).
	LocalSearch float64
}

// Stat is a mean and standard deviation over runs.
type Stat struct {
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
}

// Curve is one method's best cost, averaged over runs, at each checkpoint of
// evaluations, and the mean wall time a run took to get there.
type Curve struct {
	Evals   []int     `json:"evals"`
	Mean    []float64 `json:"mean"`
	Seconds []float64 `json:"seconds"`
}

// ConvergenceResult is what the benchmark prints (with --json, this object).
type ConvergenceResult struct {
	Runs        int     `json:"runs"`
	Evaluations int     `json:"evaluations"`
	Cost        string  `json:"cost"`
	LowerBound  float64 `json:"lower_bound"`
	FIFO        float64 `json:"fifo"`
	Greedy      float64 `json:"greedy"`
	GA          Stat    `json:"ga"`
	SA          Stat    `json:"sa"`
	Random      Stat    `json:"random"`
	// Per-run seconds of each method (mean), measured side by side.
	Seconds map[string]float64 `json:"seconds"`
	Curves  map[string]Curve   `json:"curves,omitempty"`
}

// Methods of the convergence benchmark, in report order.
var convMethods = []string{"ga", "sa", "random"}

type traceRun struct {
	evals []int
	best  []float64
	secs  []float64
	total float64
	final float64
}

// Convergence runs the benchmark.
func Convergence(ctx context.Context, cfg ConvergenceConfig) (*ConvergenceResult, error) {
	if cfg.Runs <= 0 {
		cfg.Runs = 20
	}
	if cfg.Evaluations <= 0 {
		cfg.Evaluations = 30000
	}
	if cfg.Tasks <= 0 {
		cfg.Tasks = 20
	}
	if cfg.Hosts <= 0 {
		cfg.Hosts = 16
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	// Each run builds its own copy of the instance: a Problem's memoised run
	// times are not shared between goroutines.
	instance := func() *ga.Problem { return Fig3Problem(cfg.Tasks, cfg.Hosts, rand.New(rand.NewSource(cfg.Seed))) }
	p := instance()
	res := &ConvergenceResult{Runs: cfg.Runs, Evaluations: cfg.Evaluations, Cost: cfg.Cost.String(),
		LowerBound: ga.LowerBound(p), Seconds: map[string]float64{}, Curves: map[string]Curve{}}
	var s ga.Schedule
	for _, h := range []struct {
		f   func(*ga.Problem) (*ga.Chromosome, error)
		out *float64
	}{{ga.FIFO, &res.FIFO}, {ga.Greedy, &res.Greedy}} {
		c, err := h.f(p)
		if err != nil {
			return nil, err
		}
		*h.out = ga.Evaluate(p, c, cfg.Cost, &s)
	}

	runs := make(map[string][]traceRun, len(convMethods))
	for _, m := range convMethods {
		runs[m] = make([]traceRun, cfg.Runs)
	}
	type job struct {
		method string
		r      int
	}
	jobs := make(chan job)
	errs := make(chan error, cfg.Workers)
	var wg sync.WaitGroup
	for w := 0; w < cfg.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				tr, err := convRun(ctx, j.method, instance(), cfg, cfg.Seed+1+int64(j.r))
				if err != nil {
					errs <- err
					return
				}
				runs[j.method][j.r] = tr
			}
		}()
	}
	var err error
feed:
	for r := 0; r < cfg.Runs; r++ {
		for _, m := range convMethods {
			select {
			case jobs <- job{m, r}:
			case err = <-errs:
				break feed
			case <-ctx.Done():
				err = ctx.Err()
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	if err != nil {
		return nil, err
	}

	checkpoints := logCheckpoints(cfg.Evaluations, 24)
	for _, m := range convMethods {
		var finals, totals []float64
		curve := Curve{Evals: checkpoints}
		for _, tr := range runs[m] {
			finals = append(finals, tr.final)
			totals = append(totals, tr.total)
		}
		for _, e := range checkpoints {
			var sum, sumT float64
			for _, tr := range runs[m] {
				b, t := tr.at(e)
				sum += b
				sumT += t
			}
			curve.Mean = append(curve.Mean, sum/float64(cfg.Runs))
			curve.Seconds = append(curve.Seconds, sumT/float64(cfg.Runs))
		}
		res.Curves[m] = curve
		res.Seconds[m] = meanSD(totals).Mean
		st := meanSD(finals)
		switch m {
		case "ga":
			res.GA = st
		case "sa":
			res.SA = st
		case "random":
			res.Random = st
		}
	}
	return res, nil
}

// convRun runs one method once and records its best cost at every
// improvement.
func convRun(ctx context.Context, method string, p *ga.Problem, cfg ConvergenceConfig, seed int64) (traceRun, error) {
	var tr traceRun
	start := time.Now()
	trace := func(evals int, best float64) {
		tr.evals = append(tr.evals, evals)
		tr.best = append(tr.best, best)
		tr.secs = append(tr.secs, time.Since(start).Seconds())
	}
	rng := rand.New(rand.NewSource(seed))
	var opt ga.Optimizer
	var err error
	switch method {
	case "ga":
		opt, err = ga.New(p, ga.Config{Cost: cfg.Cost, LocalSearch: cfg.LocalSearch, Trace: trace}, rng)
	case "sa":
		opt, err = ga.NewSA(p, ga.SAConfig{Cost: cfg.Cost, Trace: trace}, rng)
	case "random":
		opt, err = ga.NewRandomSearch(p, ga.RandomConfig{Cost: cfg.Cost, Trace: trace}, rng)
	default:
		err = fmt.Errorf("bench: unknown method %q", method)
	}
	if err != nil {
		return tr, err
	}
	if err := opt.Run(ctx, cfg.Evaluations); err != nil {
		return tr, err
	}
	tr.total = time.Since(start).Seconds()
	_, tr.final = opt.Best()
	return tr, nil
}

// at returns the best cost found within e evaluations and when it was found.
func (tr traceRun) at(e int) (float64, float64) {
	i := sort.SearchInts(tr.evals, e+1) - 1
	if i < 0 {
		return math.NaN(), 0
	}
	return tr.best[i], tr.secs[i]
}

// logCheckpoints returns about n evaluation counts spread logarithmically
// from 60 (one population) to max.
func logCheckpoints(max, n int) []int {
	var out []int
	lo := math.Log(60)
	for i := 0; i < n; i++ {
		e := int(math.Round(math.Exp(lo + (math.Log(float64(max))-lo)*float64(i)/float64(n-1))))
		if len(out) == 0 || e > out[len(out)-1] {
			out = append(out, e)
		}
	}
	return out
}

func meanSD(v []float64) Stat {
	if len(v) == 0 {
		return Stat{}
	}
	var s, ss float64
	for _, x := range v {
		s += x
	}
	m := s / float64(len(v))
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	sd := 0.0
	if len(v) > 1 {
		sd = math.Sqrt(ss / float64(len(v)-1))
	}
	return Stat{Mean: m, SD: sd}
}

// Table writes the human-readable report.
func (r *ConvergenceResult) Table(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "Fig. 3 setting: %d runs, %d evaluations each, cost %s\t\n", r.Runs, r.Evaluations, r.Cost)
	fmt.Fprintf(tw, "lower bound\t%.1f\t\nFIFO\t%.1f\t\ngreedy\t%.1f\t\n\n", r.LowerBound, r.FIFO, r.Greedy)
	fmt.Fprintf(tw, "evaluations\tGA\tSA\trandom\t\n")
	c := r.Curves
	for i, e := range c["ga"].Evals {
		fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%.1f\t\n", e, c["ga"].Mean[i], c["sa"].Mean[i], c["random"].Mean[i])
	}
	fmt.Fprintf(tw, "final mean\t%.1f\t%.1f\t%.1f\t\n", r.GA.Mean, r.SA.Mean, r.Random.Mean)
	fmt.Fprintf(tw, "final sd\t%.1f\t%.1f\t%.1f\t\n", r.GA.SD, r.SA.SD, r.Random.SD)
	fmt.Fprintf(tw, "/ lower bound\t%.3f\t%.3f\t%.3f\t\n", r.GA.Mean/r.LowerBound, r.SA.Mean/r.LowerBound, r.Random.Mean/r.LowerBound)
	fmt.Fprintf(tw, "seconds per run\t%.3f\t%.3f\t%.3f\t\n", r.Seconds["ga"], r.Seconds["sa"], r.Seconds["random"])
	return tw.Flush()
}

// SVG writes the convergence plot: mean best cost against evaluations.
func (r *ConvergenceResult) SVG(w io.Writer) error {
	colours := map[string]string{"ga": "#d62728", "sa": "#1f77b4", "random": "#7f7f7f"}
	names := map[string]string{"ga": "GA", "sa": "SA", "random": "random search"}
	var ss []Series
	for _, m := range convMethods {
		c := r.Curves[m]
		s := Series{Name: names[m], Colour: colours[m]}
		for i, e := range c.Evals {
			if !math.IsNaN(c.Mean[i]) {
				s.X = append(s.X, float64(e))
				s.Y = append(s.Y, c.Mean[i])
			}
		}
		ss = append(ss, s)
	}
	lb := Series{Name: "lower bound", Colour: "#2ca02c", X: []float64{60, float64(r.Evaluations)}, Y: []float64{r.LowerBound, r.LowerBound}}
	ss = append(ss, lb)
	return LinePlot(w, fmt.Sprintf("Best %s cost, mean of %d runs", r.Cost, r.Runs), "evaluations", "cost (s)", true, ss)
}
