package learn

import (
	"context"
	"slices"
	"sync"
	"time"

	"msched/acct"
	"msched/policy"
)

// Defaults of a Corrector (config learning.window and learning.min).
const (
	// DefaultWindow: the last 50 jobs of a model on an architecture; long
	// enough for a stable median, short enough to follow a changed code or
	// input size within a day or two of a busy model's runs.
	DefaultWindow = 50
	// DefaultMinSamples: no correction from fewer than 5 jobs, whose
	// median could be one odd run.
	DefaultMinSamples = 5
)

// Corrector learns, per (model, architecture), the ratio actual/predicted
// run time of the last Window completed jobs, and corrects a later
// prediction by multiplying it with the median of those ratios. The median,
// not the mean: a job that crashes early (ratio near 0) or hangs (ratio far
// above 1) is one sample among Window and moves the median by at most one
// place, while a model that is consistently off by a factor is corrected by
// that factor. With fewer than MinSamples ratios the factor is 1. Safe for
// concurrent use.
type Corrector struct {
	window, min int

	mu     sync.Mutex
	ratios map[Key][]float64 // last window ratios, oldest first
}

// NewCorrector returns a corrector over the last window jobs, correcting
// from min jobs on; zero values take the defaults.
func NewCorrector(window, min int) *Corrector {
	if window <= 0 {
		window = DefaultWindow
	}
	if min <= 0 {
		min = DefaultMinSamples
	}
	return &Corrector{window: window, min: min, ratios: map[Key][]float64{}}
}

// Add learns one job of k: predicted and actual seconds, both positive.
func (c *Corrector) Add(k Key, predicted, actual float64) {
	if !(predicted > 0) || !(actual > 0) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	rs := append(c.ratios[k], actual/predicted)
	if len(rs) > c.window {
		rs = slices.Delete(rs, 0, len(rs)-c.window)
	}
	c.ratios[k] = rs
}

// Learn adds a usable accounting record (see Usable); others are ignored.
func (c *Corrector) Learn(r acct.Record, archOf func(string) string) {
	if Usable(r) {
		c.Add(keyOf(r, archOf), *r.PredictedSeconds, *r.ActualSeconds)
	}
}

// Factor is the correction of k and the number of jobs behind it: the
// median ratio actual/predicted, or 1 with fewer than the minimum.
func (c *Corrector) Factor(k Key) (float64, int) {
	c.mu.Lock()
	rs := slices.Clone(c.ratios[k])
	c.mu.Unlock()
	if len(rs) < c.min {
		return 1, len(rs)
	}
	slices.Sort(rs)
	n := len(rs)
	if n%2 == 1 {
		return rs[n/2], n
	}
	return (rs[n/2-1] + rs[n/2]) / 2, n
}

// Predictor applies a Corrector to the predictions of jobs with a
// performance model: Next's answer for a job of model M on hosts of
// architectures A is multiplied by Factor({M, A}). Jobs without a model
// are left alone (the profiler already learns from their runs). A host's
// architecture is its policy.Host's Arch.
type Predictor struct {
	C    *Corrector
	Next policy.Predictor
}

// Predict implements policy.Predictor.
func (p Predictor) Predict(ctx context.Context, job *policy.QueuedJob, hosts []policy.Host) (time.Duration, error) {
	d, err := p.Next.Predict(ctx, job, hosts)
	if err != nil || d <= 0 || job.Model == "" {
		return d, err
	}
	archs := make([]string, len(hosts))
	for i, h := range hosts {
		archs[i] = h.Arch
	}
	f, _ := p.C.Factor(Key{Model: job.Model, Arch: archKey(archs)})
	return time.Duration(float64(d) * f), nil
}
