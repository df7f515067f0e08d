package bench

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"msched/policy"
	"msched/sim"
	"msched/workload"
)

// smallTrace is smallJobs rigid jobs of 1–16 processors on 16, arriving faster
// than they run, with requests of two to four times the run time, so that
// a queue forms and request and exact estimates schedule differently.
func smallTrace() Trace {
	const smallJobs = 40
	rng := rand.New(rand.NewSource(5))
	var recs []workload.Job
	for i := range smallJobs {
		j := workload.NewJob()
		j.ID, j.Submit = int64(i+1), float64(30*i)
		j.Run = float64(60 + rng.Intn(600))
		j.Procs = 1 + rng.Intn(16)
		j.ReqProcs = j.Procs
		j.ReqTime = j.Run * float64(2+rng.Intn(3))
		recs = append(recs, j)
	}
	return Trace{Name: "small", Source: "smallTrace", Procs: 16, Records: recs}
}

// Runs come back in the order trace, estimate, policy, seed whatever order
// they ran in; a GA policy once per seed, the others once with seed 0; easy
// is added when not asked for, and each ratio is to easy's run of the same
// trace and estimate.
func TestTraces_OrderSeedsAndRatios(t *testing.T) {
	a, b := smallTrace(), smallTrace()
	b.Name, b.Procs = "small-24", 24
	runs, err := Traces(context.Background(), TracesConfig{
		Traces:   []Trace{a, b},
		Policies: []string{"fcfs", "ga-xms"},
		Seeds:    2,
		Options:  policy.Options{Generations: 1},
		Workers:  3,
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, fmt.Sprint(r.Trace, " ", r.Estimate, " ", r.Policy, " ", r.Seed))
	}
	var want []string
	for _, tr := range []string{"small", "small-24"} {
		for _, e := range []string{"request", "exact"} {
			want = append(want, tr+" "+e+" easy 0", tr+" "+e+" fcfs 0", tr+" "+e+" ga-xms 1", tr+" "+e+" ga-xms 2")
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("runs\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	easyWait := map[string]float64{}
	for _, r := range runs {
		if r.Policy == "easy" {
			easyWait[r.Trace+r.Estimate] = r.MeanWait
		}
	}
	if easyWait["smallrequest"] == easyWait["smallexact"] {
		t.Fatalf("easy waits %g under both estimates: the test cannot tell them apart", easyWait["smallrequest"])
	}
	for _, r := range runs {
		e := easyWait[r.Trace+r.Estimate]
		if r.RatioWait == nil || r.RatioBSLD == nil || *r.RatioWait != r.MeanWait/e {
			t.Errorf("%s %s %s: ratio %v, mean wait %g, easy's %g", r.Trace, r.Estimate, r.Policy, r.RatioWait, r.MeanWait, e)
		}
		if r.Hosts != map[string]int{"small": 16, "small-24": 24}[r.Trace] || r.Decisions == 0 ||
			!(r.P95DecisionMS > 0) || !(r.DecisionWallS > 0) || !(r.DecisionCPUS > 0) || r.Jobs != len(a.Records) {
			t.Errorf("%+v", r)
		}
		if r.Policy == "ga-xms" && !(r.GensPerDecide > 0) {
			t.Errorf("%s seed %d: %g generations per decision: the timed policy hides the GA's count", r.Policy, r.Seed, r.GensPerDecide)
		}
	}
	// Two seeds of a GA are two different searches.
	if runs[2].MeanWait == runs[3].MeanWait && runs[2].Decisions == runs[3].Decisions {
		t.Errorf("ga-xms seeds 1 and 2 ran alike: %+v", runs[2:4])
	}
	var out strings.Builder
	if err := TracesTable(&out, runs); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "worst"); n != 4 {
		t.Errorf("%d worst rows, want one per trace and estimate:\n%s", n, out.String())
	}
}

func TestTraces_Errors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		cfg  TracesConfig
		want string
	}{
		{"unknown policy", context.Background(), TracesConfig{Traces: []Trace{smallTrace()}, Policies: []string{"easy", "nope"}}, `unknown policy "nope"`},
		{"no traces", context.Background(), TracesConfig{}, "no traces"},
		{"no machine", context.Background(), TracesConfig{Traces: []Trace{{Source: "x.swf"}}}, "x.swf gives no MaxProcs"},
		{"cancelled", ctx, TracesConfig{Traces: []Trace{smallTrace()}, Policies: []string{"fcfs"}}, "context canceled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Traces(c.ctx, c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestRatio(t *testing.T) {
	for _, c := range []struct {
		a, b float64
		want *float64
	}{{3, 2, ptr(1.5)}, {0, 0, ptr(1)}, {2, 0, nil}, {0, 4, ptr(0)}} {
		got := ratio(c.a, c.b)
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("ratio(%g, %g) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func ptr(x float64) *float64 { return &x }

// worst takes each column's worst over the seeds, and a ratio undefined for
// one seed stays undefined.
func TestWorst(t *testing.T) {
	rs := []TraceRun{
		{Metrics: sim.Metrics{Jobs: 10, MeanWait: 5, MeanBSD: 3}, MaxWait: 9, RatioWait: ptr(2), RatioBSLD: ptr(1), P95DecisionMS: 4},
		{Metrics: sim.Metrics{Jobs: 9, MeanWait: 7, MeanBSD: 2}, MaxWait: 8, RatioWait: ptr(3), RatioBSLD: nil, P95DecisionMS: 1},
	}
	w := worst(rs)
	if w.Jobs != 9 || w.MeanWait != 7 || w.MeanBSD != 3 || w.MaxWait != 9 || *w.RatioWait != 3 || w.RatioBSLD != nil || w.P95DecisionMS != 4 {
		t.Errorf("%+v", w)
	}
}

// FindData finds the traces from a directory below the one that holds
// them: the nearest directory holding both files, workload/testdata before
// shared/data.
func TestFindData(t *testing.T) {
	root := t.TempDir()
	shared := filepath.Join(root, "shared", "data")
	testdata := filepath.Join(root, "main", "workload", "testdata")
	deep := filepath.Join(root, "main", "cmd", "msched")
	for _, d := range []string{shared, testdata, deep} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{SDSCFile, NASAFile} {
			if d != deep {
				if err := os.WriteFile(filepath.Join(d, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if got, err := FindData(deep); err != nil || got != testdata {
		t.Errorf("FindData(%s) = %q, %v; want %s", deep, got, err, testdata)
	}
	if err := os.Remove(filepath.Join(testdata, NASAFile)); err != nil {
		t.Fatal(err)
	}
	if got, err := FindData(deep); err != nil || got != shared {
		t.Errorf("without testdata's NASA log: FindData(%s) = %q, %v; want %s", deep, got, err, shared)
	}
}

// The repository's traces: the two logs as the data README describes them
// and the generated o2k sample, each on its machine.
func TestRepoTraces(t *testing.T) {
	dir, err := FindData(".")
	if err != nil {
		t.Fatal(err)
	}
	trs, err := RepoTraces(dir)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		name         string
		procs, lines int
	}
	want := []got{{"sdsc-sp2", 128, 4961}, {"nasa-ipsc", 128, 18239}, {"o2k", 960, 10000}}
	for i, tr := range trs {
		if g := (got{tr.Name, tr.Procs, len(tr.Records)}); i >= len(want) || g != want[i] {
			t.Errorf("trace %d: %+v, want %+v", i, g, want)
		}
	}
	again, err := RepoTraces(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(trs[2].Records, again[2].Records) {
		t.Error("the o2k sample differs from one call to the next")
	}
}

// The default policies are those registered; easy-fast only on a
// heterogeneous machine.
func TestTracesPolicies(t *testing.T) {
	for _, hetero := range []bool{false, true} {
		ps := TracesPolicies(hetero)
		for _, p := range []string{"fcfs", "easy", "conservative", "lwf", "ga-ms", "ga-xms"} {
			if !slices.Contains(ps, p) {
				t.Errorf("hetero %v: %v lacks %s", hetero, ps, p)
			}
		}
		for _, p := range ps {
			if !slices.Contains(policy.Names(), p) {
				t.Errorf("hetero %v: %s is not registered", hetero, p)
			}
		}
		if slices.Contains(ps, "easy-fast") && !hetero {
			t.Errorf("easy-fast on identical hosts: %v", ps)
		}
	}
}

func TestSimulate_UnknownPolicy(t *testing.T) {
	_, _, err := Simulate(context.Background(), Run{Jobs: nil, Machine: sim.Identical(2), Policy: "nope"})
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("%v", err)
	}
}

// A multicluster trace read from its file runs on its clusters, its jobs
// keeping their requests: fcfs places them, easy rejects them.
func TestReadTrace_Multicluster(t *testing.T) {
	h, jobs, err := workload.GenerateMulticluster(workload.MulticlusterConfig{Jobs: 200, Request: workload.Unordered, N1: 1, N2: 4, Utilisation: 0.5}, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "mc.swf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := workload.WriteAll(f, h, jobs); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tr, err := ReadTrace(f.Name(), 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := tr.Machine(sim.Machine{})
	if err != nil {
		t.Fatal(err)
	}
	if got := policy.ClusterOrder(m.Hosts); len(got) != 4 || len(m.Hosts) != 32 {
		t.Fatalf("machine: %d hosts in clusters %v, want 4 clusters of 8", len(m.Hosts), got)
	}
	st, err := tr.Jobs(len(m.Hosts), sim.Exact, false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Jobs[0].Request != workload.Unordered || len(st.Jobs[0].Components) != 4 {
		t.Fatalf("job 0: request %v %v", st.Jobs[0].Request, st.Jobs[0].Components)
	}
	for _, pol := range []string{"fcfs", "easy"} {
		res, _, err := Simulate(context.Background(), Run{Jobs: st.Jobs, Machine: m, Policy: pol, Options: policy.Options{Seed: 1}})
		if err != nil {
			t.Fatal(err)
		}
		ran := sim.Compute(res, false).Jobs
		if want := map[string]int{"fcfs": 200, "easy": 0}[pol]; ran != want {
			t.Errorf("%s ran %d jobs, want %d", pol, ran, want)
		}
	}
}

// A multicluster trace runs on its header's clusters: a processor count
// given beside them is refused by name, not ignored.
func TestReadTrace_ClustersFixTheMachine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mc.swf")
	trace := "; Clusters: 4 4\n1 0 -1 10 2 -1 -1 2 10 -1 1 1 1 1 1 -1 -1 -1\n"
	if err := os.WriteFile(path, []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTrace(path, 16); err == nil || !strings.Contains(err.Error(), "Clusters line (4 4)") {
		t.Fatalf("--procs 16 on a trace of clusters: %v", err)
	}
	tr, err := ReadTrace(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := tr.Machine(sim.Machine{}); err != nil || len(m.Hosts) != 8 {
		t.Fatalf("machine of %d hosts, %v; want 8", len(m.Hosts), err)
	}
}
