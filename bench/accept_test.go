package bench

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"msched/policy"
	"msched/workload"
)

// The acceptance for the Fig. 3 setting, at its full size: over 20
// runs of 30,000 evaluations, GA mean ≤ SA mean < random mean, and GA mean
// ≤ the greedy list scheduler.
func TestConvergence_GABeatsSAAndGreedy(t *testing.T) {
	r, err := Convergence(context.Background(), ConvergenceConfig{Runs: 20, Evaluations: 30000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("LB %.1f FIFO %.1f greedy %.1f GA %.1f±%.1f SA %.1f±%.1f random %.1f±%.1f",
		r.LowerBound, r.FIFO, r.Greedy, r.GA.Mean, r.GA.SD, r.SA.Mean, r.SA.SD, r.Random.Mean, r.Random.SD)
	if !(r.GA.Mean <= r.SA.Mean && r.SA.Mean < r.Random.Mean) {
		t.Errorf("want GA ≤ SA < random, got GA %.1f, SA %.1f, random %.1f", r.GA.Mean, r.SA.Mean, r.Random.Mean)
	}
	if r.GA.Mean > r.Greedy {
		t.Errorf("GA mean %.1f worse than greedy %.1f", r.GA.Mean, r.Greedy)
	}
	if r.GA.Mean < r.LowerBound {
		t.Errorf("GA mean %.1f below the lower bound %.1f: the bound or the decoder is wrong", r.GA.Mean, r.LowerBound)
	}
}

// The ETC benchmark at a CI-sized budget: on a generated instance of each
// of Braun's 12 classes the memetic GA (from Min-min and the LP's dual
// responses) and the ILS (from Min-min) end strictly below Min-min, each at
// exactly its budget; the LP bound is exact
// (its gap tiny) and no method ends below it. On these instances it is also
// at least the classical bound (in general it need not be: the LP has no
// term for the longest single task, which the classical bound has).
// (`msched bench etc` runs 10 s each; its figures are in docs/memetic.md.)
func TestETC_GABeatsMinMinOnEveryClass(t *testing.T) {
	for _, class := range workload.Classes() {
		t.Run(class, func(t *testing.T) {
			etc, err := workload.GenerateETC(class, workload.BraunTasks, workload.BraunMachines, rand.New(rand.NewSource(1)))
			if err != nil {
				t.Fatal(err)
			}
			r, err := ETC(context.Background(), class, etc, ETCConfig{Evaluations: 3000, TimeLimit: time.Minute, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if !(r.GA < r.MinMin) || !(r.ILS < r.MinMin) {
				t.Errorf("GA %.0f or ILS %.0f not below Min-min %.0f", r.GA, r.ILS, r.MinMin)
			}
			if r.LPGap > 1e-9 || r.LPBound < r.LowerBound*(1-1e-9) {
				t.Errorf("LP bound %.0f (gap %g) against the classical bound %.0f", r.LPBound, r.LPGap, r.LowerBound)
			}
			for name, v := range map[string]float64{"min-min": r.MinMin, "max-min": r.MaxMin, "sufferage": r.Sufferage, "ils": r.ILS, "ga": r.GA} {
				if v < r.LPBound {
					t.Errorf("%s %.0f below the LP bound %.0f", name, v, r.LPBound)
				}
			}
			if r.Evaluations != 3000 || r.ILSEvaluations != 3000 {
				t.Errorf("GA made %d evaluations and ILS %d, want exactly the budget 3000", r.Evaluations, r.ILSEvaluations)
			}
			if r.GAOverLP != r.GA/r.LPBound || r.ILSOverLP != r.ILS/r.LPBound {
				t.Errorf("ratios %g, %g do not match the makespans", r.GAOverLP, r.ILSOverLP)
			}
		})
	}
}

// The same seeds give the same figures, run after run, even with the runs
// spread over goroutines.
func TestConvergence_SameSeedSameResult(t *testing.T) {
	cfg := ConvergenceConfig{Runs: 4, Evaluations: 2000, Seed: 7, Workers: 3}
	a, err := Convergence(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Convergence(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.GA != b.GA || a.SA != b.SA || a.Random != b.Random || a.Greedy != b.Greedy || a.FIFO != b.FIFO {
		t.Fatalf("two runs differ:\n%+v\n%+v", a, b)
	}
	for _, m := range convMethods {
		for i := range a.Curves[m].Mean {
			if a.Curves[m].Mean[i] != b.Curves[m].Mean[i] {
				t.Fatalf("%s curve differs at %d evaluations", m, a.Curves[m].Evals[i])
			}
		}
	}
}

// Issue 12's acceptance on the SDSC-SP2 sample (128 processors), at one
// seed (`msched bench traces` runs three): with request and with exact
// estimates, ga-plan's mean bounded slowdown is at most 0.65 of EASY's and
// its mean wait at most 0.72 of EASY's, and it beats conservative
// backfilling and lwf on both.
func TestTraces_GAPlanBeatsEasyOnSDSC(t *testing.T) {
	tr, err := ReadTrace("../workload/testdata/SDSC-SP2-1998-4.2-cln.first5k.swf", 128)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Traces(context.Background(), TracesConfig{Traces: []Trace{tr}, Seeds: 1,
		Policies: []string{"easy", "conservative", "lwf", "ga-plan"},
		Options:  policy.Options{Generations: 50}})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]TraceRun{}
	for _, r := range runs {
		by[r.Estimate+" "+r.Policy] = r
		t.Logf("%s %s: wait %.1f s, bsld %.2f, max wait %.0f s, %.2f ms/decision (p95 %.2f)",
			r.Estimate, r.Policy, r.MeanWait, r.MeanBSD, r.MaxWait, r.MeanDecisionMS, r.P95DecisionMS)
	}
	for _, est := range []string{"request", "exact"} {
		g := by[est+" ga-plan"]
		if g.RatioWait == nil || g.RatioBSLD == nil || *g.RatioWait > 0.72 || *g.RatioBSLD > 0.65 {
			t.Errorf("%s: ga-plan's ratios to easy: wait %v (want ≤ 0.72), bsld %v (want ≤ 0.65)", est, fmtRatio(g.RatioWait), fmtRatio(g.RatioBSLD))
		}
		for _, other := range []string{"conservative", "lwf"} {
			o := by[est+" "+other]
			if !(g.MeanWait < o.MeanWait && g.MeanBSD < o.MeanBSD) {
				t.Errorf("%s: ga-plan %.1f s / %.2f does not beat %s %.1f s / %.2f", est, g.MeanWait, g.MeanBSD, other, o.MeanWait, o.MeanBSD)
			}
		}
	}
}
