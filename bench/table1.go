package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"runtime"
	"strings"
	"sync"
	"text/tabwriter"

	"msched/policy"
	"msched/sim"
)

// Table1Config is the setting of `msched bench table1`, msched's
// reproduction of Table 1 of the MS paper (task execution rates of FIFO,
// GA-MS and GA-XMS for simulated tasks of average size 16, 32 and 64). The
// paper gives no setup beyond that; msched's reading:
//
//   - Machine: Nodes identical nodes (16), speed 1.
//   - Tasks: Eq. 2, t(i) = C_cpu/i + C_com·i, moldable over 1..Nodes nodes.
//     As in Fig3Problem, each task's peak-speedup node count
//     i* = sqrt(C_cpu/C_com) is uniform on 1..Nodes. The paper leaves
//     "size" undefined; msched reads the average size S as the mean run
//     time, in seconds, of a task on its peak-speedup node count, the run
//     time FIFO gives it: T* = t(i*) = 2·C_cpu/i* is uniform on
//     [S/2, 3S/2), so C_cpu = T*·i*/2 and C_com = C_cpu/i*². (With this
//     reading FIFO's rate at S = 16 comes out near the paper's 242/h.)
//   - Arrivals: a closed system: the queue is topped up so that Backlog
//     (20) tasks are always waiting; every policy sees the same task
//     stream (one seed).
//   - Policies: "fifo", the paper's "standard queueing method": arrival
//     order, each task on the node count its submitter requested, and the
//     submitter does not know t(i) (the paper credits the GAs' 3–4× to
//     "knowledge of the execution time function ... provided by
//     performance prediction"), so the request is uniform on 1..Nodes,
//     independent of i*; "fifo-peak", FIFO given that knowledge: each task
//     on its peak-speedup count (efficiency 50 %); "ga-ms", "ga-xms" and
//     "ga-xms-continuous" (SEEDS.md §1: both readings of δ are reported),
//     the live GA policies of the sched daemon (population 60, window 20,
//     MaxJumps 7), which choose every task's nodes from t(i), each running
//     Generations generations per decision; a decision follows every
//     submission and every termination (sim's event rules).
//   - Measure: tasks finished within a simulated horizon of HorizonTasks·S
//     seconds (the same number of "average task lengths" for every size),
//     per hour of simulated time.
type Table1Config struct {
	Sizes        []float64 `json:"sizes"`         // default 16, 32, 64
	Nodes        int       `json:"nodes"`         // default 16
	PeakMin      int       `json:"peak_min"`      // lowest i*; default 1 (i* uniform on PeakMin..Nodes)
	Backlog      int       `json:"backlog"`       // default 20
	HorizonTasks float64   `json:"horizon_tasks"` // horizon in units of S; default 250
	Generations  int       `json:"generations"`   // GA generations per decision; default policy.DefaultGens
	Seed         int64     `json:"seed"`          // task stream seed; the GAs use Seed too
	LocalSearch  float64   `json:"local_search"`  // the GAs' share of offspring descended by local search; default 0
	Workers      int       `json:"-"`             // simulations in parallel; default GOMAXPROCS
	Policies     []string  `json:"policies"`      // default fifo, fifo-peak, ga-ms, ga-xms, ga-xms-continuous
}

// Table1Result is the report; its JSON is the object plus the
// setup and the GA's decision times.
type Table1Result struct {
	Sizes []float64 `json:"sizes"`
	FIFO  []float64 `json:"fifo"`
	GAMS  []float64 `json:"ga_ms"`
	GAXMS []float64 `json:"ga_xms"`
	// Rates of every policy run, by name (the three above included),
	// per size.
	Rates map[string][]float64 `json:"rates,omitempty"`
	// Utilization and MeanDecisionMS per policy, per size.
	Utilization    map[string][]float64 `json:"utilization"`
	MeanDecisionMS map[string][]float64 `json:"mean_decision_ms"`
	// BoundRatio is Table1Bound at fifo-peak's utilisation, per size: in
	// expectation no policy beats fifo-peak by more.
	BoundRatio []float64    `json:"bound_ratio,omitempty"`
	Setup      Table1Config `json:"setup"`
	Horizons   []float64    `json:"horizon_s"`
}

func (c *Table1Config) defaults() {
	if len(c.Sizes) == 0 {
		c.Sizes = []float64{16, 32, 64}
	}
	if c.Nodes <= 0 {
		c.Nodes = 16
	}
	if c.Backlog <= 0 {
		c.Backlog = 20
	}
	if c.HorizonTasks <= 0 {
		c.HorizonTasks = 250
	}
	if c.Generations <= 0 {
		c.Generations = policy.DefaultGens
	}
	if c.PeakMin <= 0 || c.PeakMin > c.Nodes {
		c.PeakMin = 1
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if len(c.Policies) == 0 {
		c.Policies = []string{"fifo", "fifo-peak", "ga-ms", "ga-xms", "ga-xms-continuous"}
	}
}

// Table1Tasks returns the task stream for size S on nodes nodes, i*
// uniform on peakMin..nodes: More(i)
// for the simulator, deterministic in seed and i when called in order
// 0, 1, 2, … (as the simulator does).
func Table1Tasks(size float64, peakMin, nodes int, seed int64) func(i int) sim.Job {
	rng := rand.New(rand.NewSource(seed))
	return func(i int) sim.Job {
		peak := peakMin + rng.Intn(nodes-peakMin+1)
		tstar := size * (0.5 + rng.Float64())
		ccpu := tstar * float64(peak) / 2
		ccom := ccpu / float64(peak*peak)
		return sim.Job{
			ID:  fmt.Sprintf("T%d", i),
			Min: 1, Max: nodes,
			Time: func(n int) float64 { return ccpu/float64(n) + ccom*float64(n) },
		}
	}
}

// Table1Requests is Table1Tasks as a standard queue sees them: each task
// rigid on the node count its submitter requested without knowing t(i),
// uniform on 1..nodes and independent of the task (a stream of its own,
// deterministic in seed).
func Table1Requests(size float64, peakMin, nodes int, seed int64) func(i int) sim.Job {
	tasks := Table1Tasks(size, peakMin, nodes, seed)
	rng := rand.New(rand.NewSource(seed ^ 0x5eed))
	return func(i int) sim.Job {
		j := tasks(i)
		j.Min = 1 + rng.Intn(nodes)
		j.Max = j.Min
		return j
	}
}

// Table1 runs the benchmark.
func Table1(ctx context.Context, cfg Table1Config) (*Table1Result, error) {
	cfg.defaults()
	res := &Table1Result{Sizes: cfg.Sizes, Setup: cfg, Rates: map[string][]float64{},
		Utilization: map[string][]float64{}, MeanDecisionMS: map[string][]float64{}}
	for _, p := range cfg.Policies {
		res.Rates[p] = make([]float64, len(cfg.Sizes))
		res.Utilization[p] = make([]float64, len(cfg.Sizes))
		res.MeanDecisionMS[p] = make([]float64, len(cfg.Sizes))
	}
	for _, s := range cfg.Sizes {
		res.Horizons = append(res.Horizons, cfg.HorizonTasks*s)
	}
	type run struct {
		p string
		k int
	}
	runs := make(chan run)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for w := 0; w < cfg.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range runs {
				m, err := table1Run(ctx, cfg, r.p, cfg.Sizes[r.k], res.Horizons[r.k])
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				res.Rates[r.p][r.k] = m.Throughput
				res.Utilization[r.p][r.k] = m.Utilization
				res.MeanDecisionMS[r.p][r.k] = m.MeanDecisionMS
				mu.Unlock()
			}
		}()
	}
	// The slow GA runs first, so that the workers finish together.
	for i := len(cfg.Policies) - 1; i >= 0; i-- {
		for k := range cfg.Sizes {
			runs <- run{cfg.Policies[i], k}
		}
	}
	close(runs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	res.FIFO, res.GAMS, res.GAXMS = res.Rates["fifo"], res.Rates["ga-ms"], res.Rates["ga-xms"]
	if u := res.Utilization["fifo-peak"]; u != nil {
		for _, x := range u {
			res.BoundRatio = append(res.BoundRatio, Table1Bound(cfg.PeakMin, cfg.Nodes, x))
		}
	}
	return res, nil
}

func table1Run(ctx context.Context, cfg Table1Config, name string, size, horizon float64) (sim.Metrics, error) {
	tasks, pol := Table1Tasks(size, cfg.PeakMin, cfg.Nodes, cfg.Seed), name
	switch name {
	case "fifo":
		tasks = Table1Requests(size, cfg.PeakMin, cfg.Nodes, cfg.Seed)
	case "fifo-peak":
		pol = "fifo" // on moldable tasks: the predictor's best count, i*
	}
	s, err := sim.New(sim.Config{
		Machine: sim.Identical(cfg.Nodes),
		Backlog: cfg.Backlog,
		More:    tasks,
		Horizon: horizon,
	}, nil)
	if err != nil {
		return sim.Metrics{}, err
	}
	p, err := policy.New(pol, policy.Options{Predictor: s.Predictor(), Seed: cfg.Seed,
		Generations: cfg.Generations, Window: cfg.Backlog, LocalSearch: cfg.LocalSearch})
	if err != nil {
		return sim.Metrics{}, err
	}
	r, err := s.Run(ctx, p)
	if err != nil {
		return sim.Metrics{}, fmt.Errorf("bench: table1 %s size %g: %w", name, size, err)
	}
	return sim.Compute(r, false), nil
}

// Table writes the setup and the table.
func (r *Table1Result) Table(w io.Writer) error {
	c := r.Setup
	fmt.Fprintf(w, "Table 1 (MS paper): tasks executed per hour, %d nodes, Eq. 2 tasks\n", c.Nodes)
	fmt.Fprintf(w, "  size S = mean run time (s) on the peak-speedup node count i*; i* uniform on %d..%d; t(i*) uniform on [S/2, 3S/2)\n", c.PeakMin, c.Nodes)
	fmt.Fprintf(w, "  fifo: arrival order, each task on its submitter's request, uniform on 1..%d (no knowledge of t(i));\n", c.Nodes)
	fmt.Fprintf(w, "  fifo-peak: arrival order, each task on i*; the GAs choose every task's nodes from t(i)\n")
	fmt.Fprintf(w, "  closed queue: %d tasks always waiting; horizon %g·S simulated seconds; seed %d\n", c.Backlog, c.HorizonTasks, c.Seed)
	fmt.Fprintf(w, "  GA: population 60, window %d, %d generations per decision (after each submission and termination, and again after one that started a task), local search on %g of offspring\n\n", c.Backlog, c.Generations, c.LocalSearch)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"policy"}
	for _, s := range r.Sizes {
		head = append(head, fmt.Sprintf("%g", s))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\tutilisation\tms/decision\t")
	for _, p := range c.Policies {
		row := []string{p}
		for k := range r.Sizes {
			row = append(row, fmt.Sprintf("%.0f", r.Rates[p][k]))
		}
		var util, ms []string
		for k := range r.Sizes {
			util = append(util, fmt.Sprintf("%.2f", r.Utilization[p][k]))
			ms = append(ms, fmt.Sprintf("%.2f", r.MeanDecisionMS[p][k]))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t"+strings.Join(util, " ")+"\t"+strings.Join(ms, " ")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.FIFO != nil && r.GAXMS != nil {
		fmt.Fprint(w, "\nGA-XMS / FIFO:")
		for k := range r.Sizes {
			fmt.Fprintf(w, " %.2f", r.GAXMS[k]/r.FIFO[k])
		}
		if r.GAMS != nil {
			fmt.Fprint(w, "   GA-XMS / GA-MS:")
			for k := range r.Sizes {
				fmt.Fprintf(w, " %.2f", r.GAXMS[k]/r.GAMS[k])
			}
		}
		fmt.Fprintln(w)
	}
	if r.BoundRatio != nil {
		fmt.Fprint(w, "upper bound on any policy / fifo-peak (node-seconds at its utilisation):")
		for _, b := range r.BoundRatio {
			fmt.Fprintf(w, " %.2f", b)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "paper: FIFO 242 110 58; GA-MS 821 357 182; GA-XMS 963 428 222")
	return nil
}

// Table1Bound is an upper bound, in expectation over the task distribution
// (a finite run's sample of tasks may beat it), on the ratio of any
// policy's rate to FIFO's in this setting, given FIFO's utilisation: FIFO spends
// i*·t(i*) = 2·C_cpu node-seconds on a task, and no schedule can spend
// less than min_i i·t(i) = C_cpu + C_com = C_cpu·(1 + 1/i*²) (one node), so
// rate/FIFO ≤ E[2·C_cpu] / (util_FIFO · E[C_cpu·(1 + 1/i*²)]), expectations
// over the task distribution (computed exactly over i*, as T* is independent
// of it).
func Table1Bound(peakMin, nodes int, fifoUtil float64) float64 {
	var fifo, best float64
	for p := peakMin; p <= nodes; p++ {
		c := float64(p) / 2 // C_cpu per unit T*
		fifo += 2 * c
		best += c * (1 + 1/float64(p*p))
	}
	return fifo / (fifoUtil * best)
}
