package workload

import (
	"math"
	"math/rand"
	"reflect"
	"testing"
)

// A draw of W1 and of W2 against what the model gives on average
// (docs/moldable.md, from 400,000 jobs: mean size 12.1, offered loads 0.73
// and 0.91), and the model's bounds: 128 nodes, runs up to e^12 s.
func TestLublin_MatchesTheModel(t *testing.T) {
	for _, c := range []struct {
		alpha, load float64
	}{{LublinAlphaW1, 0.73}, {LublinAlphaW2, 0.91}} {
		h, jobs, err := GenerateLublin(LublinConfig{Jobs: 20000, Alpha: c.alpha}, rand.New(rand.NewSource(1)))
		if err != nil {
			t.Fatal(err)
		}
		if h.MaxProcs != LublinProcs || h.MaxJobs != 20000 {
			t.Errorf("alpha %g: header %+v", c.alpha, h)
		}
		for i, j := range jobs {
			if j.ID != int64(i+1) || j.Procs < 1 || j.Procs > LublinProcs || j.ReqProcs != j.Procs ||
				j.Run < 0 || j.Run > math.Exp(lublinMaxRun) || j.ReqTime != j.Run || j.Status != StatusCompleted ||
				(i > 0 && j.Submit < jobs[i-1].Submit) {
				t.Fatalf("alpha %g: job %d: %+v", c.alpha, i, j)
			}
		}
		s, err := Characterise(Slice(jobs), LublinProcs)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("alpha %g: mean size %.2f, serial %.3f, offered load %.3f", c.alpha, s.MeanP, s.SerialShare, s.OfferedLoad)
		if math.Abs(s.MeanP-12.1) > 0.5 || math.Abs(s.SerialShare-lublinSerialProb) > 0.01 || math.Abs(s.OfferedLoad-c.load) > 0.08 {
			t.Errorf("alpha %g: mean size %.2f, serial %.3f, load %.3f; want about 12.1, 0.244, %.2f",
				c.alpha, s.MeanP, s.SerialShare, s.OfferedLoad, c.load)
		}
	}
}

// The generator draws what it drew in bench before it moved here (the
// first jobs of seeds 1 and 42 at W1), so bench moldable's lublin-w1
// figures stand; the same seed gives the same trace, another seed another.
func TestLublin_DrawsAreFixedBySeed(t *testing.T) {
	want := map[int64][][3]float64{ // submit, run, procs
		1:  {{51, 51, 2}, {178, 174, 8}, {274, 433, 16}, {1152, 9, 2}, {2741, 163, 1}},
		42: {{5060, 13, 1}, {5224, 12, 4}, {13024, 79, 28}, {13374, 190, 6}, {13581, 9857, 1}},
	}
	for seed, w := range want {
		h, jobs, err := GenerateLublin(LublinConfig{Jobs: len(w)}, rand.New(rand.NewSource(seed)))
		if err != nil {
			t.Fatal(err)
		}
		for i, j := range jobs {
			if got := [3]float64{j.Submit, j.Run, float64(j.Procs)}; got != w[i] {
				t.Errorf("seed %d, job %d: submit, run, procs %v, want %v", seed, i+1, got, w[i])
			}
		}
		h2, again, _ := GenerateLublin(LublinConfig{Jobs: len(w)}, rand.New(rand.NewSource(seed)))
		if !reflect.DeepEqual(jobs, again) || !reflect.DeepEqual(h, h2) {
			t.Errorf("seed %d: same seed, different trace", seed)
		}
		if v, ok := h.Get("Note"); !ok || v == "" {
			t.Error("header does not say how the trace was generated")
		}
	}
}

// Zero fields are DefaultLublinConfig's (W1, 10,000 jobs); negative jobs
// and alphas outside (0, LublinMaxAlpha] are refused, and the largest
// alpha allowed still generates (above it the redraws never end).
func TestLublin_Config(t *testing.T) {
	_, def, err := GenerateLublin(LublinConfig{}, rand.New(rand.NewSource(3)))
	if err != nil {
		t.Fatal(err)
	}
	_, w1, _ := GenerateLublin(LublinConfig{Jobs: 10000, Alpha: LublinAlphaW1}, rand.New(rand.NewSource(3)))
	if len(def) != 10000 || !reflect.DeepEqual(def, w1) {
		t.Errorf("defaults: %d jobs, same as W1's: %v", len(def), reflect.DeepEqual(def, w1))
	}
	if _, jobs, err := GenerateLublin(LublinConfig{Jobs: 1000, Alpha: LublinMaxAlpha}, rand.New(rand.NewSource(1))); err != nil || len(jobs) != 1000 {
		t.Errorf("alpha %d: %d jobs, %v", LublinMaxAlpha, len(jobs), err)
	}
	for _, c := range []LublinConfig{{Jobs: -1}, {Alpha: -1}, {Alpha: math.NaN()}, {Alpha: math.Inf(1)}, {Alpha: LublinMaxAlpha + 0.5}} {
		if _, _, err := GenerateLublin(c, rand.New(rand.NewSource(1))); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
