package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand"
	"runtime"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"

	"msched/policy"
	"msched/sim"
	"msched/workload"
)

// CoallocConfig is the setting of `msched bench coalloc`, msched's
// reproduction of Bucur and Epema's co-allocation figures ("The Influence
// of the Structure and Sizes of Jobs on the Performance of Co-Allocation",
// JSSPP 2000; SEEDS.md §4) with the simulator and the live fcfs and fpfs
// policies (policy's coalloc.go places the requests):
//
//   - Workload: workload.GenerateMulticluster, read back through
//     sim.FromSWFHeader (the SWF convention): 4 components per job, each
//     uniform on 1..4 or 1..8; a total request is their sum. Service times
//     exponential, mean 1 time unit of 1000 s.
//   - Maximum utilisation, FCFS, 4 clusters of 8 (sim.Clusters), Fit for
//     unordered requests: the saturated queue. A closed system
//     (sim.Config.Backlog): 4 jobs always wait, so the queue never
//     empties; Jobs jobs in all. Utilisation is the hosts' busy time over
//     the window from the start of the job Jobs/10 (warm-up) to the start
//     of the last job (after it the queue drains), divided by 32 hosts
//     times the window: the throughput of a queue that never empties, which
//     is the traffic intensity ρ_m that separates stable from unstable
//     offered loads (coalloc_test.go checks one figure against offered
//     loads that do and do not make the queue grow). Total requests run on
//     the same 4 × 8 hosts, placed anywhere: a single machine of 32.
//   - Bin filling, the paper's own method for its Table 3 (§3.2–3.3): the
//     FCFS policy is handed an idle system and a queue of fresh jobs and
//     starts jobs until the next does not fit; the utilisation is the busy
//     share of the hosts then, averaged over BinFills fills. It is not the
//     queue's saturation point (departures free hosts one job at a time, not
//     all at once), but it is what the paper's Table 3 reports; the table
//     prints both.
//   - FPFS's mean response time (Table 5): one cluster of 32 hosts, total
//     requests of 4 components uniform on 1..4 (the only setting of the
//     paper in which FCFS is stable at utilisation 0.78), Poisson arrivals
//     offering utilisation 0.78 and 0.62, Jobs jobs; fpfs with each
//     MaxJumps of the table (0, which is fcfs, 1, 3, 7, 12, 20) and with
//     one more. The mean of end minus submit over jobs Jobs/10 on, in time
//     units.
//
// Each run draws from a *rand.Rand of its own, seeded from Seed (saturated
// runs Seed, bin filling Seed+1, response runs Seed+2), so the three request
// types see the same components and service times, and every MaxJumps the
// same arrivals. The runs go GOMAXPROCS at a time.
type CoallocConfig struct {
	Jobs     int        // jobs per simulation; default DefaultCoallocJobs
	BinFills int        // bin fills per setting; default DefaultCoallocBinFills
	Seed     int64      // default 1 when 0
	Fit      policy.Fit // unordered placement; default First Fit
	// Table: also run what only the table prints (bin filling, and Table 5
	// beyond MaxJumps 0, 7 and 20 at 0.78); without it, only the --json
	// object's figures.
	Table bool
	Log   *slog.Logger
}

// CoallocMaxUtil is the maximum utilisation per request type and component
// range.
type CoallocMaxUtil struct {
	Ordered14   float64 `json:"ordered_1_4"`
	Unordered14 float64 `json:"unordered_1_4"`
	Total14     float64 `json:"total_1_4"`
	Ordered18   float64 `json:"ordered_1_8"`
	Unordered18 float64 `json:"unordered_1_8"`
	Total18     float64 `json:"total_1_8"`
}

// CoallocResponse is FPFS's mean response time per MaxJumps, in time units,
// at utilisation 0.78: the --json object's fpfs_response (Table5 holds these
// figures with the rest of the table).
type CoallocResponse struct {
	Jumps0  float64 `json:"0"`
	Jumps7  float64 `json:"7"`
	Jumps20 float64 `json:"20"`
}

// Table5Row is one row of the paper's Table 5: FPFS's mean response time,
// in time units, with MaxJumps Jumps, at utilisation 0.62 and 0.78. In a
// result, Plus62 and Plus78 are the figures of MaxJumps Jumps+1, fpfs
// allowing one more overtake than the row's MaxJumps: docs/coalloc.md
// compares both readings with the paper's columns.
type Table5Row struct {
	Jumps          int
	At62, At78     float64
	Plus62, Plus78 float64
}

// CoallocResult is the report; its JSON is the command's --json object
// (max_util from the saturated queue, fpfs_response).
type CoallocResult struct {
	MaxUtil      CoallocMaxUtil  `json:"max_util"`
	FPFSResponse CoallocResponse `json:"fpfs_response"`
	// BinFill is the paper's bin-filling estimate of MaxUtil.
	BinFill CoallocMaxUtil `json:"-"`
	// Table5 is the paper's Table 5 as msched measures it, a row per row
	// of PaperTable5; FPFSResponse is taken from it.
	Table5 []Table5Row   `json:"-"`
	Setup  CoallocConfig `json:"-"`
}

// The paper's figures: Table 3 (bin filling, 4 × 8, First Fit) and Table 5
// (FPFS, one cluster of 32, total requests). It gives no maximum
// utilisation of total requests in this setting, only that they do better
// than unordered ones (Figure 3).
var (
	PaperMaxUtil = CoallocMaxUtil{Ordered14: 0.685, Unordered14: 0.722, Ordered18: 0.578, Unordered18: 0.608}
	PaperTable5  = []Table5Row{
		{Jumps: 0, At62: 1.91246, At78: 4.8845},
		{Jumps: 1, At62: 1.80850, At78: 3.8588},
		{Jumps: 3, At62: 1.80102, At78: 3.3412},
		{Jumps: 7, At62: 1.70349, At78: 2.9125},
		{Jumps: 12, At62: 1.69023, At78: 2.8249},
		{Jumps: 20, At62: 1.68996, At78: 2.7771},
	}
)

// The experiments' fixed setting.
const (
	coallocClusters    = 4
	coallocClusterSize = 8
	coallocUtil        = 0.78 // Table 5's second column, the JSON's
	coallocUtil62      = 0.62 // its first, in the table only
	// coallocTimeUnit is the seconds in a time unit: the simulator's times
	// are float seconds and its clock nanoseconds, so at 1000 s rounding
	// is far below a unit; response times are read in units.
	coallocTimeUnit = 1000.0
	// coallocBacklog is the jobs always waiting in the saturated runs.
	coallocBacklog = 4
)

// The defaults of Jobs and BinFills. Runs of 300,000 jobs put the
// saturated utilisations' spread over seeds well below 0.01; FCFS's response
// near its saturation point (utilisation 0.78) varies most from seed to
// seed (docs/coalloc.md). 10,000 fills is the paper's number.
const (
	DefaultCoallocJobs     = 300000
	DefaultCoallocBinFills = 10000
)

// MinCoallocJobs is the fewest jobs a simulation may have: the first tenth
// warms up, and the figures are means over the rest.
const MinCoallocJobs = 100

// defaults fills in the zero fields and refuses the settings no figure can
// come from.
func (c *CoallocConfig) defaults() error {
	switch {
	case c.Jobs == 0:
		c.Jobs = DefaultCoallocJobs
	case c.Jobs < MinCoallocJobs:
		return fmt.Errorf("bench: coalloc: %d jobs per simulation; at least %d (the first tenth warms up)", c.Jobs, MinCoallocJobs)
	}
	switch {
	case c.BinFills == 0:
		c.BinFills = DefaultCoallocBinFills
	case c.BinFills < 0:
		return fmt.Errorf("bench: coalloc: %d bin fills; at least 1", c.BinFills)
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

// coallocSetting is one cell of the max_util table.
type coallocSetting struct {
	rt workload.RequestType
	n2 int
}

var coallocSettings = []coallocSetting{
	{workload.Ordered, 4}, {workload.Unordered, 4}, {workload.Total, 4},
	{workload.Ordered, 8}, {workload.Unordered, 8}, {workload.Total, 8},
}

// field is setting k's figure (coallocSettings[k]).
func (u *CoallocMaxUtil) field(k int) *float64 {
	return []*float64{&u.Ordered14, &u.Unordered14, &u.Total14, &u.Ordered18, &u.Unordered18, &u.Total18}[k]
}

// Coalloc runs the benchmark: the six saturated runs and the three response
// runs of the --json object, and with cfg.Table the six bin fillings and
// the rest of Table 5's response runs (each MaxJumps of the table and one
// more, at each utilisation), GOMAXPROCS at a time.
func Coalloc(ctx context.Context, cfg CoallocConfig) (*CoallocResult, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	cfg.Log.Info("bench coalloc", "jobs", cfg.Jobs, "bin_fills", cfg.BinFills, "seed", cfg.Seed,
		"saturated_seed", cfg.Seed, "bin_fill_seed", cfg.Seed+1, "response_seed", cfg.Seed+2,
		"fit", cfg.Fit, "time_unit_s", coallocTimeUnit, "backlog", coallocBacklog)
	res := &CoallocResult{Setup: cfg}
	// Each run writes its own field of res, so the figures do not depend
	// on the order the runs end in; the first error cancels gctx, on which
	// the other runs stop.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for k, st := range coallocSettings {
		g.Go(func() error {
			u, err := CoallocSaturated(gctx, cfg, st.rt, st.n2)
			*res.MaxUtil.field(k) = u
			return err
		})
		if cfg.Table {
			g.Go(func() error {
				u, err := CoallocBinFill(gctx, cfg, st.rt, st.n2)
				*res.BinFill.field(k) = u
				return err
			})
		}
	}
	// Response runs, each (utilisation, MaxJumps) once: the JSON's, and
	// for the table each Table 5 row's MaxJumps and one more, at both
	// utilisations.
	type run struct {
		util  float64
		jumps int
	}
	runs := []run{{coallocUtil, 0}, {coallocUtil, 7}, {coallocUtil, 20}}
	if cfg.Table {
		for _, p := range PaperTable5 {
			runs = append(runs, run{coallocUtil, p.Jumps}, run{coallocUtil, p.Jumps + 1}, run{coallocUtil62, p.Jumps}, run{coallocUtil62, p.Jumps + 1})
		}
	}
	resp := map[run]*float64{}
	for _, r := range runs {
		if resp[r] != nil {
			continue
		}
		out := new(float64)
		resp[r] = out
		g.Go(func() error {
			x, err := CoallocResponseTime(gctx, cfg, r.util, r.jumps)
			*out = x
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	res.FPFSResponse = CoallocResponse{Jumps0: *resp[run{coallocUtil, 0}], Jumps7: *resp[run{coallocUtil, 7}], Jumps20: *resp[run{coallocUtil, 20}]}
	if cfg.Table {
		for _, p := range PaperTable5 {
			res.Table5 = append(res.Table5, Table5Row{Jumps: p.Jumps,
				At78: *resp[run{coallocUtil, p.Jumps}], Plus78: *resp[run{coallocUtil, p.Jumps + 1}],
				At62: *resp[run{coallocUtil62, p.Jumps}], Plus62: *resp[run{coallocUtil62, p.Jumps + 1}]})
		}
	}
	return res, nil
}

// coallocJobs draws n jobs of request type rt, components uniform on
// 1..n2, Poisson arrivals offering util (ignored by a closed system), from
// seed, through the SWF convention (sim.FromSWFHeader).
func coallocJobs(cfg CoallocConfig, rt workload.RequestType, n2, n int, util float64, seed int64) ([]sim.Job, error) {
	h, recs, err := workload.GenerateMulticluster(workload.MulticlusterConfig{
		Jobs: n, Clusters: coallocClusters, ClusterSize: coallocClusterSize, Request: rt,
		N1: 1, N2: n2, Utilisation: util, TimeUnit: coallocTimeUnit,
	}, rand.New(rand.NewSource(seed)))
	if err != nil {
		return nil, err
	}
	tr, err := sim.FromSWFHeader(h, workload.Slice(recs), coallocClusters*coallocClusterSize, sim.Exact, false)
	if err != nil {
		return nil, err
	}
	return tr.Jobs, nil
}

// coallocMachine is the paper's multicluster, 4 clusters of 8.
func coallocMachine() sim.Machine {
	return sim.Clusters([]int{coallocClusterSize, coallocClusterSize, coallocClusterSize, coallocClusterSize})
}

// coallocRun simulates jobs on m under the named policy (with fpfs's
// MaxJumps, nil for the default) with cfg's fit, in a closed system of
// backlog jobs when backlog > 0.
func coallocRun(ctx context.Context, cfg CoallocConfig, m sim.Machine, jobs []sim.Job, name string, maxJumps *int, backlog int) (*sim.Result, error) {
	s, err := sim.New(sim.Config{Machine: m, Backlog: backlog}, jobs)
	if err != nil {
		return nil, err
	}
	p, err := policy.New(name, policy.Options{Predictor: s.Predictor(), MaxJumps: maxJumps, Fit: cfg.Fit, Log: cfg.Log})
	if err != nil {
		return nil, err
	}
	r, err := s.Run(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("bench: coalloc: %w", err)
	}
	for k, st := range r.Status {
		if st != sim.Done {
			return nil, fmt.Errorf("bench: coalloc: %s: job %s did not run (%s)", name, r.Jobs[k].ID, r.Reasons[r.Jobs[k].ID])
		}
	}
	return r, nil
}

// CoallocSaturated is the maximum utilisation of FCFS on 4 clusters of 8
// for requests of type rt with components uniform on 1..n2: the busy share
// of the hosts while the queue never empties (see CoallocConfig).
func CoallocSaturated(ctx context.Context, cfg CoallocConfig, rt workload.RequestType, n2 int) (float64, error) {
	if err := cfg.defaults(); err != nil {
		return 0, err
	}
	jobs, err := coallocJobs(cfg, rt, n2, cfg.Jobs, 0.5, cfg.Seed)
	if err != nil {
		return 0, err
	}
	m := coallocMachine()
	r, err := coallocRun(ctx, cfg, m, jobs, "fcfs", nil, coallocBacklog)
	if err != nil {
		return 0, err
	}
	// The window: from the start of the first job after the warm-up to
	// the start of the last job (FCFS starts jobs in order).
	from, to := r.Start[len(jobs)/10], r.Start[len(jobs)-1]
	return busyShare(r, len(m.Hosts), from, to), nil
}

// busyShare is the share of hosts' time busy in [from, to] in r.
func busyShare(r *sim.Result, hosts int, from, to float64) float64 {
	if !(to > from) {
		return math.NaN()
	}
	busy := 0.0
	for k := range r.Jobs {
		if lo, hi := max(r.Start[k], from), min(r.End[k], to); hi > lo {
			busy += float64(r.NHosts[k]) * (hi - lo)
		}
	}
	return busy / (float64(hosts) * (to - from))
}

// CoallocBinFill is the paper's bin-filling estimate of the maximum
// utilisation for requests of type rt with components uniform on 1..n2: the
// fcfs policy, through the policy path (policy.Decider), is handed an idle
// 4 × 8 system and a queue of fresh jobs, and starts jobs until the next
// does not fit; the busy share of the hosts is averaged over cfg.BinFills
// fills, each of jobs of its own.
func CoallocBinFill(ctx context.Context, cfg CoallocConfig, rt workload.RequestType, n2 int) (float64, error) {
	if err := cfg.defaults(); err != nil {
		return 0, err
	}
	m := coallocMachine()
	p, err := policy.New("fcfs", policy.Options{Fit: cfg.Fit, Log: cfg.Log})
	if err != nil {
		return 0, err
	}
	d := policy.Decider{Policy: p}
	// A fill starts at most one job per host: a queue one longer than the
	// hosts always holds the job that does not fit.
	qlen := len(m.Hosts) + 1
	jobs, err := coallocJobs(cfg, rt, n2, cfg.BinFills*qlen, 0.5, cfg.Seed+1)
	if err != nil {
		return 0, err
	}
	queue := make([]policy.QueuedJob, qlen)
	sum := 0.0
	for f := range cfg.BinFills {
		if f%256 == 0 && ctx.Err() != nil {
			return 0, ctx.Err()
		}
		for i := range queue {
			j := &jobs[f*qlen+i]
			queue[i] = policy.QueuedJob{ID: j.ID, Min: j.Min, Max: j.Max, Estimate: time.Duration(j.Estimate * float64(time.Second)),
				Request: j.Request, Components: j.Components}
		}
		dec, err := d.Decide(ctx, policy.Snapshot{Now: sim.Epoch, Hosts: m.Hosts, Queue: queue})
		if err != nil {
			return 0, err
		}
		if len(dec.Faults) > 0 || len(dec.Plan.Reject) > 0 || len(dec.Plan.StartNow) == qlen {
			return 0, fmt.Errorf("bench: coalloc: bin fill %d: faults %v, rejections %v, %d started", f, dec.Faults, dec.Plan.Reject, len(dec.Plan.StartNow))
		}
		busy := 0
		for _, pl := range dec.Plan.StartNow {
			busy += len(pl.Hosts)
		}
		sum += float64(busy) / float64(len(m.Hosts))
	}
	return sum / float64(cfg.BinFills), nil
}

// CoallocResponseTime is the mean response time, in time units, on one
// cluster of 32 hosts, of total requests (the sum of 4 components uniform
// on 1..4) arriving at utilisation util, under fpfs with that MaxJumps
// (0 is fcfs).
func CoallocResponseTime(ctx context.Context, cfg CoallocConfig, util float64, maxJumps int) (float64, error) {
	if err := cfg.defaults(); err != nil {
		return 0, err
	}
	r, err := coallocOpen(ctx, cfg, sim.Clusters([]int{coallocClusters * coallocClusterSize}), workload.Total, 4, util, maxJumps, cfg.Seed+2)
	if err != nil {
		return 0, err
	}
	return meanResponse(r, len(r.Jobs)/10) / coallocTimeUnit, nil
}

// coallocOpen simulates cfg.Jobs jobs of request type rt, components
// uniform on 1..n2, arriving at utilisation util (Poisson) on m, under
// fpfs with that MaxJumps (0 is fcfs).
func coallocOpen(ctx context.Context, cfg CoallocConfig, m sim.Machine, rt workload.RequestType, n2 int, util float64, maxJumps int, seed int64) (*sim.Result, error) {
	jobs, err := coallocJobs(cfg, rt, n2, cfg.Jobs, util, seed)
	if err != nil {
		return nil, err
	}
	return coallocRun(ctx, cfg, m, jobs, "fpfs", new(maxJumps), 0)
}

// meanResponse is the mean of end minus submit over r's jobs from index
// from on.
func meanResponse(r *sim.Result, from int) float64 {
	sum := 0.0
	for k := from; k < len(r.Jobs); k++ {
		sum += r.End[k] - r.Jobs[k].Submit
	}
	return sum / float64(len(r.Jobs)-from)
}

// Table writes the setup and the figures beside the paper's; the result
// must come from a run with CoallocConfig.Table.
func (r *CoallocResult) Table(w io.Writer) error {
	c := r.Setup
	if !c.Table {
		return fmt.Errorf("bench: coalloc: the table needs a run with CoallocConfig.Table")
	}
	fmt.Fprintf(w, "Co-allocation (Bucur & Epema, JSSPP 2000): 4 clusters x 8 hosts, 4 components per job; service\n")
	fmt.Fprintf(w, "  exponential, mean 1 unit (%g s); %d jobs per simulation; %s fit for unordered requests; seed %d\n\n", coallocTimeUnit, c.Jobs, c.Fit, c.Seed)
	fmt.Fprintf(w, "Maximum utilisation, FCFS. saturated: a queue that never empties (%d always waiting), busy share\n", coallocBacklog)
	fmt.Fprintf(w, "  from the start of job %d to the start of the last; bin fill: an idle system filled until the next\n", c.Jobs/10)
	fmt.Fprintf(w, "  job does not fit, mean of %d fills (the paper's Table 3 method; total: its Table 3 has none)\n", c.BinFills)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "components\trequest\tsaturated\tbin fill\tpaper\t")
	for k, st := range coallocSettings {
		paper := "-"
		if p := *PaperMaxUtil.field(k); p > 0 {
			paper = fmt.Sprintf("%.3f", p)
		}
		fmt.Fprintf(tw, "U[1,%d]\t%v\t%.3f\t%.3f\t%s\t\n", st.n2, st.rt, *r.MaxUtil.field(k), *r.BinFill.field(k), paper)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nFPFS mean response time (units), one cluster of 32, total requests (sum of 4 U[1,4]), Poisson arrivals\n")
	fmt.Fprintf(w, "  (the paper's Table 5; --json has MaxJumps 0, 7 and 20 at utilisation %g). +1: fpfs allowing one\n", coallocUtil)
	fmt.Fprintf(w, "  overtake more than the row's MaxJumps (docs/coalloc.md)\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "MaxJumps\tat %g\t+1\tpaper\tat %g\t+1\tpaper\t\n", coallocUtil, coallocUtil62)
	for i, row := range r.Table5 {
		name := fmt.Sprint(row.Jumps)
		if row.Jumps == 0 {
			name = "0 (fcfs)"
		}
		p := PaperTable5[i]
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", name, row.At78, row.Plus78, p.At78, row.At62, row.Plus62, p.At62)
	}
	return tw.Flush()
}
