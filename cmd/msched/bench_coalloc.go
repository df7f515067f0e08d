package main

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"msched/bench"
	"msched/policy"
)

func newBenchCoallocCmd() *cobra.Command {
	var (
		cfg    bench.CoallocConfig
		fit    string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "coalloc",
		Short: "Co-allocation in multiclusters: FCFS's maximum utilisation and FPFS's response (Bucur & Epema)",
		Long: `coalloc reproduces Bucur and Epema's co-allocation figures (JSSPP 2000) with the
simulator and the fcfs and fpfs policies of the sched daemon, which place
ordered, unordered and total requests (docs/coalloc.md).

Jobs have 4 components, each uniform on 1..4 or 1..8 (a total request asks
for their sum); service times are exponential with mean 1 time unit (1000 s
of simulated time). Unordered components go, largest first, to distinct
clusters by First Fit (--fit worst: Worst Fit).

Maximum utilisation of FCFS on 4 clusters of 8 hosts, per request type and
component range: the queue is kept saturated (a closed system: 4 jobs always
wait, --jobs in all), and the utilisation is the hosts' busy share from the
start of the job --jobs/10 (the warm-up) to the start of the last job (then
the queue drains): the throughput of a queue that never empties, the load
beyond which the queue grows without bound. The paper's Table 3 used "bin
filling" instead (an idle system filled with jobs until the next does not
fit, averaged over many fills); the table shows that estimate too, from
--bin-fills fills by the fcfs policy.

FPFS's mean response time (the paper's Table 5) on one cluster of 32 hosts,
total requests (the sum of 4 components uniform on 1..4), Poisson arrivals,
--jobs jobs, the first tenth not counted, in time units: --json has MaxJumps 0
(fcfs), 7 and 20 at utilisation 0.78; the table has all of Table 5, MaxJumps
0, 1, 3, 7, 12 and 20 at 0.78 and 0.62, each also with one overtake more than
its MaxJumps (+1), which the paper's figures at 0.78 are closer to
(docs/coalloc.md). --json runs only what it prints (about a third of the
time).

--json prints one object:
  {"max_util":{"ordered_1_4":…,"unordered_1_4":…,"total_1_4":…,
   "ordered_1_8":…,"unordered_1_8":…,"total_1_8":…},
   "fpfs_response":{"0":…,"7":…,"20":…}}
(max_util from the saturated queue). Without it, a table beside the paper's
figures. Every random choice comes from generators seeded from --seed (logged).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := policy.ParseFit(fit)
			if err != nil {
				return err
			}
			cfg.Fit, cfg.Log, cfg.Table = f, slog.Default(), !asJSON
			r, err := bench.Coalloc(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(r)
			}
			return r.Table(cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Jobs, "jobs", bench.DefaultCoallocJobs, fmt.Sprintf("jobs per simulation (at least %d; 0: the default)", bench.MinCoallocJobs))
	fl.IntVar(&cfg.BinFills, "bin-fills", bench.DefaultCoallocBinFills, "bin fills per setting (the paper's method, in the table; 0: the default)")
	fl.Int64Var(&cfg.Seed, "seed", 1, "seed of every random choice (saturated runs: seed, bin fills: seed+1, response runs: seed+2)")
	fl.StringVar(&fit, "fit", "first", "placement of unordered components: first or worst")
	fl.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
