package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"golang.org/x/sync/errgroup"

	"msched/models"
	"msched/policy"
	"msched/sim"
)

// This file is `msched bench moldable`: moldable-job sizing (SCOJO-P and
// Cirne-Berman, policy/scojo.go and policy/cirne.go) against fixed sizes,
// as in Barsanti and Sodan's evaluation (SEEDS.md §3; docs/moldable.md).

// The paper's two load levels, as offered load (the work of the jobs at
// their requested size N_opt over the machine's capacity between the first
// and the last submission). The paper gives workloads, not loads: the
// Lublin–Feitelson model's defaults on 128 nodes, W1 with the inter-arrival
// parameter α = 10.23 and W2, heavier, with α = 9.83. Drawn from that model
// (docs/moldable.md: the mean of size × run time is 84,000 processor-seconds
// and the mean inter-arrival 898 s under W1, 719 s under W2), they offer
// 0.73 and 0.91; the mean size, 12.1, is the paper's "average N_opt is 12".
// The headline figures (70 % and 30 % lower mean response than fixed sizes)
// are W1's.
const (
	MoldableLoadW1 = 0.73
	MoldableLoadW2 = 0.91
)

// MoldablePolicies are the policies `bench moldable` runs: easy on the
// trace as it is (fixed sizes, arrival order: the baseline the targets are
// stated against), then on the moldable trace scojo-rigid (the paper's
// "traditional": its class priorities and aging with fixed sizes),
// cirne-berman and scojo-p.
var MoldablePolicies = []string{"easy", "scojo-rigid", "cirne-berman", "scojo-p"}

// MoldableConfig is the setting of `msched bench moldable`.
type MoldableConfig struct {
	Traces []Trace
	// Load is the offered load each trace is brought to by scaling its
	// inter-arrival times (ScaleLoad); 0 keeps each trace's own.
	Load float64
	// Estimate is what the policies are told of run times: Exact (the
	// default, the paper's), Request or Profiler; a moldable job's is
	// scaled to each size as its run is (sim.Job.Mold).
	Estimate sim.EstimateKind
	// Curve is the moldable jobs' speedup curve: SCOJO-P's efficiency
	// model (the zero value, the paper's main setting) or Downey's.
	Curve    models.MoldCurve
	Policies []string // default MoldablePolicies; easy runs rigid, the others moldable
	Workers  int      // runs in parallel; default GOMAXPROCS
	Progress io.Writer
}

// MoldableRun is one policy's figures on one workload. The JSON has the
// figures the benchmark is about; the table adds the rest.
type MoldableRun struct {
	Workload     string  `json:"workload"`
	Policy       string  `json:"policy"`
	MeanResponse float64 `json:"mean_response_s"`
	MeanWait     float64 `json:"mean_wait_s"`
	Utilization  float64 `json:"utilization"`

	Hosts     int     `json:"-"`
	Jobs      int     `json:"-"` // jobs counted (finished)
	TraceLoad float64 `json:"-"` // the trace's own offered load
	Load      float64 `json:"-"` // the offered load run at
	Estimate  string  `json:"-"` // what the policies were told of run times
	Curve     string  `json:"-"` // the moldable jobs' speedup curve (models.MoldCurve)
	MeanBSLD  float64 `json:"-"`
	MeanHosts float64 `json:"-"` // mean size over N_opt, finished jobs
}

// OfferedLoad is the work of rigid jobs (Min hosts × run time) over the
// capacity of procs hosts from the first submission to the last; 0 for
// fewer than two submission times.
func OfferedLoad(jobs []sim.Job, procs int) float64 {
	if len(jobs) == 0 || procs <= 0 {
		return 0
	}
	first, last, work := math.Inf(1), math.Inf(-1), 0.0
	for _, j := range jobs {
		first, last = math.Min(first, j.Submit), math.Max(last, j.Submit)
		work += float64(j.Min) * j.Run
	}
	if last <= first {
		return 0
	}
	return work / (float64(procs) * (last - first))
}

// ScaleLoad returns jobs with their submission times, measured from the
// first, multiplied by OfferedLoad/load, so that their offered load is
// load, and that factor.
func ScaleLoad(jobs []sim.Job, procs int, load float64) ([]sim.Job, float64, error) {
	own := OfferedLoad(jobs, procs)
	if !(load > 0) || !(own > 0) {
		return nil, 0, fmt.Errorf("bench: moldable: cannot bring an offered load of %g to %g", own, load)
	}
	f := own / load
	first := math.Inf(1)
	for _, j := range jobs {
		first = math.Min(first, j.Submit)
	}
	out := slices.Clone(jobs)
	for i := range out {
		out[i].Submit = first + (out[i].Submit-first)*f
	}
	return out, f, nil
}

func (c *MoldableConfig) defaults() error {
	if len(c.Traces) == 0 {
		return errors.New("bench: moldable: no workloads")
	}
	if len(c.Policies) == 0 {
		c.Policies = MoldablePolicies
	}
	for _, p := range c.Policies {
		if !slices.Contains(policy.Names(), p) {
			return fmt.Errorf("bench: unknown policy %q (known: %s)", p, strings.Join(policy.Names(), ", "))
		}
	}
	if c.Load < 0 {
		return fmt.Errorf("bench: moldable: load %g", c.Load)
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	return nil
}

// Moldable runs every policy on every trace at the configured load: easy on
// the trace's rigid jobs, the others on the same jobs made moldable
// (sim.Moldable), all told the configured estimates (by default exact: the
// paper takes run times as known). It returns the runs in the order trace,
// policy.
func Moldable(ctx context.Context, cfg MoldableConfig) ([]MoldableRun, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	type setting struct {
		rigid, mold []sim.Job
		machine     sim.Machine
		own, load   float64
	}
	settings := make([]setting, len(cfg.Traces))
	for i, t := range cfg.Traces {
		m, err := t.Machine(sim.Machine{})
		if err != nil {
			return nil, err
		}
		tr, err := t.Jobs(len(m.Hosts), cfg.Estimate, false)
		if err != nil {
			return nil, fmt.Errorf("bench: %s: %w", t.Source, err)
		}
		if tr.Clamped > 0 && cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "bench moldable: %s: %d jobs asked for more than the %d hosts and were given all of them\n", t.Name, tr.Clamped, len(m.Hosts))
		}
		st := setting{rigid: tr.Jobs, machine: m, own: OfferedLoad(tr.Jobs, len(m.Hosts))}
		st.load = st.own
		if cfg.Load > 0 {
			var f float64
			if st.rigid, f, err = ScaleLoad(tr.Jobs, len(m.Hosts), cfg.Load); err != nil {
				return nil, fmt.Errorf("bench: %s: %w", t.Name, err)
			}
			st.load = cfg.Load
			if cfg.Progress != nil {
				fmt.Fprintf(cfg.Progress, "bench moldable: %s: %d jobs on %d hosts, offered load %.3f; inter-arrival times × %.3f for %.2f\n",
					t.Name, len(tr.Jobs), len(m.Hosts), st.own, f, cfg.Load)
			}
		}
		st.mold = sim.Moldable(st.rigid, len(m.Hosts), cfg.Curve)
		settings[i] = st
	}
	out := make([]MoldableRun, len(cfg.Traces)*len(cfg.Policies))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.Workers)
	for i := range cfg.Traces {
		for k, name := range cfg.Policies {
			st := &settings[i]
			g.Go(func() error {
				jobs := st.mold
				if name == "easy" {
					jobs = st.rigid
				}
				res, _, err := Simulate(gctx, Run{Jobs: jobs, Machine: st.machine, Estimate: cfg.Estimate, Policy: name})
				if err != nil {
					return fmt.Errorf("bench: moldable: %s %s: %w", cfg.Traces[i].Name, name, err)
				}
				met := sim.Compute(res, false)
				if why := res.RejectionSummary(); why != "" && cfg.Progress != nil {
					mu.Lock()
					fmt.Fprintf(cfg.Progress, "bench moldable: %s %s: %s\n", cfg.Traces[i].Name, name, why)
					mu.Unlock()
				}
				r := MoldableRun{Workload: cfg.Traces[i].Name, Policy: name, MeanResponse: met.MeanResponse,
					MeanWait: met.MeanWait, Utilization: met.Utilization, Hosts: res.Hosts, Jobs: met.Jobs,
					TraceLoad: st.own, Load: st.load, Estimate: cfg.Estimate.String(), Curve: cfg.Curve.String(), MeanBSLD: met.MeanBSD, MeanHosts: meanSizeRatio(res, st.rigid)}
				mu.Lock()
				out[i*len(cfg.Policies)+k] = r
				if cfg.Progress != nil {
					fmt.Fprintf(cfg.Progress, "bench moldable: %s %s: mean response %.0f s (%.1f s)\n", r.Workload, name, r.MeanResponse, res.Wall.Seconds())
				}
				mu.Unlock()
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// meanSizeRatio is the mean, over the finished jobs, of the hosts each ran
// on over its requested size (its size in the rigid trace).
func meanSizeRatio(r *sim.Result, rigid []sim.Job) float64 {
	sum, n := 0.0, 0
	for k, st := range r.Status {
		if st == sim.Done && k < len(rigid) && rigid[k].Min > 0 {
			sum += float64(r.NHosts[k]) / float64(rigid[k].Min)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// MoldableTable writes one block per workload: each policy's mean response,
// wait and bounded slowdown, utilisation, mean size over the requested one,
// and its mean response over easy's and over cirne-berman's.
func MoldableTable(w io.Writer, runs []MoldableRun) error {
	for i := 0; i < len(runs); {
		j := i
		for j < len(runs) && runs[j].Workload == runs[i].Workload {
			j++
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		r0 := runs[i]
		fmt.Fprintf(w, "%s, %d hosts, offered load %.2f (the trace's own %.2f), %s estimates, %s speedup\n", r0.Workload, r0.Hosts, r0.Load, r0.TraceLoad, r0.Estimate, r0.Curve)
		base := map[string]float64{}
		for _, r := range runs[i:j] {
			base[r.Policy] = r.MeanResponse
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "policy\tjobs\tmean response s\tmean wait s\tmean bsld\tutil\tsize/N_opt\tresp/easy\tresp/cirne-berman\t")
		for _, r := range runs[i:j] {
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.2f\t%.3f\t%.2f\t%s\t%s\t\n", r.Policy, r.Jobs, r.MeanResponse, r.MeanWait,
				r.MeanBSLD, r.Utilization, r.MeanHosts, fmtRatio(ratio(r.MeanResponse, base["easy"])), fmtRatio(ratioIf(base, "cirne-berman", r.MeanResponse)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// ratioIf is x over base[name], nil when name was not run.
func ratioIf(base map[string]float64, name string, x float64) *float64 {
	b, ok := base[name]
	if !ok {
		return nil
	}
	return ratio(x, b)
}
