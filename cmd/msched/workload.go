package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"msched/workload"
)

func newWorkloadCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workload",
		Short: "Generate synthetic workloads (SWF) and characterise traces",
		Long: `Workloads are job traces in the Standard Workload Format (SWF 2.2): one job per
line, 18 fields, ';' header comments. "generate" writes a synthetic trace;
"stats" characterises any trace, plain or gzip-compressed.`,
	}
	cmd.AddCommand(newWorkloadGenerateCmd(), newWorkloadStatsCmd())
	return cmd
}

// generateFlags holds every kind's flags; kindFlags says which kinds each
// kind-specific flag belongs to.
type generateFlags struct {
	jobs   int
	seed   int64
	out    string
	warw   workload.WarwickConfig
	gib    workload.GibbonsConfig
	o2k    workload.O2KConfig
	mc     workload.MulticlusterConfig
	lublin workload.LublinConfig
	mcType string
	gap    float64
}

var kindFlags = map[string][]string{
	"nodes": {"warwick"}, "min-peak": {"warwick"}, "max-peak": {"warwick"}, "mean-size": {"warwick"},
	"interarrival": {"warwick", "gibbons"},
	"min-procs":    {"gibbons"}, "max-procs": {"gibbons"}, "users": {"gibbons"},
	"rate-scale": {"o2k"}, "interarrival-cv": {"o2k"},
	"clusters": {"multicluster"}, "cluster-size": {"multicluster"}, "request": {"multicluster"},
	"n1": {"multicluster"}, "n2": {"multicluster"}, "utilisation": {"multicluster"}, "time-unit": {"multicluster"},
	"alpha": {"lublin"},
}

func newWorkloadGenerateCmd() *cobra.Command {
	var g generateFlags
	cmd := &cobra.Command{
		Use:   "generate KIND",
		Short: "Write a synthetic SWF trace (warwick, gibbons, o2k, multicluster, lublin)",
		Long: `Write a synthetic trace in SWF to stdout, or to --out. The header says how it was
generated (kind, parameters, seed); the same kind, flags and seed give the same
trace, byte for byte.

Kinds:

warwick       Tasks of the MS paper's Eq. 2. Each task's peak-speedup node count i*
              is uniform on --min-peak..--max-peak and its run time at the peak,
              t(i*) = 2·C_cpu/i*, uniform on [size/2, 3·size/2] (--mean-size, s).
              Fields 5 and 8 hold i*, fields 4 and 9 t(i*); C_cpu = t(i*)·i*/2 and
              C_com = t(i*)/(2·i*) (workload.Eq2Params). --interarrival 0 (default)
              submits all tasks at time 0, as in the paper's Fig. 3.
gibbons       Gibbons's thesis, Tables 6.1 and 6.2: 13 executables (field 14) with
              the table's shares, mean work W, CV and sequential fraction D; p
              uniform on --min-procs..--max-procs (2..16); run time
              t = W·(D + (1−D)/p); exponential inter-arrivals, mean 150 s. No
              requested times: estimates are the profiler's job.
o2k           Chiang & Vernon's NCSA Origin 2000 roadmap: weekday/weekend arrival
              cycle (peak 30 jobs/h) with hyperexponential gaps; processors (35 %
              serial, 90 % powers of two, ≤ 64); memory given P; requested time
              given (P, M) massed at 5/50/200/400 h; run time as T/R; peak memory.
              Meets the paper's statistics on the 960-processor machine (check with
              "msched workload stats FILE").
multicluster  Bucur & Epema's co-allocation jobs: --clusters C of --cluster-size N;
              --request total|unordered|ordered; C components uniform on
              --n1..--n2; exponential service, mean one --time-unit (s); Poisson
              arrivals offering --utilisation. Field 15 = request type (1 total, 2
              unordered, 3 ordered), field 16 = components, two digits each
              (3010402 = 3,1,4,2); header "; Clusters: 8 8 8 8".
lublin        The Lublin–Feitelson model of rigid jobs (whole-sample defaults) on
              128 nodes: 24.4 % serial, the rest 2^u, mostly powers of two; run
              times e^h, h hyper-gamma, at most e^12 s; inter-arrivals e^g, g gamma
              of shape --alpha × 1.0225, stretched by a daily cycle. SCOJO-P's
              paper: W1 α = 10.23 (the default), the heavier W2 α = 9.83.
              Requested time = run time.

A flag that belongs to another kind is an error.`,
		Example: `  msched workload generate o2k --jobs 100000 --seed 1 --out o2k.swf
  msched workload generate gibbons --seed 7
  msched workload generate multicluster --request ordered --n2 8 --utilisation 0.55
  msched workload generate lublin --alpha 9.83 --out w2.swf`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: kindNames(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGenerate(cmd, args[0], &g)
		},
	}
	f := cmd.Flags()
	f.IntVar(&g.jobs, "jobs", 0, "number of jobs (default: the kind's: warwick 20, gibbons 200, o2k 10000, multicluster 10000, lublin 10000)")
	f.Int64Var(&g.seed, "seed", 1, "random seed")
	f.StringVarP(&g.out, "out", "o", "", "write to this file (default: stdout)")
	f.Float64Var(&g.gap, "interarrival", 0, "warwick, gibbons: mean inter-arrival time, s (warwick default 0 = all at once; gibbons 150)")
	f.IntVar(&g.warw.Nodes, "nodes", 16, "warwick: nodes of the machine")
	f.IntVar(&g.warw.MinPeak, "min-peak", 1, "warwick: smallest peak-speedup node count")
	f.IntVar(&g.warw.MaxPeak, "max-peak", 0, "warwick: largest peak-speedup node count (default: --nodes)")
	f.Float64Var(&g.warw.MeanSize, "mean-size", 1000, "warwick: mean run time at the peak, s")
	f.IntVar(&g.gib.MinProcs, "min-procs", 2, "gibbons: fewest processors")
	f.IntVar(&g.gib.MaxProcs, "max-procs", 16, "gibbons: most processors")
	f.IntVar(&g.gib.Users, "users", 1, "gibbons: users the jobs are spread over")
	f.Float64Var(&g.o2k.RateScale, "rate-scale", 1, "o2k: multiply every arrival rate")
	f.Float64Var(&g.o2k.InterarrivalCV, "interarrival-cv", 1.5, "o2k: CV of inter-arrival times within a period (paper: 1-2)")
	f.IntVar(&g.mc.Clusters, "clusters", 4, "multicluster: clusters C (≤ 9)")
	f.IntVar(&g.mc.ClusterSize, "cluster-size", 8, "multicluster: processors per cluster N")
	f.StringVar(&g.mcType, "request", "unordered", "multicluster: request type: total, unordered or ordered")
	f.IntVar(&g.mc.N1, "n1", 1, "multicluster: smallest component")
	f.IntVar(&g.mc.N2, "n2", 4, "multicluster: largest component")
	f.Float64Var(&g.mc.Utilisation, "utilisation", 0.5, "multicluster: offered utilisation")
	f.Float64Var(&g.mc.TimeUnit, "time-unit", 3600, "multicluster: seconds per unit of mean service time")
	f.Float64Var(&g.lublin.Alpha, "alpha", workload.LublinAlphaW1, "lublin: shape of the inter-arrival gamma, above 0 and at most 20 (SCOJO-P's paper: W1 = 10.23, W2 = 9.83, 128 nodes)")
	return cmd
}

func kindNames() []string {
	var names []string
	for _, k := range workload.Kinds {
		names = append(names, k.Name)
	}
	return names
}

func runGenerate(cmd *cobra.Command, kind string, g *generateFlags) error {
	if !slices.Contains(kindNames(), kind) {
		return fmt.Errorf("workload generate: unknown kind %q (want one of %s)", kind, strings.Join(kindNames(), ", "))
	}
	for _, name := range slices.Sorted(maps.Keys(kindFlags)) {
		if ks := kindFlags[name]; cmd.Flags().Changed(name) && !slices.Contains(ks, kind) {
			return fmt.Errorf("workload generate %s: --%s is a flag of %s", kind, name, strings.Join(ks, " and "))
		}
	}
	if g.jobs < 0 {
		return fmt.Errorf("workload generate: --jobs %d", g.jobs)
	}
	rng := rand.New(rand.NewSource(g.seed))
	var (
		h    workload.Header
		jobs []workload.Job
		err  error
	)
	switch kind {
	case "warwick":
		c := g.warw
		c.Jobs, c.MeanInterarrival = g.jobs, g.gap
		h, jobs, err = workload.GenerateWarwick(c, rng)
	case "gibbons":
		c := g.gib
		c.Jobs, c.MeanInterarrival = g.jobs, g.gap
		h, jobs, err = workload.GenerateGibbons(c, rng)
	case "o2k":
		c := g.o2k
		c.Jobs = g.jobs
		h, jobs, err = workload.GenerateO2K(c, rng)
	case "multicluster":
		c := g.mc
		c.Jobs = g.jobs
		if c.Request, err = workload.ParseRequestType(g.mcType); err == nil {
			h, jobs, err = workload.GenerateMulticluster(c, rng)
		}
	case "lublin":
		c := g.lublin
		c.Jobs = g.jobs
		if c.Alpha == 0 { // the library's zero is its default, W1
			return fmt.Errorf("workload generate lublin: --alpha must be above 0 (W1 is %g, W2 %g)", workload.LublinAlphaW1, workload.LublinAlphaW2)
		}
		h, jobs, err = workload.GenerateLublin(c, rng)
	}
	if err != nil {
		return err
	}
	if err := h.Set("Note", fmt.Sprintf("seed %d: msched workload generate %s %s", g.seed, kind, strings.Join(changedFlags(cmd), " "))); err != nil {
		return err
	}
	write := func(w io.Writer) error { return workload.WriteAll(w, h, jobs) }
	if g.out == "" || g.out == "-" {
		return write(cmd.OutOrStdout())
	}
	return writeFileWith(g.out, write)
}

// changedFlags lists the flags given on the command line (but --out), so
// the header records how to generate the trace again.
func changedFlags(cmd *cobra.Command) []string {
	var out []string
	for _, name := range append([]string{"jobs"}, slices.Sorted(maps.Keys(kindFlags))...) {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			out = append(out, "--"+name+" "+fl.Value.String())
		}
	}
	return out
}

func newWorkloadStatsCmd() *cobra.Command {
	var procs int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats FILE",
		Short: "Characterise an SWF trace (plain or gzip; - for stdin)",
		Long: `Characterise a trace by the measures of Chiang & Vernon's O2K study: serial and
power-of-two shares of processor requests, run-time mean and CV, shares of jobs
over 1 h and over 20 h, mean P×T (processor-hours), the distribution of actual
over requested run time T/R (jobs with a request), offered load Σ P×T over
(processors × span of submit times), and the processor demand of each complete
30-day window. P is the allocated processor count (field 5), else the
requested one (field 8); jobs with an unknown (-1) field are left out of the
measures that need it. The trace is read once, as a stream.

--procs sets the machine size for the loads; the default is the header's
MaxProcs. --json prints one JSON object with snake_case keys.`,
		Example: `  msched workload stats testdata/SDSC-SP2-1998-4.2-cln.first5k.swf
  msched workload generate o2k --jobs 100000 | msched workload stats - --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var in io.Reader = cmd.InOrStdin()
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			r, err := workload.NewReader(in)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			defer r.Close()
			p := procs
			if p == 0 {
				p = r.Header().MaxProcs
			}
			s, err := workload.Characterise(r.All(), p)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(s)
			}
			return s.Table(cmd.OutOrStdout())
		},
	}
	cmd.Flags().IntVar(&procs, "procs", 0, "machine size for offered load and monthly demand (default: the header's MaxProcs)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
