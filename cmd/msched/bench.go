package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"msched/bench"
	"msched/ga"
	"msched/hoststat"
	"msched/launch"
	"msched/notify"
	"msched/policy"
	"msched/sim"
	"msched/spool"
	"msched/workload"
)

// dataDirOr is dir, or when it is "" the directory of the repository's
// traces found from the working directory (bench.FindData).
func dataDirOr(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	if dir, err = bench.FindData(wd); err != nil {
		return "", fmt.Errorf("%w; name the directory with --data, or a trace with --workload", err)
	}
	return dir, nil
}

// printRuns writes a benchmark's runs as table does, or with asJSON one
// JSON object per run and line.
func printRuns[R any](w io.Writer, asJSON bool, runs []R, table func(io.Writer, []R) error) error {
	if !asJSON {
		return table(w, runs)
	}
	enc := json.NewEncoder(w)
	for _, r := range runs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

func newBenchCmd(v *viper.Viper) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run msched's benchmarks (convergence, etc, …)",
		Long: `Benchmarks reproduce the experiments msched is measured by. Each prints a table,
or one JSON object per result with --json. Seeds are fixed by default, so a
benchmark gives the same figures run after run (times aside).`,
	}
	cmd.AddCommand(newBenchConvergenceCmd(), newBenchETCCmd(), newBenchSpoolCmd(v))
	cmd.AddCommand(newBenchTable1Cmd(), newBenchTracesCmd(v), newBenchChaosCmd(), newBenchCoallocCmd(), newBenchMoldableCmd())
	return cmd
}

func newBenchTracesCmd(v *viper.Viper) *cobra.Command {
	var (
		cfg                      bench.TracesConfig
		file, hostsFile, dataDir string
		estimates                []string
		procs                    int
		asJSON                   bool
	)
	cmd := &cobra.Command{
		Use:   "traces",
		Short: "The policies on the repository's traces: wait and bounded slowdown against EASY",
		Long: `traces replays workloads with msched simulate's simulator under each policy, with
each estimate: by default the SDSC-SP2 sample and the NASA iPSC log (each on
128 processors, read from workload/testdata or shared/data in this directory
or a parent, or from --data) and 10,000 jobs of the o2k generator, seed 1, on
its 960 processors; --workload FILE [--procs N] replaces them with one trace.
--hosts FILE runs every trace on that file's hosts instead (heterogeneous: each
at the hardware database's speed).

The policies are fcfs, easy, conservative, lwf, ga-ms, ga-xms and ga-plan (and
easy-fast with --hosts), those of them this binary has; --policy overrides the
list, and easy is always run: each run's wait and bounded slowdown are given as
ratios to easy's on the same trace and estimate. A GA policy (ga-…) runs once
with each seed 1..--seeds, with --generations generations per decision and
the configured ga.population, ga.window and ga.max_jumps, as in simulate; the
table gives a "worst" row over its seeds.

Runs go in parallel, up to GOMAXPROCS (--workers), slowest first; progress goes
to stderr. The table has one block per trace and estimate; --json prints one
object per line and run (trace, estimate, policy, seed; seed 0 for a
deterministic policy), holding simulate --json's metrics and trace, estimate,
seed, hosts, max_wait_s, ratio_wait_vs_easy, ratio_bsld_vs_easy (null when
easy's mean is 0 and this one's is not), p95_decision_ms, decision_cpu_s and
decision_wall_s.

How long: the deterministic policies take seconds in all. A GA decision takes
tens of milliseconds at 50 generations, and a trace asks for one or two per
job: a GA run on the SDSC sample takes minutes, on NASA and o2k longer, so the
default set (3 traces × 2 estimates × 2-3 GA policies × 3 seeds) takes hours.
Limit it with --policy, --seeds, --estimate or --workload.`,
		Example: `  msched bench traces --policy fcfs,easy,conservative,lwf
  msched bench traces --workload trace.swf --procs 64 --policy easy,ga-xms --seeds 2 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Seeds < 1 {
				return fmt.Errorf("bench traces: --seeds %d: want at least 1", cfg.Seeds)
			}
			c, err := readConfig(v)
			if err != nil {
				return err
			}
			cfg.Options = simOptions(c, cfg.Options.Generations)
			for _, e := range estimates {
				k, err := sim.ParseEstimate(e)
				if err != nil {
					return err
				}
				cfg.Estimates = append(cfg.Estimates, k)
			}
			if cfg.Hosts, err = hostsMachine(c, hostsFile); err != nil {
				return err
			}
			switch {
			case procs != 0 && file == "":
				return fmt.Errorf("bench traces: --procs goes with --workload")
			case procs != 0 && hostsFile != "":
				return fmt.Errorf("bench traces: --procs and --hosts exclude each other")
			case file != "":
				t, err := bench.ReadTrace(file, procs)
				if err != nil {
					return err
				}
				cfg.Traces = []bench.Trace{t}
			default:
				dataDir, err := dataDirOr(dataDir)
				if err != nil {
					return err
				}
				if cfg.Traces, err = bench.RepoTraces(dataDir); err != nil {
					return err
				}
			}
			cfg.Progress = cmd.ErrOrStderr()
			runs, err := bench.Traces(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return printRuns(cmd.OutOrStdout(), asJSON, runs, bench.TracesTable)
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "workload", "", "one SWF trace (plain or gzip) instead of the repository's")
	f.IntVar(&procs, "procs", 0, "identical processors for --workload (default: the trace's MaxProcs)")
	f.StringVar(&hostsFile, "hosts", "", "hosts file: run every trace on these (heterogeneous) hosts")
	f.StringVar(&dataDir, "data", "", "directory of the SDSC-SP2 sample and the NASA log (default: workload/testdata or shared/data here or in a parent)")
	f.StringSliceVar(&cfg.Policies, "policy", nil, "policies, comma-separated (default: "+strings.Join(bench.TracesPolicies(false), ",")+"; known: "+strings.Join(policy.Names(), ", ")+")")
	f.StringSliceVar(&estimates, "estimate", []string{"request", "exact"}, "estimates, comma-separated: request, exact, profiler")
	f.IntVar(&cfg.Seeds, "seeds", 3, "GA policies run once with each seed 1..N")
	f.IntVar(&cfg.Options.Generations, "generations", policy.DefaultGens, "GA generations per decision")
	f.IntVar(&cfg.Workers, "workers", runtime.GOMAXPROCS(0), "runs at a time")
	f.BoolVar(&asJSON, "json", false, "one JSON object per run and line")
	return cmd
}

func newBenchSpoolCmd(v *viper.Viper) *cobra.Command {
	var cfg bench.SpoolConfig
	var asJSON bool
	var hostsFile string
	cmd := &cobra.Command{
		Use:   "spool",
		Short: "Throughput and submit-to-start latency of the five daemons on a temporary spool",
		Long: `spool runs all five daemons in this process on a temporary spool (under
$TMPDIR) with --slots local hosts. A local host is a CPU slot, not a CPU: the
jobs run "true", which uses almost no CPU, so the default of 16 slots measures
the daemons rather than this machine's CPU count.

Phase 1 drops --jobs job files into submitted/ at once (staged on the same
file system, then renamed in one loop) and measures end-to-end throughput,
first submit to last report. Phase 2 submits --idle jobs one at a time, each
after the previous one's report, and measures submit-to-start latency on the
idle system (run.started_at − submitted_at, from the accounting log).

The policy and the other settings come from the configuration (policy,
ga.time_budget, …), so the figures are those of the live system as configured.
Every job is started through a shepherd: msched-shepherd when it is installed
next to this binary (go install ./cmd/...), else this binary re-executed, which
costs more CPU per job; the table says which.
--json prints {"jobs":N,"seconds":x,"jobs_per_second":x,"latency_p50_ms":x,"latency_p95_ms":x},
without the latencies when --idle 0 skips phase 2.

--hosts FILE runs the benchmark a second time, on FILE's hosts (e.g. the
testbed's ssh hosts, with --config naming the ssh settings), and prints its
figures after the local ones; its JSON line has "hosts":FILE.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tuneGC() // the daemons run in this process
			c, err := readConfig(v)
			if err != nil {
				return err
			}
			// The daemons' info lines would drown the figures; an explicit
			// --log-level (debug: sched's cycle phases) is honoured.
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			if cmd.Flags().Changed("log-level") {
				log = slog.Default()
			}
			cfg.Start = func(ctx context.Context, sp *spool.Spool, hosts []hoststat.Host, reported func(string)) error {
				c.Spool = sp.Root()
				c.ModelsDir = filepath.Join(sp.Root(), "models")
				sys := &system{cfg: c, sp: sp, hosts: hosts, log: log, launcher: launch.Local{},
					notifier: notify.NotifierFunc(func(_ context.Context, r notify.Report) error {
						reported(r.JID)
						return nil
					})}
				defer sys.close()
				return sys.run(ctx, daemonNames)
			}
			exe, _, how, _ := launch.DefaultShepherd()
			if filepath.Base(exe) != launch.ShepherdBinary {
				// The JSON line does not say it; the figures depend on it.
				fmt.Fprintf(cmd.ErrOrStderr(), "msched bench spool: note: every job starts through %s\n", how)
			}
			// Local slots first; with --hosts, the same again on those
			// hosts, so the two are measured side by side in one run.
			runs := []bench.SpoolConfig{cfg}
			if hostsFile != "" {
				hs, err := hoststat.LoadHosts(hostsFile)
				if err != nil {
					return err
				}
				remote := cfg
				remote.Hosts, remote.HostsName = hs, hostsFile
				runs = append(runs, remote)
			}
			for _, rc := range runs {
				r, err := bench.Spool(cmd.Context(), rc)
				if err != nil {
					return err
				}
				r.Shepherd = how
				if asJSON {
					err = json.NewEncoder(cmd.OutOrStdout()).Encode(r)
				} else {
					err = bench.SpoolTable(cmd.OutOrStdout(), r)
				}
				if err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Jobs, "jobs", 2000, "job files dropped at once")
	f.IntVar(&cfg.Slots, "slots", 16, "local hosts (CPU slots; true needs almost no CPU)")
	f.StringVar(&hostsFile, "hosts", "", "also run the benchmark on this hosts file's hosts (ssh hosts: the figures include ssh), after the local slots")
	f.IntVar(&cfg.Idle, "idle", 30, "jobs submitted one at a time for the idle latency (0 skips that phase)")
	f.DurationVar(&cfg.Timeout, "timeout", 10*time.Minute, "give up after this long")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func newBenchConvergenceCmd() *cobra.Command {
	var cfg bench.ConvergenceConfig
	var cost, svg string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "convergence",
		Short: "GA vs simulated annealing vs random search on the MS paper's Fig. 3 setting",
		Long: `The Fig. 3 setting of the MS paper: 20 Eq. 2 tasks, t(i) = C_cpu/i + C_com·i, on
16 identical nodes, peak-speedup node counts spread over 1..16 (see
bench.Fig3Problem). GA, SA and random search (peak-speedup node counts) each
get the same budget of evaluations in every run; the report gives the mean best
cost against evaluations and wall time, FIFO, the greedy list scheduler and the
lower bound.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := ga.ParseCost(cost)
			if err != nil {
				return err
			}
			cfg.Cost = k
			r, err := bench.Convergence(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if svg != "" {
				if err := writeFileWith(svg, r.SVG); err != nil {
					return err
				}
			}
			if asJSON {
				r.Curves = nil // the one-line object of the issue; curves go to the table and SVG
				return json.NewEncoder(cmd.OutOrStdout()).Encode(r)
			}
			return r.Table(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Runs, "runs", 20, "runs per method")
	f.IntVar(&cfg.Evaluations, "evals", 30000, "evaluations per run")
	f.IntVar(&cfg.Tasks, "tasks", 20, "tasks")
	f.IntVar(&cfg.Hosts, "hosts", 16, "identical nodes")
	f.Int64Var(&cfg.Seed, "seed", 1, "instance seed (run r uses seed+1+r)")
	f.StringVar(&cost, "cost", "ms", "cost: ms, xms or xms-continuous")
	f.Float64Var(&cfg.LocalSearch, "local-search", 0, "share of the GA's offspring descended by the local search (not counted as evaluations)")
	f.StringVar(&svg, "svg", "", "write the convergence plot to this SVG file")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func newBenchETCCmd() *cobra.Command {
	var cfg bench.ETCConfig
	var files, classes []string
	var seed int64
	var seeds, tasks, machines int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "etc",
		Short: "Memetic GA vs Min-min, Max-min, Sufferage and an ILS on Braun et al.'s ETC instances",
		Long: `ETC instances (--tasks × --machines, default Braun's 512 × 16; task-major, one
number per line) are read with --file or generated by Braun's range-based method
with --class (default: all 12 classes: u_{c,i,s}_{hihi,hilo,lohi,lolo}), for
instance seeds --seed to --seed+--seeds-1.

For each instance it prints the makespans of Min-min, Max-min and Sufferage,
of an iterated local search from Min-min (ILS) and of the memetic GA, each of
the last two given --seconds, and the exact LP relaxation lower bound
(lp_bound in --json), with the GA's and the ILS's makespans over it. The GA's
first population holds Min-min's mapping (as Braun's GA's did) and the LP
dual's best responses (each task on the host of least weighted run time, at
the LP's weights and at slightly jittered ones), the LP being solved within
the GA's time. --ils-from-dual starts the ILS from the response at the LP's
weights, to show how much of the GA's lead is its start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			type inst struct {
				name string
				etc  [][]float64
			}
			var insts []inst
			for _, f := range files {
				fh, err := os.Open(f)
				if err != nil {
					return err
				}
				etc, err := workload.ReadETC(fh, tasks, machines)
				fh.Close()
				if err != nil {
					return fmt.Errorf("%s: %w", f, err)
				}
				insts = append(insts, inst{filepath.Base(f), etc})
			}
			if len(files) == 0 && len(classes) == 0 {
				classes = workload.Classes()
			}
			if seeds < 1 {
				return fmt.Errorf("--seeds %d: want at least 1", seeds)
			}
			for s := seed; s < seed+int64(seeds); s++ {
				for _, c := range classes {
					etc, err := workload.GenerateETC(c, tasks, machines, rand.New(rand.NewSource(s)))
					if err != nil {
						return err
					}
					name := c
					if seeds > 1 {
						name = fmt.Sprintf("%s/%d", c, s)
					}
					insts = append(insts, inst{name, etc})
				}
			}
			var rs []bench.ETCResult
			enc := json.NewEncoder(cmd.OutOrStdout())
			for _, in := range insts {
				r, err := bench.ETC(cmd.Context(), in.name, in.etc, cfg)
				if err != nil {
					return err
				}
				if asJSON {
					if err := enc.Encode(r); err != nil {
						return err
					}
				}
				rs = append(rs, r)
			}
			if asJSON {
				return nil
			}
			return bench.ETCTable(cmd.OutOrStdout(), rs)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&files, "file", nil, "ETC instance file(s) (512×16 numbers, task-major)")
	f.StringSliceVar(&classes, "class", nil, "generate instances of these classes (e.g. u_c_hihi)")
	f.Int64Var(&seed, "seed", 1, "seed of the first generated instance of each class")
	f.IntVar(&tasks, "tasks", workload.BraunTasks, "tasks of each instance (rows of a --file)")
	f.IntVar(&machines, "machines", workload.BraunMachines, "machines of each instance (numbers per task in a --file)")
	f.IntVar(&seeds, "seeds", 1, "generated instances per class (seeds --seed, --seed+1, …)")
	f.Int64Var(&cfg.Seed, "ga-seed", 1, "seed of the GA and the ILS")
	f.IntVar(&cfg.Evaluations, "evals", 0, "evaluations of the GA and of the ILS per instance (0: until --seconds)")
	f.DurationVar(&cfg.TimeLimit, "seconds", 10*time.Second, "wall time of the GA, and again of the ILS, per instance")
	f.BoolVar(&asJSON, "json", false, "one JSON object per instance and line")
	f.BoolVar(&cfg.ILSFromDual, "ils-from-dual", false, "start the ILS from the GA's LP-dual seed instead of Min-min")
	return cmd
}

// writeFileWith streams a file through f and replaces path with it
// atomically (spool.PendingFile: a temporary beside it, fsynced, renamed), so
// an interrupted run never leaves half a trace or plot behind.
func writeFileWith(path string, f func(w io.Writer) error) error {
	p, err := spool.NewPendingFile("", filepath.Dir(path), filepath.Base(path))
	if err != nil {
		return err
	}
	defer p.Cleanup()
	bw := bufio.NewWriter(p)
	if err := f(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return p.Commit()
}
