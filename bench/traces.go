package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"msched/policy"
	"msched/profiler"
	"msched/sim"
	"msched/workload"
)

// This file is `msched bench traces` (issue 12) and the one place a
// simulation of a trace under a named policy is put together, which
// `msched simulate` uses too (Simulate).

// The repository's traces (../shared/data/README.md; the copies tests read
// are in workload/testdata), each on the machine it was logged on, and the
// o2k sample, generated with a fixed seed on the O2K's space-shared hosts.
const (
	SDSCFile  = "SDSC-SP2-1998-4.2-cln.first5k.swf"
	NASAFile  = "NASA-iPSC-1993-3.1-cln.swf.gz"
	SDSCProcs = 128
	NASAProcs = 128
	// O2KJobs is about a month of the workload (workload.DefaultO2KConfig).
	O2KJobs = 10000
	O2KSeed = 1
)

// dataDirs are where FindData looks below each directory: the copies the
// tests read, then the shared data directory beside the checkout.
var dataDirs = []string{filepath.Join("workload", "testdata"), filepath.Join("shared", "data")}

// Trace is a workload of SWF records and the machine it ran on.
type Trace struct {
	Name    string // short name: sdsc-sp2, nasa-ipsc, o2k, or the file's base name
	Source  string // the file, or how the records were generated
	Procs   int    // identical processors; 0: unknown (a machine must be given)
	Records []workload.Job
	// Header is the file's header; a multicluster trace's (a Clusters
	// line: workload.Clusters) makes Machine its clusters and Jobs read
	// the records' requests.
	Header workload.Header
}

// FindData returns the first directory, looking in from and then each of
// its parents, whose workload/testdata or shared/data holds the SDSC-SP2
// sample and the NASA log, so that the command finds them from anywhere in
// the checkout (tests read ../workload/testdata).
func FindData(from string) (string, error) {
	from, err := filepath.Abs(from)
	if err != nil {
		return "", err
	}
	for d := from; ; d = filepath.Dir(d) {
		for _, sub := range dataDirs {
			dir := filepath.Join(d, sub)
			if isFile(filepath.Join(dir, SDSCFile)) && isFile(filepath.Join(dir, NASAFile)) {
				return dir, nil
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("bench: no %s nor %s under %s or a parent with %s and %s",
				filepath.Join(dataDirs[0], SDSCFile), filepath.Join(dataDirs[1], SDSCFile), from, SDSCFile, NASAFile)
		}
	}
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// RepoTraces returns the SDSC-SP2 sample and the NASA iPSC log, read from
// dir, and O2KJobs jobs of the o2k generator (seed O2KSeed) on its 960
// processors.
func RepoTraces(dir string) ([]Trace, error) {
	var out []Trace
	for _, t := range []struct {
		name, file string
		procs      int
	}{{"sdsc-sp2", SDSCFile, SDSCProcs}, {"nasa-ipsc", NASAFile, NASAProcs}} {
		tr, err := ReadTrace(filepath.Join(dir, t.file), t.procs)
		if err != nil {
			return nil, err
		}
		tr.Name = t.name
		out = append(out, tr)
	}
	o2k, err := O2KTrace(O2KJobs, O2KSeed)
	if err != nil {
		return nil, err
	}
	return append(out, o2k), nil
}

// O2KTrace is n jobs of the o2k generator (its defaults), seeded with
// seed, on its 960 processors.
func O2KTrace(n int, seed int64) (Trace, error) {
	cfg := workload.DefaultO2KConfig()
	cfg.Jobs = n
	_, recs, err := workload.GenerateO2K(cfg, rand.New(rand.NewSource(seed)))
	if err != nil {
		return Trace{}, err
	}
	return Trace{Name: "o2k", Procs: workload.O2KMachineProcs, Records: recs,
		Source: fmt.Sprintf("msched workload generate o2k --jobs %d --seed %d", n, seed)}, nil
}

// ReadTrace reads an SWF file (plain or gzip). procs ≤ 0 takes the
// header's MaxProcs, else its MaxNodes, else leaves Procs 0. A trace whose
// header has a Clusters line runs on those clusters (Machine): procs > 0
// is then an error, not a setting ignored.
func ReadTrace(path string, procs int) (Trace, error) {
	hdr, recs, err := workload.ReadFile(path)
	if err != nil {
		return Trace{}, err
	}
	if c, ok := hdr.Get("Clusters"); ok && procs > 0 {
		return Trace{}, fmt.Errorf("bench: %s: its header's Clusters line (%s) sets the machine; %d processors cannot replace it", path, c, procs)
	}
	if procs <= 0 {
		procs = hdr.MaxProcs
	}
	if procs <= 0 {
		procs = hdr.MaxNodes
	}
	return Trace{Name: filepath.Base(path), Source: path, Procs: max(procs, 0), Records: recs, Header: hdr}, nil
}

// Machine is hosts when it has any (a heterogeneous machine), else a
// multicluster trace's clusters, else the trace's Procs identical
// processors.
func (t Trace) Machine(hosts sim.Machine) (sim.Machine, error) {
	if len(hosts.Hosts) > 0 {
		return hosts, nil
	}
	if _, ok := t.Header.Get("Clusters"); ok {
		sizes, err := workload.Clusters(t.Header)
		if err != nil {
			return sim.Machine{}, fmt.Errorf("bench: %s: %w", t.Source, err)
		}
		return sim.Clusters(sizes), nil
	}
	if t.Procs <= 0 {
		return sim.Machine{}, fmt.Errorf("bench: %s gives no MaxProcs; use --procs", t.Source)
	}
	return sim.Identical(t.Procs), nil
}

// Jobs converts the trace's records into simulated jobs for a machine of
// procs hosts (sim.FromSWFHeader: a multicluster trace's jobs keep their
// requests).
func (t Trace) Jobs(procs int, est sim.EstimateKind, pyss bool) (*sim.Trace, error) {
	return sim.FromSWFHeader(t.Header, workload.Slice(t.Records), procs, est, pyss)
}

// Run is one simulation: Jobs on Machine under the named policy.
type Run struct {
	Jobs    []sim.Job
	Machine sim.Machine
	// Estimate Profiler gives the run a historical profiler of its own,
	// which learns the trace afresh; other kinds are in the Jobs already.
	Estimate sim.EstimateKind
	Policy   string
	// Options build the policy; Predictor is replaced by the simulation's.
	Options  policy.Options
	Record   bool                  // keep every job's hosts (Gantt chart)
	Progress func(done, total int) // see sim.Config
	// Timed measures each decision (Decisions); it wraps the policy, which
	// costs a few hundred nanoseconds per decision.
	Timed bool
}

// Decisions are a timed Run's decision times: each Plan call's wall time,
// and the CPU time of all of them (the policies plan on the calling
// goroutine, so the CPU time of its thread while it plans is theirs; it
// includes reading the CPU clock, about a microsecond a decision).
type Decisions struct {
	Wall []time.Duration
	CPU  time.Duration
}

// Simulate runs r.
func Simulate(ctx context.Context, r Run) (*sim.Result, Decisions, error) {
	scfg := sim.Config{Machine: r.Machine, Record: r.Record, Progress: r.Progress}
	if r.Estimate == sim.Profiler {
		prof, err := profiler.New(profiler.Options{})
		if err != nil {
			return nil, Decisions{}, err
		}
		scfg.Estimator = sim.ProfilerEstimator(prof)
	}
	s, err := sim.New(scfg, r.Jobs)
	if err != nil {
		return nil, Decisions{}, err
	}
	o := r.Options
	o.Predictor = s.Predictor()
	p, err := policy.New(r.Policy, o)
	if err != nil {
		return nil, Decisions{}, err
	}
	var tp *timedPolicy
	if r.Timed {
		tp = &timedPolicy{Policy: p}
		p = tp
	}
	res, err := s.Run(ctx, p)
	if tp == nil {
		return res, Decisions{}, err
	}
	return res, tp.d, err
}

// timedPolicy times each Plan call. sim reads the GA's generation count
// through a Generations method, which it passes on.
type timedPolicy struct {
	policy.Policy
	d Decisions
}

func (t *timedPolicy) Plan(ctx context.Context, s policy.Snapshot) (policy.Plan, error) {
	// Locked to its thread, this goroutine is the only one the thread runs
	// until the unlock, so the thread's CPU clock counts this decision only.
	// The wall clock is read inside the CPU clock's readings (system calls
	// of a microsecond or so), so that the wall time is the policy's alone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0 := threadCPU()
	t0 := time.Now()
	p, err := t.Policy.Plan(ctx, s)
	t.d.Wall = append(t.d.Wall, time.Since(t0))
	t.d.CPU += threadCPU() - c0
	return p, err
}

func (t *timedPolicy) Generations() int64 {
	if g, ok := t.Policy.(interface{ Generations() int64 }); ok {
		return g.Generations()
	}
	return 0
}

func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// tracesPolicies are the policies `bench traces` runs by default, those of
// them that are registered: the baselines, the GA policies and, on a
// heterogeneous machine, fastest-first EASY.
var tracesPolicies = []string{"fcfs", "easy", "easy-fast", "conservative", "lwf", "ga-ms", "ga-xms", "ga-plan"}

// TracesPolicies returns the default policies that are registered;
// easy-fast only when hetero.
func TracesPolicies(hetero bool) []string {
	var out []string
	for _, p := range tracesPolicies {
		if (p != "easy-fast" || hetero) && slices.Contains(policy.Names(), p) {
			out = append(out, p)
		}
	}
	return out
}

// Randomised tells a policy whose runs depend on the seed: the GA
// policies, named ga-….
func Randomised(name string) bool { return strings.HasPrefix(name, "ga-") }

// TracesConfig is the setting of `msched bench traces`.
type TracesConfig struct {
	Traces []Trace
	// Hosts, when it has hosts, is the machine of every trace instead of
	// its Procs identical processors.
	Hosts     sim.Machine
	Estimates []sim.EstimateKind // default request, exact
	// Policies: default TracesPolicies. easy is run whether listed or not:
	// it is what the ratios compare with.
	Policies []string
	// Seeds: a randomised policy runs once with each seed 1..Seeds, the
	// others once (seed 0); default 3.
	Seeds int
	// Options of every policy (GA generations, population, window,
	// overtaking bound); Seed and Predictor are set per run.
	Options policy.Options
	Workers int // runs in parallel; default GOMAXPROCS
	// Progress, when set, gets a line as each run ends and, every
	// ProgressEvery (default 30 s), one naming the runs under way.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// TraceRun is one run's figures: the metrics of `msched simulate`, what was
// run, and the comparison with easy on the same trace and estimate.
type TraceRun struct {
	sim.Metrics
	Trace    string  `json:"trace"`
	Estimate string  `json:"estimate"`
	Seed     int64   `json:"seed"` // 0: a deterministic policy, run once
	Hosts    int     `json:"hosts"`
	MaxWait  float64 `json:"max_wait_s"`
	// Ratios of mean wait and mean bounded slowdown to easy's; null when
	// easy's mean wait is 0 and this one's is not.
	RatioWait *float64 `json:"ratio_wait_vs_easy"`
	RatioBSLD *float64 `json:"ratio_bsld_vs_easy"`
	// Decision times, measured around the policy's Plan alone (Decisions;
	// they replace sim's mean_decision_ms, whose clock also runs over the
	// timing itself): 95th percentile of the wall time of a decision, and
	// the CPU and wall time of all of them.
	P95DecisionMS float64 `json:"p95_decision_ms"`
	DecisionCPUS  float64 `json:"decision_cpu_s"`
	DecisionWallS float64 `json:"decision_wall_s"`
}

func (c *TracesConfig) defaults() error {
	if len(c.Traces) == 0 {
		return errors.New("bench: traces: no traces")
	}
	if len(c.Estimates) == 0 {
		c.Estimates = []sim.EstimateKind{sim.Request, sim.Exact}
	}
	if len(c.Policies) == 0 {
		c.Policies = TracesPolicies(len(c.Hosts.Hosts) > 0)
	}
	for _, p := range c.Policies {
		if !slices.Contains(policy.Names(), p) {
			return fmt.Errorf("bench: unknown policy %q (known: %s)", p, strings.Join(policy.Names(), ", "))
		}
	}
	if !slices.Contains(c.Policies, "easy") {
		c.Policies = append([]string{"easy"}, c.Policies...)
	}
	if c.Seeds == 0 {
		c.Seeds = 3
	}
	if c.Seeds < 0 {
		return fmt.Errorf("bench: traces: %d seeds", c.Seeds)
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = 30 * time.Second
	}
	return nil
}

// tracesJob is one run to make: a trace, an estimate, a policy and a seed.
type tracesJob struct {
	trace, est int
	policy     string
	seed       int64
	done, all  atomic.Int64 // jobs finished and in all, for the progress line
}

func (r *tracesJob) String(cfg *TracesConfig) string {
	s := fmt.Sprintf("%s %s %s", cfg.Traces[r.trace].Name, cfg.Estimates[r.est], r.policy)
	if r.seed != 0 {
		s += fmt.Sprintf(" seed %d", r.seed)
	}
	return s
}

// Traces runs every policy (a randomised one with each seed) on every
// trace with every estimate, up to Workers runs at a time, and returns the
// runs in the order trace, estimate, policy, seed.
func Traces(ctx context.Context, cfg TracesConfig) ([]TraceRun, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	// Each trace's jobs under each estimate, built once and shared: a
	// simulation works on a copy.
	type setting struct {
		jobs    []sim.Job
		machine sim.Machine
	}
	settings := make([][]setting, len(cfg.Traces))
	var runs []*tracesJob
	for i, t := range cfg.Traces {
		m, err := t.Machine(cfg.Hosts)
		if err != nil {
			return nil, err
		}
		for k, est := range cfg.Estimates {
			tr, err := t.Jobs(len(m.Hosts), est, false)
			if err != nil {
				return nil, fmt.Errorf("bench: %s: %w", t.Source, err)
			}
			settings[i] = append(settings[i], setting{tr.Jobs, m})
			for _, p := range cfg.Policies {
				if !Randomised(p) {
					runs = append(runs, &tracesJob{trace: i, est: k, policy: p})
					continue
				}
				for s := 1; s <= cfg.Seeds; s++ {
					runs = append(runs, &tracesJob{trace: i, est: k, policy: p, seed: int64(s)})
				}
			}
		}
	}
	out := make([]TraceRun, len(runs))
	// The slow randomised runs first, so that the workers end together.
	order := make([]int, len(runs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ra, rb := Randomised(runs[a].policy), Randomised(runs[b].policy)
		switch {
		case ra && !rb:
			return -1
		case rb && !ra:
			return 1
		}
		return 0
	})
	var (
		mu       sync.Mutex // the progress writer and the set under way
		finished int
		running  = map[*tracesJob]bool{}
	)
	say := func(format string, a ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "bench traces: "+format+"\n", a...)
		}
	}
	stop := make(chan struct{})
	defer close(stop)
	if cfg.Progress != nil {
		go func() {
			tick := time.NewTicker(cfg.ProgressEvery)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				mu.Lock()
				var under []string
				for _, i := range order {
					if r := runs[i]; running[r] {
						under = append(under, fmt.Sprintf("%s %d%%", r.String(&cfg), 100*r.done.Load()/max(r.all.Load(), 1)))
					}
				}
				if len(under) > 0 {
					say("%d of %d done; under way: %s", finished, len(runs), strings.Join(under, ", "))
				}
				mu.Unlock()
			}
		}()
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.Workers)
	for _, i := range order {
		r := runs[i]
		st := settings[r.trace][r.est]
		o := cfg.Options
		o.Seed = r.seed
		g.Go(func() error {
			if gctx.Err() != nil {
				return gctx.Err()
			}
			mu.Lock()
			running[r] = true
			mu.Unlock()
			t0 := time.Now()
			res, d, err := Simulate(gctx, Run{Jobs: st.jobs, Machine: st.machine, Estimate: cfg.Estimates[r.est],
				Policy: r.policy, Options: o, Timed: true,
				Progress: func(done, total int) { r.done.Store(int64(done)); r.all.Store(int64(total)) }})
			mu.Lock()
			defer mu.Unlock()
			delete(running, r)
			if err != nil {
				return fmt.Errorf("bench: traces: %s: %w", r.String(&cfg), err)
			}
			finished++
			say("[%d/%d] %s: %.1f s", finished, len(runs), r.String(&cfg), time.Since(t0).Seconds())
			out[i] = figuresOf(res, d, cfg.Traces[r.trace].Name, cfg.Estimates[r.est], r.seed)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	compareWithEasy(out)
	return out, nil
}

func figuresOf(r *sim.Result, d Decisions, trace string, est sim.EstimateKind, seed int64) TraceRun {
	tr := TraceRun{Metrics: sim.Compute(r, false), Trace: trace, Estimate: est.String(), Seed: seed, Hosts: r.Hosts,
		DecisionCPUS: d.CPU.Seconds()}
	for k, st := range r.Status {
		if st == sim.Done { // the jobs sim.Compute counts
			tr.MaxWait = math.Max(tr.MaxWait, r.Start[k]-r.Jobs[k].Submit)
		}
	}
	// The wall times are the timed policy's, not sim's: sim's include the
	// timing's own clock readings, several microseconds a decision, which
	// is more than fcfs takes to decide.
	if n := len(d.Wall); n > 0 {
		w := slices.Clone(d.Wall)
		slices.Sort(w)
		var sum time.Duration
		for _, x := range w {
			sum += x
		}
		tr.DecisionWallS = sum.Seconds()
		tr.MeanDecisionMS = sum.Seconds() * 1000 / float64(n)
		tr.P95DecisionMS = float64(w[int(math.Ceil(0.95*float64(n)))-1]) / float64(time.Millisecond)
	}
	return tr
}

// compareWithEasy sets each run's ratios to easy's run on the same trace
// and estimate.
func compareWithEasy(runs []TraceRun) {
	type key struct{ trace, est string }
	easy := map[key]TraceRun{}
	for _, r := range runs {
		if r.Policy == "easy" {
			easy[key{r.Trace, r.Estimate}] = r
		}
	}
	for i := range runs {
		e, ok := easy[key{runs[i].Trace, runs[i].Estimate}]
		if !ok {
			continue
		}
		runs[i].RatioWait = ratio(runs[i].MeanWait, e.MeanWait)
		runs[i].RatioBSLD = ratio(runs[i].MeanBSD, e.MeanBSD)
	}
}

// ratio is a/b; 1 when both are 0, and nil when only b is.
func ratio(a, b float64) *float64 {
	var x float64
	switch {
	case b != 0:
		x = a / b
	case a == 0:
		x = 1
	default:
		return nil
	}
	return &x
}

// TracesTable writes one table per trace and estimate, in the order of
// runs; a randomised policy run with several seeds gets a row "worst"
// after its seeds: the worst of each column over them.
func TracesTable(w io.Writer, runs []TraceRun) error {
	for i := 0; i < len(runs); {
		j := i
		for j < len(runs) && runs[j].Trace == runs[i].Trace && runs[j].Estimate == runs[i].Estimate {
			j++
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s, %d hosts, %s estimates\n", runs[i].Trace, runs[i].Hosts, runs[i].Estimate)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "policy\tseed\tjobs\tmean wait s\tmean bsld\tmax wait s\twait/easy\tbsld/easy\tms/decision\tp95 ms\tdecide cpu s\tdecide wall s\t")
		for k := i; k < j; {
			l := k
			for l < j && runs[l].Policy == runs[k].Policy {
				l++
			}
			for _, r := range runs[k:l] {
				seed := "-"
				if r.Seed != 0 {
					seed = fmt.Sprint(r.Seed)
				}
				tracesRow(tw, r.Policy, seed, r)
			}
			if l-k > 1 {
				tracesRow(tw, runs[k].Policy, "worst", worst(runs[k:l]))
			}
			k = l
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		i = j
	}
	return nil
}

func tracesRow(w io.Writer, name, seed string, r TraceRun) {
	fmt.Fprintf(w, "%s\t%s\t%d/%d\t%.1f\t%.2f\t%.0f\t%s\t%s\t%.3f\t%.3f\t%.2f\t%.2f\t\n", name, seed, r.Jobs, r.Of,
		r.MeanWait, r.MeanBSD, r.MaxWait, fmtRatio(r.RatioWait), fmtRatio(r.RatioBSLD),
		r.MeanDecisionMS, r.P95DecisionMS, r.DecisionCPUS, r.DecisionWallS)
}

func fmtRatio(x *float64) string {
	if x == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *x)
}

// worst is the worst of each column over rs: the fewest jobs counted, the
// highest of the rest; a ratio that is undefined for any run is undefined.
func worst(rs []TraceRun) TraceRun {
	w := rs[0]
	for _, r := range rs[1:] {
		w.Jobs = min(w.Jobs, r.Jobs)
		w.MeanWait = math.Max(w.MeanWait, r.MeanWait)
		w.MeanBSD = math.Max(w.MeanBSD, r.MeanBSD)
		w.MaxWait = math.Max(w.MaxWait, r.MaxWait)
		w.RatioWait = worseRatio(w.RatioWait, r.RatioWait)
		w.RatioBSLD = worseRatio(w.RatioBSLD, r.RatioBSLD)
		w.MeanDecisionMS = math.Max(w.MeanDecisionMS, r.MeanDecisionMS)
		w.P95DecisionMS = math.Max(w.P95DecisionMS, r.P95DecisionMS)
		w.DecisionCPUS = math.Max(w.DecisionCPUS, r.DecisionCPUS)
		w.DecisionWallS = math.Max(w.DecisionWallS, r.DecisionWallS)
	}
	return w
}

func worseRatio(a, b *float64) *float64 {
	if a == nil || b == nil {
		return nil
	}
	if *b > *a {
		return b
	}
	return a
}
