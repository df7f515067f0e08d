package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"msched/bench"
)

// bench moldable on one small trace: one JSON object per policy, with the
// five documented fields, in the order of bench.MoldablePolicies; --procs
// needs --workload.
func TestBenchMoldable_JSON(t *testing.T) {
	trace := simulateTrace(t)
	cmd := newBenchMoldableCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"--workload", trace, "--procs", "8", "--json"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(bench.MoldablePolicies) {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if len(m) != 5 || m["policy"] != bench.MoldablePolicies[i] || m["workload"] != "small.swf" {
			t.Errorf("line %d: %v", i, m)
		}
		for _, k := range []string{"mean_response_s", "mean_wait_s", "utilization"} {
			if x, ok := m[k].(float64); !ok || !(x > 0) {
				t.Errorf("line %d: %s = %v", i, k, m[k])
			}
		}
	}
	if !strings.Contains(errOut.String(), "inter-arrival times ×") {
		t.Errorf("stderr does not say how the load was scaled:\n%s", errOut.String())
	}

	cmd = newBenchMoldableCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"--procs", "8"})
	if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "--procs goes with --workload") {
		t.Fatalf("--procs alone: %v", err)
	}
}

// bench moldable --estimate request tells every policy the requests, and
// profiler the profiler's estimates (which start unknown), and says so
// above its table; an unknown kind is refused by name.
func TestBenchMoldable_Estimate(t *testing.T) {
	trace := simulateTrace(t)
	table := func(args ...string) (string, error) {
		cmd := newBenchMoldableCmd()
		var out, errOut bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs(append([]string{"--workload", trace, "--procs", "8", "--policy", "easy,scojo-p"}, args...))
		err := cmd.ExecuteContext(context.Background())
		return out.String(), err
	}
	exact, err := table()
	if err != nil {
		t.Fatal(err)
	}
	req, err := table("--estimate", "request")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(exact, "exact estimates") || !strings.Contains(req, "request estimates") || exact == strings.Replace(req, "request estimates", "exact estimates", 1) {
		t.Errorf("exact:\n%s\nrequest:\n%s", exact, req)
	}
	prof, err := table("--estimate", "profiler")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(prof, "profiler estimates") || exact == strings.Replace(prof, "profiler estimates", "exact estimates", 1) {
		t.Errorf("exact:\n%s\nprofiler:\n%s", exact, prof)
	}
	if _, err := table("--estimate", "oracle"); err == nil || !strings.Contains(err.Error(), `"oracle"`) {
		t.Errorf("--estimate oracle: %v", err)
	}
	if _, err := table("--speedup", "downey:x"); err == nil || !strings.Contains(err.Error(), "--speedup") {
		t.Errorf("--speedup downey:x: %v", err)
	}
	if out, err := table("--speedup", "downey:1.5"); err != nil || !strings.Contains(out, "downey:1.5 speedup") {
		t.Errorf("--speedup downey:1.5: %v\n%s", err, out)
	}
}

// simulate --moldable: scojo-rigid runs every job at N_opt, its traced
// size and run time (the work done, utilisation × makespan, is easy's on
// the rigid trace), scojo-p sizes them (another work); told the requests
// (twice the run times here), scaled to each size, scojo-p plans another
// schedule and still finishes every job.
func TestSimulate_Moldable(t *testing.T) {
	trace := simulateTrace(t)
	rigid, err := simulateJSON(t, "--workload", trace, "--policy", "scojo-rigid", "--moldable", "--estimate", "exact")
	if err != nil {
		t.Fatal(err)
	}
	easy, err := simulateJSON(t, "--workload", trace, "--policy", "easy", "--estimate", "exact")
	if err != nil {
		t.Fatal(err)
	}
	work := func(m map[string]any) float64 { return m["utilization"].(float64) * m["makespan_s"].(float64) }
	if math.Abs(work(rigid)/work(easy)-1) > 1e-9 {
		t.Errorf("scojo-rigid on the moldable trace: work %v, easy on the rigid one %v", work(rigid), work(easy))
	}
	mold, err := simulateJSON(t, "--workload", trace, "--policy", "scojo-p", "--moldable", "--estimate", "exact")
	if err != nil {
		t.Fatal(err)
	}
	if mold["jobs_finished"] != float64(60) || math.Abs(work(mold)/work(easy)-1) < 1e-3 {
		t.Errorf("scojo-p: %v", mold)
	}
	req, err := simulateJSON(t, "--workload", trace, "--policy", "scojo-p", "--moldable", "--estimate", "request")
	if err != nil {
		t.Fatal(err)
	}
	if req["jobs_finished"] != float64(60) || req["mean_response_s"] == mold["mean_response_s"] {
		t.Errorf("scojo-p told the requests: %v; told exact times: %v", req, mold)
	}
}

// --speedup downey gives the moldable jobs Downey's curve: scojo-p sizes
// them otherwise than on the efficiency model, and still finishes every
// job; --speedup without --moldable, or not a curve, is refused.
func TestSimulate_MoldableSpeedup(t *testing.T) {
	trace := simulateTrace(t)
	eff, err := simulateJSON(t, "--workload", trace, "--policy", "scojo-p", "--moldable", "--estimate", "exact")
	if err != nil {
		t.Fatal(err)
	}
	dow, err := simulateJSON(t, "--workload", trace, "--policy", "scojo-p", "--moldable", "--estimate", "exact", "--speedup", "downey:2")
	if err != nil {
		t.Fatal(err)
	}
	if dow["jobs_finished"] != float64(60) || dow["mean_response_s"] == eff["mean_response_s"] {
		t.Errorf("downey:2 %v; efficiency %v", dow, eff)
	}
	for args, want := range map[string]string{
		"--speedup downey":                "--speedup goes with --moldable",
		"--moldable --speedup downey:-1":  "σ must be a number from 0 to 100",
		"--moldable --speedup amdahl":     "want efficiency, downey or downey:σ",
		"--moldable --speedup efficiency": "",
	} {
		_, err := simulateJSON(t, append([]string{"--workload", trace, "--policy", "easy"}, strings.Fields(args)...)...)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v; want %q", args, err, want)
		}
	}
}
