package workload

import (
	"fmt"
	"math/rand"
)

// GibbonsExecutable is one row of Table 6.2 of Gibbons, "A Historical
// Application Profiler for Use by Parallel Schedulers" (MSc thesis, 1997):
// a synthetic application that sleeps t = W·(D + (1−D)/p) on p processors.
type GibbonsExecutable struct {
	Name     string
	Fraction float64 // share of the jobs, in percent
	MeanWork float64 // mean of W, seconds ("Mean time" in the table)
	CV       float64 // coefficient of variation of W
	D        float64 // fraction sequential (Amdahl)
}

// GibbonsTable62 is the thesis's Table 6.2, as printed. Its fractions add
// up to 99.9 %; the generator normalises them.
var GibbonsTable62 = []GibbonsExecutable{
	{"Test1", 14.4, 5778.8, 1.9, 0.1},
	{"Test2", 14.4, 106.9, 3.7, 0.01},
	{"Test3", 11.6, 6.2, 2.1, 0.001},
	{"Test4", 4.0, 165.7, 0.8, 0.01},
	{"Test5", 3.8, 703.2, 1.4, 0.001},
	{"Test6", 3.5, 122.0, 1.1, 0.1},
	{"Test7", 2.8, 184.9, 1.0, 0.01},
	{"Test8", 2.5, 4980.4, 1.5, 0.1},
	{"Test9", 2.3, 2.4, 0.5, 0.01},
	{"Test10", 2.0, 4.7, 1.0, 0.001},
	{"Test11", 1.7, 11.1, 1.1, 0.01},
	{"Test12", 1.5, 360.9, 1.2, 0.1},
	{"Test13", 35.4, 1147.2, 3.9, 0.01},
}

// GibbonsConfig configures the gibbons generator, the workload of the
// thesis's experiments (Tables 6.1 and 6.2): each job picks an executable
// with the table's probabilities, draws its work W with the executable's
// mean and CV (CV < 1: Erlang-type, = 1: exponential, > 1: hyperexponential
// with balanced means, §6.1), a processor count p uniform on
// MinProcs..MaxProcs, and runs t = W·(D + (1−D)/p) (Eq. 6.1). Inter-arrival
// times are exponential. Zero fields take the defaults of
// DefaultGibbonsConfig.
//
// The thesis's Erlang formula did not survive extraction in a form whose
// mean is M; the generator uses the standard two-moment mixed-Erlang fit
// (Tijms), which has the table's mean and CV exactly.
type GibbonsConfig struct {
	Jobs             int
	MinProcs         int
	MaxProcs         int
	MeanInterarrival float64 // seconds
	// Users > 1 spreads the jobs uniformly over users 1..Users, giving the
	// profiler (executable, user) categories finer than the executable;
	// the thesis's runs were all submitted by one user.
	Users       int
	Executables []GibbonsExecutable
}

// DefaultGibbonsConfig is Table 6.1: 200 jobs, p uniform on 2..16,
// exponential inter-arrivals of mean 150 s, one user, Table 6.2's 13
// executables.
func DefaultGibbonsConfig() GibbonsConfig {
	return GibbonsConfig{Jobs: 200, MinProcs: 2, MaxProcs: 16, MeanInterarrival: 150, Users: 1, Executables: GibbonsTable62}
}

func (c GibbonsConfig) withDefaults() GibbonsConfig {
	d := DefaultGibbonsConfig()
	if c.Jobs == 0 {
		c.Jobs = d.Jobs
	}
	if c.MinProcs == 0 {
		c.MinProcs = d.MinProcs
	}
	if c.MaxProcs == 0 {
		c.MaxProcs = d.MaxProcs
	}
	if c.MeanInterarrival == 0 {
		c.MeanInterarrival = d.MeanInterarrival
	}
	if c.Users == 0 {
		c.Users = d.Users
	}
	if c.Executables == nil {
		c.Executables = d.Executables
	}
	return c
}

// GenerateGibbons draws cfg.Jobs jobs of the thesis's workload. SWF fields
// set: job number, submit time, run time t, allocated = requested
// processors p, status 1, user, group 1, executable (1-based row of the
// table, field 14). Requested time is -1: the jobs carry no user estimate,
// which is what the historical profiler is for. W is recovered from a job
// as t / (D + (1−D)/p) with D of its executable.
func GenerateGibbons(cfg GibbonsConfig, rng *rand.Rand) (Header, []Job, error) {
	cfg = cfg.withDefaults()
	if cfg.Jobs < 0 || cfg.MinProcs < 1 || cfg.MaxProcs < cfg.MinProcs || cfg.MeanInterarrival < 0 || cfg.Users < 1 || len(cfg.Executables) == 0 {
		return Header{}, nil, fmt.Errorf("workload: gibbons: bad config (jobs %d, procs %d..%d, inter-arrival %g, users %d, %d executables)",
			cfg.Jobs, cfg.MinProcs, cfg.MaxProcs, cfg.MeanInterarrival, cfg.Users, len(cfg.Executables))
	}
	items := make([]weighted[int], len(cfg.Executables))
	for i, e := range cfg.Executables {
		if e.MeanWork <= 0 || e.CV < 0 || e.D < 0 || e.D > 1 || e.Fraction < 0 {
			return Header{}, nil, fmt.Errorf("workload: gibbons: bad executable %+v", e)
		}
		items[i] = weighted[int]{i, e.Fraction}
	}
	pick := newDiscrete(items)
	jobs := make([]Job, cfg.Jobs)
	submit := 0.0
	for k := range jobs {
		submit += rng.ExpFloat64() * cfg.MeanInterarrival
		x := pick.draw(rng)
		e := cfg.Executables[x]
		w := byCV(rng, e.MeanWork, e.CV)
		p := cfg.MinProcs + rng.Intn(cfg.MaxProcs-cfg.MinProcs+1)
		j := NewJob()
		j.ID = int64(k + 1)
		j.Submit = submit
		j.Run = w * (e.D + (1-e.D)/float64(p))
		j.Procs, j.ReqProcs = p, p
		j.Status = StatusCompleted
		j.User = 1 + rng.Intn(cfg.Users)
		j.Group = 1
		j.Executable = x + 1
		jobs[k] = j
	}
	h := generatedHeader("gibbons", 0, "", len(jobs), cfg.MaxProcs)
	h.set("Note", fmt.Sprintf("Gibbons 1997 Table 6.2 workload (msched workload gibbons): %d jobs, p uniform %d..%d, exponential inter-arrivals mean %g s, %d users",
		cfg.Jobs, cfg.MinProcs, cfg.MaxProcs, cfg.MeanInterarrival, cfg.Users))
	h.Comment("run time t = W*(D + (1-D)/p); executable (field 14): name, fraction %, mean W s, CV, D")
	for i, e := range cfg.Executables {
		h.Comment(fmt.Sprintf("  %2d %-7s %5.1f %8.1f %4.1f %g", i+1, e.Name, e.Fraction, e.MeanWork, e.CV, e.D))
	}
	return h, jobs, nil
}
