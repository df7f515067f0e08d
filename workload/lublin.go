package workload

import (
	"fmt"
	"math"
	"math/rand"

	"gonum.org/v1/gonum/mathext"
)

// The lublin generator is the Lublin–Feitelson workload model ("The
// Workload on Parallel Supercomputers: Modeling the Characteristics of
// Rigid Jobs", JPDC 2003), with the parameters for the whole sample (no
// batch/interactive split), which SCOJO-P's paper draws its workloads W1
// and W2 from (its Table 1: 128 nodes, α = 10.23 and 9.83, the
// inter-arrival gamma's shape). The constants are the model's published
// defaults, as in Lublin's C program (lublin99.c) and its ports; bench
// moldable uses the model to check what load W1 and W2 offer, and runs it
// as a workload of its own (bench.LublinTrace).
//
// A job is drawn as the model says: its size, serial with probability
// 0.244, else 2^u for u from a two-stage uniform on [0.8, 4.5] (prob. 0.86)
// or [4.5, 7], rounded to a power of two with probability 0.576/0.756; its
// run time e^h for h from a hyper-gamma whose first branch (4.2, 0.94) has
// probability −0.0054·size + 0.78 and second (312, 0.03) the rest, drawn
// again above 12 (e^12 s, about 45 h); arrivals by "points": each job buys
// e^g points for g from gamma(α·1.0225, 0.4871) (drawn again above 13), and
// time passes half hour by half hour, each costing its weight of the daily
// cycle (the gamma(8.1737, 3.9631) density over half hours 11..58, moved to
// 0..47 and normalised to a mean of 1), the part of a half hour carried
// over. Random numbers are Go's, so traces differ from the C program's, not
// their distributions.
const (
	lublinSerialProb = 0.244
	lublinPow2Prob   = 0.576
	lublinULow       = 0.8
	lublinUMed       = 4.5
	lublinUHi        = 7 // log2 of the machine: 128 nodes
	lublinUProb      = 0.86
	lublinA1         = 4.2
	lublinB1         = 0.94
	lublinA2         = 312
	lublinB2         = 0.03
	lublinPA         = -0.0054
	lublinPB         = 0.78
	lublinBArr       = 0.4871
	lublinANum       = 8.1737
	lublinBNum       = 3.9631
	lublinARAR       = 1.0225
	lublinDayStart   = 11
	lublinBuckets    = 48
	lublinBucket     = 1800.0 // seconds
	lublinMaxRun     = 12     // log of the longest run time
	lublinMaxArrive  = 13     // log of the longest inter-arrival
	// The paper's α (its Table 1) for W1 and for the heavier W2.
	LublinAlphaW1 = 10.23
	LublinAlphaW2 = 9.83
	// LublinProcs is the model's machine, the paper's: 128 nodes.
	LublinProcs = 128
)

// LublinConfig configures the lublin generator. Zero fields take the
// defaults of DefaultLublinConfig.
type LublinConfig struct {
	Jobs int
	// Alpha is the shape α of the inter-arrival gamma: LublinAlphaW1 or,
	// for the heavier W2, LublinAlphaW2; smaller is heavier.
	Alpha float64
}

// LublinMaxAlpha bounds α. The model was fitted near 10; an inter-arrival
// gamma of shape α·1.0225 and scale 0.4871 has its mean near α/2, and the
// draws above 13 are drawn again: at 20, 1 in 10 is; at 50 almost every
// one, and the generator would not end.
const LublinMaxAlpha = 20

// DefaultLublinConfig is W1: 10,000 jobs, α = LublinAlphaW1.
func DefaultLublinConfig() LublinConfig {
	return LublinConfig{Jobs: 10000, Alpha: LublinAlphaW1}
}

func (c LublinConfig) withDefaults() LublinConfig {
	d := DefaultLublinConfig()
	if c.Jobs == 0 {
		c.Jobs = d.Jobs
	}
	if c.Alpha == 0 {
		c.Alpha = d.Alpha
	}
	return c
}

// GenerateLublin draws cfg.Jobs jobs of the Lublin–Feitelson model on its
// LublinProcs nodes. SWF fields set: job number, submit time (whole
// seconds, from a trace starting at midnight), run time (whole seconds),
// allocated = requested processors, requested time = run time, status 1.
// The rest are -1.
func GenerateLublin(cfg LublinConfig, rng *rand.Rand) (Header, []Job, error) {
	cfg = cfg.withDefaults()
	if cfg.Jobs < 0 || !(cfg.Alpha > 0 && cfg.Alpha <= LublinMaxAlpha) {
		return Header{}, nil, fmt.Errorf("workload: lublin: need jobs ≥ 0 and alpha in (0, %g] (got %d, %g)", float64(LublinMaxAlpha), cfg.Jobs, cfg.Alpha)
	}
	var w [lublinBuckets]float64
	mean := 0.0
	for i := lublinDayStart; i < lublinBuckets+lublinDayStart; i++ {
		idx := (i - 1) % lublinBuckets
		w[idx] = mathext.GammaIncReg(lublinANum, (float64(i)+0.5)/lublinBNum) - mathext.GammaIncReg(lublinANum, (float64(i)-0.5)/lublinBNum)
		mean += w[idx]
	}
	mean /= lublinBuckets
	for i := range w {
		w[i] /= mean
	}
	aarr := cfg.Alpha * lublinARAR
	var (
		t, points, reminder float64
		bucket              int
	)
	next := func() {
		g := gammaBelow(rng, aarr, lublinBArr, lublinMaxArrive)
		points += math.Exp(g) / lublinBucket
		d := 0.0
		for points > w[bucket] {
			points -= w[bucket]
			bucket = (bucket + 1) % lublinBuckets
			d += lublinBucket
		}
		r := points / w[bucket]
		d += lublinBucket * (r - reminder)
		reminder = r
		t += d
	}
	next()
	jobs := make([]Job, cfg.Jobs)
	for i := range jobs {
		j := NewJob()
		j.ID = int64(i + 1)
		j.Submit = math.Max(math.Round(t), 0)
		next()
		j.Procs = lublinNodes(rng)
		j.ReqProcs = j.Procs
		p := math.Min(math.Max(lublinPA*float64(j.Procs)+lublinPB, 0), 1)
		a, b := float64(lublinA2), lublinB2
		if rng.Float64() <= p {
			a, b = lublinA1, lublinB1
		}
		j.Run = math.Floor(math.Exp(gammaBelow(rng, a, b, lublinMaxRun)))
		j.ReqTime = j.Run
		j.Status = StatusCompleted
		jobs[i] = j
	}
	h := generatedHeader("lublin", 0, "", len(jobs), LublinProcs)
	h.set("Note", fmt.Sprintf("Lublin-Feitelson model, whole-sample defaults (msched workload lublin): %d jobs, alpha %g",
		cfg.Jobs, cfg.Alpha))
	h.Comment("SCOJO-P's W1 is alpha 10.23, W2 alpha 9.83; requested time (field 9) = run time.")
	return h, jobs, nil
}

// lublinNodes draws a job's size.
func lublinNodes(rng *rand.Rand) int {
	u := rng.Float64()
	if u <= lublinSerialProb {
		return 1
	}
	var par float64
	if rng.Float64() <= lublinUProb {
		par = lublinULow + (lublinUMed-lublinULow)*rng.Float64()
	} else {
		par = lublinUMed + (lublinUHi-lublinUMed)*rng.Float64()
	}
	if u <= lublinSerialProb+lublinPow2Prob {
		par = math.Floor(par + 0.5)
	}
	return min(int(math.Pow(2, par)+0.5), 1<<lublinUHi)
}

// gammaBelow draws from gamma(shape a, scale b) until the value is at most
// limit.
func gammaBelow(rng *rand.Rand, a, b, limit float64) float64 {
	for {
		if g := gammaRand(rng, a) * b; g <= limit {
			return g
		}
	}
}

// gammaRand is a gamma(a, 1) variate (Marsaglia and Tsang; a < 1 by
// boosting with U^(1/a)).
func gammaRand(rng *rand.Rand, a float64) float64 {
	if a < 1 {
		return gammaRand(rng, a+1) * math.Pow(rng.Float64(), 1/a)
	}
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
