package workload

import (
	"fmt"
	"math/rand"
)

// WarwickConfig configures the warwick generator: tasks of the Warwick MS
// paper's test model (Perry et al. 1999, Eq. 2),
//
//	t(i) = C_cpu/i + C_com·i,  i = 1..Nodes,
//
// whose peak speedup is at i* = sqrt(C_cpu/C_com), where t(i*) = 2·C_cpu/i*
// and efficiency is 50 %. The paper creates "task sets with specified
// distributions of sizes and optimum processing node numbers"; so does this
// generator. For each task:
//
//	i* uniform on the integers MinPeak..MaxPeak
//	t* = t(i*) uniform on [MeanSize/2, 3·MeanSize/2] seconds (mean MeanSize)
//	C_cpu = t*·i*/2,  C_com = t*/(2·i*)  (so that C_cpu/C_com = i*²).
//
// Zero fields take the defaults of DefaultWarwickConfig.
type WarwickConfig struct {
	Jobs     int
	Nodes    int     // machine size m (header MaxProcs)
	MinPeak  int     // smallest peak-speedup node count
	MaxPeak  int     // largest (≤ Nodes)
	MeanSize float64 // mean run time at the peak, seconds (the paper's "average size" ⟨τ_j⟩)
	// MeanInterarrival > 0 draws exponential inter-arrival times of this
	// mean (seconds); 0 submits every task at time 0, the static MS problem
	// of the paper's Fig. 3.
	MeanInterarrival float64
}

// DefaultWarwickConfig is the Fig. 3 setting: 20 tasks on 16 nodes, peaks
// over 1..16, all submitted at once; tasks of 1,000 s at their peak.
func DefaultWarwickConfig() WarwickConfig {
	return WarwickConfig{Jobs: 20, Nodes: 16, MinPeak: 1, MaxPeak: 16, MeanSize: 1000}
}

func (c WarwickConfig) withDefaults() WarwickConfig {
	d := DefaultWarwickConfig()
	if c.Jobs == 0 {
		c.Jobs = d.Jobs
	}
	if c.Nodes == 0 {
		c.Nodes = d.Nodes
	}
	if c.MinPeak == 0 {
		c.MinPeak = d.MinPeak
	}
	if c.MaxPeak == 0 {
		c.MaxPeak = c.Nodes
	}
	if c.MeanSize == 0 {
		c.MeanSize = d.MeanSize
	}
	return c
}

// GenerateWarwick draws cfg.Jobs Eq. 2 tasks. Each job holds, in SWF
// fields:
//
//	5, 8  allocated = requested processors = i* (the peak-speedup count)
//	4, 9  run time = requested time = t(i*) = 2·C_cpu/i*
//	6     average CPU time per processor at i*: C_cpu/i* (the computation)
//	11    status 1
//
// so Eq2Params recovers C_cpu = R·i*/2 and C_com = R/(2·i*) from fields 8
// and 9, and a simulator that gives the task i nodes instead computes
// t(i) with Eq2Time. The tasks are moldable: i* is where they run best, not
// a demand.
func GenerateWarwick(cfg WarwickConfig, rng *rand.Rand) (Header, []Job, error) {
	cfg = cfg.withDefaults()
	if cfg.Jobs < 0 || cfg.Nodes < 1 || cfg.MinPeak < 1 || cfg.MaxPeak < cfg.MinPeak || cfg.MaxPeak > cfg.Nodes ||
		cfg.MeanSize <= 0 || cfg.MeanInterarrival < 0 {
		return Header{}, nil, fmt.Errorf("workload: warwick: bad config %+v (want 1 ≤ min peak ≤ max peak ≤ nodes, size > 0)", cfg)
	}
	jobs := make([]Job, cfg.Jobs)
	submit := 0.0
	for k := range jobs {
		if cfg.MeanInterarrival > 0 {
			submit += rng.ExpFloat64() * cfg.MeanInterarrival
		}
		peak := cfg.MinPeak + rng.Intn(cfg.MaxPeak-cfg.MinPeak+1)
		size := cfg.MeanSize * (0.5 + rng.Float64())
		ccpu := size * float64(peak) / 2
		j := NewJob()
		j.ID = int64(k + 1)
		j.Submit = submit
		j.Procs, j.ReqProcs = peak, peak
		j.Run, j.ReqTime = size, size
		j.CPU = ccpu / float64(peak)
		j.Status = StatusCompleted
		jobs[k] = j
	}
	h := generatedHeader("warwick", 0, "", len(jobs), cfg.Nodes)
	h.set("Note", fmt.Sprintf("Warwick MS Eq. 2 tasks t(i) = C_cpu/i + C_com*i (msched workload warwick): %d tasks, %d nodes, peaks %d..%d, mean size %g s, mean inter-arrival %g s",
		cfg.Jobs, cfg.Nodes, cfg.MinPeak, cfg.MaxPeak, cfg.MeanSize, cfg.MeanInterarrival))
	h.Comment("fields 5 and 8 = peak-speedup nodes i*; fields 4 and 9 = t(i*);\nC_cpu = field9 * i* / 2, C_com = field9 / (2 * i*).")
	return h, jobs, nil
}

// Eq2Params recovers the Eq. 2 parameters of a job written by
// GenerateWarwick from its requested processors i* (field 8) and requested
// time t(i*) (field 9). ok is false when either is unknown.
func Eq2Params(j Job) (ccpu, ccom float64, ok bool) {
	if j.ReqProcs <= 0 || j.ReqTime <= 0 {
		return 0, 0, false
	}
	i := float64(j.ReqProcs)
	return j.ReqTime * i / 2, j.ReqTime / (2 * i), true
}

// Eq2Time is the run time of an Eq. 2 task on i nodes: C_cpu/i + C_com·i.
func Eq2Time(ccpu, ccom float64, i int) float64 {
	return ccpu/float64(i) + ccom*float64(i)
}
