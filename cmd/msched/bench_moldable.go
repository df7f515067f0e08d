package main

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"msched/bench"
	"msched/models"
	"msched/policy"
	"msched/sim"
	"msched/workload"
)

// speedupHelp and speedupUsage describe --speedup, of simulate --moldable
// and bench moldable.
const (
	speedupHelp = `--speedup downey gives the moldable jobs Downey's speedup curve rather than
the efficiency model (models.DowneyCurve): variance coefficient sigma 0.5
(downey:SIGMA sets another, 0 to 100), the average parallelism chosen so that
N_opt is the job's processor working set, as on the efficiency model; sizes
N_opt/2 (rounded up) to where its speedup stops growing (2·N_opt − 1 at sigma
0.5, sigma·N_opt from sigma 1), at most the machine.`
	speedupUsage = "moldable jobs' speedup curve: efficiency (SCOJO-P's), downey (sigma 0.5) or downey:SIGMA"
)

func newBenchMoldableCmd() *cobra.Command {
	var (
		cfg                  bench.MoldableConfig
		file, dataDir        string
		procs, o2kJobs, seed int
		lublinJobs           int
		asJSON               bool
		estimate, speedup    string
	)
	cmd := &cobra.Command{
		Use:   "moldable",
		Short: "Moldable-job sizing: SCOJO-P and Cirne-Berman against fixed sizes",
		Long: fmt.Sprintf(`moldable replays workloads with every job made moldable after SCOJO-P
(Barsanti and Sodan; msched simulate --moldable): a job's trace size is its
N_opt, its trace run time its run time there, and it may run on N_opt/2 to
2·N_opt hosts with efficiency 0.8, 0.65 and 0.4 at N_opt/2, N_opt and
2·N_opt. Policies are told exact run times, as in the paper; --estimate
request tells them the trace's requested times instead, and profiler the
historical profiler's, each scaled to a moldable job's size as its run is.

`+speedupHelp+`

The policies: easy on the trace as it is (fixed sizes, arrival order; the
baseline), and on the moldable trace scojo-rigid (the paper's traditional
scheduler: short, medium and long classes with aging, EASY backfilling, every
job at N_opt), cirne-berman (sizes chosen at submission) and scojo-p (sizes
chosen at start from the predicted load). --policy overrides the list; easy
always runs the rigid trace, the others the moldable one.

Load levels. The paper's workloads are the Lublin-Feitelson model on 128
nodes, W1 (inter-arrival alpha 10.23) and the heavier W2 (alpha 9.83); drawn
from that model they offer loads of %.2f and %.2f (the work at N_opt over the
machine's capacity, first to last submission; docs/moldable.md). Its headline
figures (70 %% and 30 %% lower mean response than fixed sizes, for SCOJO-P and
Cirne-Berman) are at W1, so every workload is brought to offered load %.2f by
default, by scaling its inter-arrival times (the factor is printed on
stderr); --load sets another level (%.2f: W2), --load 0 keeps each trace's own.

Workloads: the SDSC-SP2 sample (4,606 usable jobs of 5,000, own load 0.65,
128 processors; read from workload/testdata or shared/data here or in a
parent, or --data), --o2k-jobs jobs of the o2k generator (seed --seed; its
own load is about 0.98 of 960 processors) and --lublin-jobs jobs of the
Lublin-Feitelson model at W1 (seed --seed; 128 nodes), the paper's own
workload; --workload FILE [--procs N] replaces them with one trace.

The table gives each policy's mean response, wait and bounded slowdown over
all finished jobs, utilisation, the mean of size over N_opt, and mean response
over easy's and over cirne-berman's. --json prints one object per workload and
policy: {"workload", "policy", "mean_response_s", "mean_wait_s",
"utilization"}. Runs go in parallel (--workers); the default set takes
seconds.`, bench.MoldableLoadW1, bench.MoldableLoadW2, bench.MoldableLoadW1, bench.MoldableLoadW2),
		Example: `  msched bench moldable
  msched bench moldable --load 0.91 --json
  msched bench moldable --workload trace.swf --procs 64 --policy easy,scojo-p`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			est, err := sim.ParseEstimate(estimate)
			if err != nil {
				return fmt.Errorf("bench moldable: %w", err)
			}
			cfg.Estimate = est
			if cfg.Curve, err = models.ParseMoldCurve(speedup); err != nil {
				return fmt.Errorf("bench moldable: --speedup: %w", err)
			}
			switch {
			case procs != 0 && file == "":
				return fmt.Errorf("bench moldable: --procs goes with --workload")
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
				t, err := bench.ReadTrace(filepath.Join(dataDir, bench.SDSCFile), bench.SDSCProcs)
				if err != nil {
					return err
				}
				t.Name = "sdsc-sp2"
				cfg.Traces = []bench.Trace{t}
				if o2kJobs > 0 {
					o2k, err := bench.O2KTrace(o2kJobs, int64(seed))
					if err != nil {
						return err
					}
					cfg.Traces = append(cfg.Traces, o2k)
				}
				if lublinJobs > 0 {
					lub, err := bench.LublinTrace("lublin-w1", lublinJobs, workload.LublinAlphaW1, int64(seed))
					if err != nil {
						return err
					}
					cfg.Traces = append(cfg.Traces, lub)
				}
			}
			cfg.Progress = cmd.ErrOrStderr()
			runs, err := bench.Moldable(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return printRuns(cmd.OutOrStdout(), asJSON, runs, bench.MoldableTable)
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "workload", "", "one SWF trace (plain or gzip) instead of the SDSC-SP2 sample and o2k")
	f.IntVar(&procs, "procs", 0, "identical processors for --workload (default: the trace's MaxProcs)")
	f.StringVar(&dataDir, "data", "", "directory of the SDSC-SP2 sample (default: workload/testdata or shared/data here or in a parent)")
	f.Float64Var(&cfg.Load, "load", bench.MoldableLoadW1, fmt.Sprintf("offered load to scale each workload to (W1 %.2f, W2 %.2f; 0: the trace's own)", bench.MoldableLoadW1, bench.MoldableLoadW2))
	f.IntVar(&o2kJobs, "o2k-jobs", bench.O2KJobs, "jobs of the o2k workload (0: none)")
	f.IntVar(&lublinJobs, "lublin-jobs", 10000, "jobs of the Lublin-Feitelson W1 workload (0: none)")
	f.IntVar(&seed, "seed", bench.O2KSeed, "seed of the o2k and Lublin-Feitelson workloads")
	f.StringSliceVar(&cfg.Policies, "policy", nil, "policies, comma-separated (default: "+strings.Join(bench.MoldablePolicies, ",")+"; known: "+strings.Join(policy.Names(), ", ")+")")
	f.StringVar(&estimate, "estimate", "exact", "what policies are told of run times: exact (the paper's), request or profiler")
	f.StringVar(&speedup, "speedup", "efficiency", speedupUsage)
	f.IntVar(&cfg.Workers, "workers", runtime.GOMAXPROCS(0), "runs at a time")
	f.BoolVar(&asJSON, "json", false, "one JSON object per workload and policy and line")
	return cmd
}
