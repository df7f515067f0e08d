package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"msched/bench"
	"msched/policy"
)

func newBenchTable1Cmd() *cobra.Command {
	var cfg bench.Table1Config
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "table1",
		Short: "Task execution rates of FIFO, GA-MS and GA-XMS (the MS paper's Table 1)",
		Long: `msched's reproduction of Table 1 of the MS paper: 16 nodes, Eq. 2 moldable
tasks of average size 16, 32 and 64, the queue topped up so that 20 tasks are
always waiting, tasks executed per hour of simulated time. FIFO is the paper's
"standard queueing method": arrival order, each task on the node count its
submitter requested without knowing t(i) (uniform on 1..16); fifo-peak is FIFO
given that knowledge (each task on its peak-speedup count); ga-ms, ga-xms and
ga-xms-continuous (XMS with δ read as an idle fraction rather than an
indicator) are the live GA policies, which choose every task's nodes from
t(i). "Size" is read as the mean run time (s) of a task on its peak-speedup
node count; see bench.Table1Config for the whole setup, which is printed with
the table.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := bench.Table1(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(r)
			}
			return r.Table(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.Float64SliceVar(&cfg.Sizes, "sizes", []float64{16, 32, 64}, "average task sizes S (mean run time on the peak-speedup count, s)")
	f.IntVar(&cfg.Nodes, "nodes", 16, "identical nodes")
	f.IntVar(&cfg.PeakMin, "peak-min", 1, "lowest peak-speedup node count i* (i* uniform on peak-min..nodes)")
	f.Float64Var(&cfg.LocalSearch, "local-search", 0, "share of the GAs' offspring descended by the local search (not counted in --generations)")
	f.IntVar(&cfg.Backlog, "backlog", 20, "tasks always waiting")
	f.Float64Var(&cfg.HorizonTasks, "horizon", 250, "simulated horizon in units of S")
	f.IntVar(&cfg.Generations, "generations", policy.DefaultGens, "GA generations per decision")
	f.Int64Var(&cfg.Seed, "seed", 1, "task stream and GA seed")
	f.StringSliceVar(&cfg.Policies, "policy", []string{"fifo", "fifo-peak", "ga-ms", "ga-xms", "ga-xms-continuous"}, "policies to compare (fifo, fifo-peak, or any live policy)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
