package bench

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"msched/sim"
	"msched/workload"
)

// A small run: every figure is sane, the figures rank as the paper's do,
// and the table prints the paper's figures beside ours. (The JSON object's
// keys are checked on the command's output, by TestBenchCoalloc_JSON in
// cmd/msched.)
func TestCoalloc_Small(t *testing.T) {
	r, err := Coalloc(context.Background(), CoallocConfig{Jobs: 4000, BinFills: 300, Seed: 3, Table: true})
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
	if !(f.Jumps0 > f.Jumps7 && f.Jumps7 > 1 && f.Jumps20 > 1) {
		t.Errorf("responses %+v at 0.78", f)
	}
	// Table 5: a row per paper row; a lighter load, a shorter response;
	// the JSON's figures are the table's; MaxJumps 0 + 1 is row 1's run.
	if len(r.Table5) != len(PaperTable5) {
		t.Fatalf("table 5 has %d rows", len(r.Table5))
	}
	for i, row := range r.Table5 {
		if row.Jumps != PaperTable5[i].Jumps || !(row.At62 > 1 && row.At62 < row.At78 && row.Plus62 > 1 && row.Plus62 < row.Plus78) {
			t.Errorf("table 5 row %+v", row)
		}
	}
	if t5 := r.Table5; f.Jumps0 != t5[0].At78 || f.Jumps7 != t5[3].At78 || f.Jumps20 != t5[5].At78 ||
		t5[0].Plus78 != t5[1].At78 || t5[0].Plus62 != t5[1].At62 {
		t.Errorf("fpfs_response %+v, table 5 %+v", f, t5)
	}
	var tab bytes.Buffer
	if err := r.Table(&tab); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"U[1,4]", "unordered", "0.722", "0 (fcfs)", "4.885", "2.777", "3.341", "1.808"} {
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

// The Table 5 runs are the paper's FPFS: on the same jobs (total requests
// at utilisation 0.78), the simulator with the fpfs policy starts every job
// when refFPFS, written apart from both, does, for MaxJumps 0 (fcfs), 1 and
// 7. The paper's column at 0.78 matches MaxJumps + 1 (docs/coalloc.md);
// this pins down that the literal reading is what the bench runs.
func TestCoalloc_FPFSIsTheReference(t *testing.T) {
	ctx := context.Background()
	cfg := CoallocConfig{Jobs: 3000, Seed: 4}
	if err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	hosts := coallocClusters * coallocClusterSize
	for _, jumps := range []int{0, 1, 7} {
		r, err := coallocOpen(ctx, cfg, sim.Clusters([]int{hosts}), workload.Total, 4, coallocUtil, jumps, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		want, overtaken := refFPFS(r.Jobs, hosts, jumps)
		if jumps > 0 && overtaken == 0 {
			t.Errorf("MaxJumps %d: the reference overtook no job; the bound is untested", jumps)
		}
		bad := 0
		for k, j := range r.Jobs {
			if math.Abs(r.Start[k]-want[k]) > 1e-3 {
				if bad++; bad <= 3 {
					t.Errorf("MaxJumps %d: job %s starts at %.3f s, the reference at %.3f s", jumps, j.ID, r.Start[k], want[k])
				}
			}
		}
		if bad > 0 {
			t.Errorf("MaxJumps %d: %d of %d starts differ", jumps, bad, len(r.Jobs))
		}
	}
}

// refFPFS is FPFS on one cluster of n hosts as the paper states it, apart
// from the policy and the simulator: at each arrival and each departure the
// queue is scanned from its head and every job that fits starts; each
// waiting job counts the jobs behind it that start before it, and once its
// count reaches maxJumps no job behind it starts. It returns each job's
// start (jobs in submission order), and how many jobs started ahead of an
// older one.
func refFPFS(jobs []sim.Job, n, maxJumps int) (start []float64, overtaken int) {
	start = make([]float64, len(jobs))
	var ends []float64 // running jobs' ends, unsorted
	var endsN []int    // and their sizes
	var queue []int    // waiting jobs, oldest first
	count := make([]int, len(jobs))
	free, next := n, 0
	for next < len(jobs) || len(ends) > 0 {
		// The next event: the earliest departure, else the next arrival.
		now, dep := math.Inf(1), -1
		for i, e := range ends {
			if e < now {
				now, dep = e, i
			}
		}
		if next < len(jobs) && jobs[next].Submit < now {
			now = jobs[next].Submit
			queue = append(queue, next)
			next++
		} else {
			free += endsN[dep]
			ends = append(ends[:dep], ends[dep+1:]...)
			endsN = append(endsN[:dep], endsN[dep+1:]...)
		}
		var skipped []int // waiting jobs ahead of the one scanned
		for _, k := range queue {
			if jobs[k].Min > free || slices.ContainsFunc(skipped, func(s int) bool { return count[s] >= maxJumps }) {
				skipped = append(skipped, k)
				continue
			}
			free -= jobs[k].Min
			start[k] = now
			ends, endsN = append(ends, now+jobs[k].Run), append(endsN, jobs[k].Min)
			if len(skipped) > 0 {
				overtaken++
			}
			for _, s := range skipped {
				count[s]++
			}
		}
		queue = skipped
	}
	return start, overtaken
}
