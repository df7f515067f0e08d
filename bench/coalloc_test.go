package bench

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"msched/workload"
)

// A small run: every figure is sane, the figures rank as the paper's do,
// and the table prints the paper's figures beside ours. (The JSON object's
// keys are checked on the command's output, by TestBenchCoalloc_JSON in
// cmd/msched.)
func TestCoalloc_Small(t *testing.T) {
	r, err := Coalloc(context.Background(), CoallocConfig{Jobs: 4000, BinFills: 300, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	u, b2 := r.MaxUtil, r.BinFill
	for _, x := range []float64{u.Ordered14, u.Unordered14, u.Total14, u.Ordered18, u.Unordered18, u.Total18,
		b2.Ordered14, b2.Unordered14, b2.Total14, b2.Ordered18, b2.Unordered18, b2.Total18} {
		if !(x > 0.4 && x < 1) {
			t.Errorf("a utilisation of %v", x)
		}
	}
	// Fewer restrictions, more utilisation; smaller components, more.
	if !(u.Ordered14 < u.Unordered14 && u.Unordered14 < u.Total14 && u.Ordered18 < u.Unordered18 && u.Unordered18 < u.Total18 &&
		u.Total18 < u.Total14 && u.Ordered18 < u.Ordered14) {
		t.Errorf("max util %+v", u)
	}
	f := r.FPFSResponse
	if !(f.Jumps0 > f.Jumps7 && f.Jumps7 > 1 && f.Jumps20 > 1) || !(r.Response62.Jumps0 > 1 && r.Response62.Jumps0 < f.Jumps0) {
		t.Errorf("responses %+v at 0.78, %+v at 0.62", f, r.Response62)
	}
	var tab bytes.Buffer
	if err := r.Table(&tab); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"U[1,4]", "unordered", "0.722", "0 (fcfs)", "4.885", "2.777"} {
		if !strings.Contains(tab.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, tab.String())
		}
	}
}

// The saturated queue's utilisation is the maximum utilisation: offered
// loads below it keep the queue bounded, loads above it make it grow
// without bound (the arrival-rate method). Ordered requests of components
// U[1,8] on 4 clusters of 8, FCFS: the offered load is raised by 0.02 from
// 0.50 until the queue grows (at the last arrival, more than a fortieth of
// the jobs still wait); the saturation point lies within 0.02 below that
// load, and the saturated queue's figure must agree within 0.03.
func TestCoalloc_SaturatedIsTheArrivalRateLimit(t *testing.T) {
	ctx := context.Background()
	cfg := CoallocConfig{Jobs: 10000, Seed: 5}
	cfg.defaults()
	sat, err := CoallocSaturated(ctx, cfg, workload.Ordered, 8)
	if err != nil {
		t.Fatal(err)
	}
	grows := func(util float64) bool {
		r, err := coallocOpen(ctx, cfg, coallocMachine(), workload.Ordered, 8, util, 0, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		last := r.Jobs[len(r.Jobs)-1].Submit // the jobs are in submission order
		waiting := 0
		for k, j := range r.Jobs {
			if j.Submit <= last && r.Start[k] > last {
				waiting++
			}
		}
		t.Logf("offered %.2f: %d of %d jobs waiting at the last arrival", util, waiting, len(r.Jobs))
		return waiting > len(r.Jobs)/40
	}
	limit := math.NaN()
	for util := 0.50; util < 0.70; util += 0.02 {
		if grows(util) {
			limit = util - 0.01
			break
		}
	}
	t.Logf("saturated %.3f, arrival-rate limit %.2f ± 0.01", sat, limit)
	if !(math.Abs(limit-sat) <= 0.03) {
		t.Errorf("saturated queue %.3f, arrival-rate method %.2f", sat, limit)
	}
}
