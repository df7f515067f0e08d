package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"msched/bench"
	"msched/hoststat"
	"msched/models"
	"msched/policy"
	"msched/sim"
)

func newSimulateCmd(v *viper.Viper) *cobra.Command {
	var (
		file, hostsFile, estimate, svg string
		speedup                        string
		policies                       []string
		procs, gens                    int
		seed                           int64
		pyss, asJSON, moldable         bool
		ganttFrom, ganttSpan           float64
	)
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Replay an SWF workload under one or more policies",
		Long: `Replays an SWF trace (plain or gzip) with msched's discrete-event simulator
and the same policy code the sched daemon runs, on --procs identical
processors (default: the trace's MaxProcs) or the hosts of --hosts. Events at
one instant: submissions, then terminations, then starts; the policy decides
after each submission and each termination, and again at once after a
decision that started or rejected a job (as the live sched daemon replans on
its own moves; a GA's window then holds new jobs).

--estimate request tells policies the user's requested time (SWF field 9),
exact the actual run time, profiler the historical profiler's upper 95 %
confidence limit for the job's executable (SWF field 14) and user (field 12),
asked at submission; the profiler starts empty and learns each job's run
time as it ends. --pyss follows pyss's job and counting
conventions (see sim.FromSWF and sim.Compute), so the figures compare with
pyss's output. Seeds are logged; --generations is the GA's per-decision
budget.

--moldable makes every job moldable after SCOJO-P (sim.Moldable): the trace's
size is its N_opt and its run time there the trace's; it may run on N_opt/2
(rounded up) to 2·N_opt hosts (at most the machine), with efficiency 0.8 at
N_opt/2, 0.65 at N_opt and 0.4 at 2·N_opt, speedup linear in between
(models.Efficiency). The estimate --estimate gives (the request, the exact
run time or the profiler's, asked for N_opt hosts) is scaled to each size as
the run is. The default is request, with --moldable as without it; SCOJO-P's
paper takes run times as known, --estimate exact.
scojo-p and cirne-berman choose sizes; the other policies run a moldable job
on its smallest size.

` + speedupHelp + `

The GA policies take their settings from the configuration, as the sched
daemon does, so a simulation describes the configured live system: ga-xms and
ga-ms their population (ga.population), pool (ga.window) and overtaking bound
(ga.max_jumps); ga-plan its objective, starvation slack, idle weight,
population and stall (plan.*). Only the time budget is replaced by
--generations, which makes a run reproducible. For example
MSCHED_GA_WINDOW=40 msched simulate … tries a larger pool, and
MSCHED_PLAN_OBJECTIVE=wait msched simulate --policy ga-plan … another objective.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return fmt.Errorf("simulate: --workload is required")
			}
			cfg, err := readConfig(v)
			if err != nil {
				return err
			}
			est, err := sim.ParseEstimate(estimate)
			if err != nil {
				return err
			}
			t, err := bench.ReadTrace(file, procs)
			if err != nil {
				return err
			}
			hosts, err := hostsMachine(cfg, hostsFile)
			if err != nil {
				return err
			}
			machine, err := t.Machine(hosts)
			if err != nil {
				return err
			}
			tr, err := t.Jobs(len(machine.Hosts), est, pyss)
			if err != nil {
				return err
			}
			curve, err := models.ParseMoldCurve(speedup)
			if err != nil {
				return fmt.Errorf("simulate: --speedup: %w", err)
			}
			if cmd.Flags().Changed("speedup") && !moldable {
				return fmt.Errorf("simulate: --speedup goes with --moldable")
			}
			if moldable {
				tr.Jobs = sim.Moldable(tr.Jobs, len(machine.Hosts), curve)
			}
			slog.Info("simulate", "workload", file, "jobs", len(tr.Jobs), "skipped", tr.Skipped,
				"clamped", tr.Clamped, "tiny", tr.Tiny, "hosts", len(machine.Hosts), "estimate", est, "pyss", pyss, "moldable", moldable, "speedup", curve, "seed", seed,
				"generations", gens, "population", cfg.Population, "window", cfg.Window, "max_jumps", cfg.MaxJumps)
			opts := simOptions(cfg, gens)
			opts.Seed = seed
			var results []*sim.Result
			var ms []sim.Metrics
			for _, name := range policies {
				bar := newProgress(os.Stderr, name)
				r, _, err := bench.Simulate(cmd.Context(), bench.Run{Jobs: tr.Jobs, Machine: machine, Estimate: est,
					Policy: name, Options: opts, Record: svg != "", Progress: bar.update})
				bar.done()
				if err != nil {
					return err
				}
				if why := r.RejectionSummary(); why != "" {
					slog.Warn("simulate: "+name+" rejected jobs", "why", why)
				}
				results = append(results, r)
				ms = append(ms, sim.Compute(r, pyss))
			}
			if svg != "" {
				if err := writeFileWith(svg, func(w io.Writer) error { return sim.WriteSVG(w, results, ganttFrom, ganttSpan) }); err != nil {
					return err
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				for _, m := range ms {
					if err := enc.Encode(m); err != nil {
						return err
					}
				}
				return nil
			}
			return simulateTable(out, ms)
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "workload", "", "SWF trace (plain or gzip)")
	f.StringSliceVar(&policies, "policy", []string{"easy"}, "policies, comma-separated (known: "+strings.Join(policy.Names(), ", ")+")")
	f.IntVar(&procs, "procs", 0, "identical processors (default: the trace's MaxProcs)")
	f.StringVar(&hostsFile, "hosts", "", "hosts file of heterogeneous hosts (instead of --procs)")
	f.StringVar(&estimate, "estimate", "request", "what policies are told of run times: exact, request or profiler")
	f.BoolVar(&pyss, "pyss", false, "pyss's job and counting conventions")
	f.BoolVar(&moldable, "moldable", false, "make every job moldable (SCOJO-P's efficiency model, or --speedup; estimates scaled with it)")
	f.StringVar(&speedup, "speedup", "efficiency", speedupUsage)
	f.BoolVar(&asJSON, "json", false, "one JSON object per policy and line")
	f.StringVar(&svg, "svg", "", "write utilisation over time and the schedule (Gantt) to this SVG file")
	f.Float64Var(&ganttFrom, "gantt-from", 0, "start of the Gantt window, seconds (with --gantt-span)")
	f.Float64Var(&ganttSpan, "gantt-span", 0, "length of the Gantt window, seconds (default: the first twentieth of the run)")
	f.Int64Var(&seed, "seed", 1, "seed of every random choice of the policies")
	f.IntVar(&gens, "generations", policy.DefaultGens, "GA generations per decision")
	return cmd
}

// hostsMachine is the machine of a hosts file, each host at the speed the
// configured hardware database gives its architecture; none without a
// file.
func hostsMachine(cfg config, file string) (sim.Machine, error) {
	if file == "" {
		return sim.Machine{}, nil
	}
	hs, err := hoststat.LoadHosts(file)
	if err != nil {
		return sim.Machine{}, err
	}
	hw, err := cfg.hardware()
	if err != nil {
		return sim.Machine{}, err
	}
	return sim.FromHosts(hs, hw), nil
}

// simOptions are the policy options of a simulation: the configured GAs
// (population, pool, overtaking bound; ga-plan's plan.* settings) with a
// budget of gens generations per decision instead of the live time budget.
func simOptions(cfg config, gens int) policy.Options {
	return policy.Options{Generations: gens, Population: cfg.Population, Window: cfg.Window, MaxJumps: new(cfg.MaxJumps),
		Fit: cfg.Fit, LocalSearch: cfg.LocalSearch, Plan: cfg.Plan}
}

func simulateTable(w io.Writer, ms []sim.Metrics) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tjobs\twait s\tmedian\tp95\tresponse s\tslowdown\tbounded sld\tp95\tutil\tmakespan s\tjobs/h\tdecisions\tms/decision\t")
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t%d/%d\t%.1f\t%.0f\t%.0f\t%.1f\t%.3f\t%.3f\t%.1f\t%.3f\t%.0f\t%.1f\t%d\t%.3f\t\n",
			m.Policy, m.Jobs, m.Of, m.MeanWait, m.MedianWait, m.P95Wait, m.MeanResponse, m.MeanSlowdown,
			m.MeanBSD, m.P95BSD, m.Utilization, m.Makespan, m.Throughput, m.Decisions, m.MeanDecisionMS)
	}
	return tw.Flush()
}

// progress draws a bar on w when it is a terminal.
type progress struct {
	w    *os.File
	name string
	on   bool
}

func newProgress(w *os.File, name string) *progress {
	st, err := w.Stat()
	return &progress{w: w, name: name, on: err == nil && st.Mode()&os.ModeCharDevice != 0}
}

func (p *progress) update(done, total int) {
	if !p.on || total <= 0 {
		return
	}
	const width = 40
	n := done * width / total
	fmt.Fprintf(p.w, "\r%-12s [%s%s] %3d%%", p.name, strings.Repeat("=", n), strings.Repeat(" ", width-n), done*100/total)
}

func (p *progress) done() {
	if p.on {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
