package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// bench spool runs the five daemons on a temporary spool; --idle 0 skips
// the idle phase, and then the JSON line has no latencies rather than
// latencies of 0 that nothing measured.
func TestBenchSpool_IdlePhase(t *testing.T) {
	for _, c := range []struct {
		idle    string
		latency bool
	}{{"0", false}, {"2", true}} {
		cmd := exec.Command(mschedBin, "bench", "spool", "--jobs", "12", "--slots", "4", "--idle", c.idle, "--json")
		cmd.Env = append(cmd.Environ(), "TMPDIR="+t.TempDir())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("--idle %s: %v\n%s", c.idle, err, stderrOf(err))
		}
		var r map[string]float64
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("--idle %s: %v in %q", c.idle, err, out)
		}
		if r["jobs"] != 12 || r["jobs_per_second"] <= 0 || r["seconds"] <= 0 {
			t.Errorf("--idle %s: %s", c.idle, out)
		}
		_, has50 := r["latency_p50_ms"]
		_, has95 := r["latency_p95_ms"]
		if has50 != c.latency || has95 != c.latency {
			t.Errorf("--idle %s: latencies present %v/%v, want %v: %s", c.idle, has50, has95, c.latency, out)
		}
		if c.latency && (r["latency_p50_ms"] <= 0 || r["latency_p95_ms"] < r["latency_p50_ms"]) {
			t.Errorf("--idle %s: latencies %s", c.idle, out)
		}
	}
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// benchTraces runs `msched bench traces --json` in this process and returns
// its objects.
func benchTraces(t *testing.T, args ...string) ([]map[string]any, error) {
	t.Helper()
	out, err := runMsched(t, context.Background(), nil, append([]string{"--log-level", "error", "bench", "traces", "--json"}, args...)...)
	if err != nil {
		return nil, err
	}
	var objs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v in %q", err, line)
		}
		objs = append(objs, m)
	}
	return objs, nil
}

// bench traces on one small trace: an object per estimate and policy, in
// that order, holding simulate --json's metrics (the same figures) and the
// ratios to easy's run with the same estimate.
func TestBenchTraces_JSON(t *testing.T) {
	trace := swfTrace(t, 32)
	objs, err := benchTraces(t, "--workload", trace, "--procs", "32", "--policy", "fcfs,easy,conservative")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, fmt.Sprint(o["estimate"], " ", o["policy"]))
	}
	want := "request fcfs,request easy,request conservative,exact fcfs,exact easy,exact conservative"
	if strings.Join(got, ",") != want {
		t.Fatalf("objects %v, want %s", got, want)
	}
	easy := map[any]map[string]any{}
	for _, o := range objs {
		if o["policy"] == "easy" {
			easy[o["estimate"]] = o
		}
	}
	if easy["request"]["mean_wait_s"] == easy["exact"]["mean_wait_s"] {
		t.Fatalf("easy waits as long with either estimate: the ratios cannot show which easy they used")
	}
	for _, o := range objs {
		name := fmt.Sprint(o["estimate"], " ", o["policy"])
		sim, err := simulateJSON(t, "--workload", trace, "--procs", "32", "--policy", o["policy"].(string), "--estimate", o["estimate"].(string))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range sim {
			if _, ok := o[k]; !ok {
				t.Errorf("%s: no %s", name, k)
			} else if strings.Contains(k, "wait") || strings.Contains(k, "slowdown") || k == "jobs" || k == "decisions" {
				if o[k] != v {
					t.Errorf("%s: %s %v, simulate's %v", name, k, o[k], v)
				}
			}
		}
		for _, k := range []string{"trace", "estimate", "seed", "max_wait_s", "p95_decision_ms", "decision_cpu_s", "decision_wall_s"} {
			if _, ok := o[k]; !ok {
				t.Errorf("%s: no %s", name, k)
			}
		}
		if o["trace"] != filepath.Base(trace) || o["seed"] != 0.0 || o["hosts"] != 32.0 {
			t.Errorf("%s: trace %v, seed %v, hosts %v", name, o["trace"], o["seed"], o["hosts"])
		}
		e := easy[o["estimate"]]
		for k, of := range map[string]string{"ratio_wait_vs_easy": "mean_wait_s", "ratio_bsld_vs_easy": "mean_bounded_slowdown"} {
			r, ok := o[k].(float64)
			if want := o[of].(float64) / e[of].(float64); !ok || math.Abs(r-want) > 1e-12*want {
				t.Errorf("%s: %s %v, want %g", name, k, o[k], want)
			}
		}
	}
}

// The table has a block per estimate, and a GA policy a row per seed and a
// "worst" row; easy is run (the ratios need it) though not asked for.
func TestBenchTraces_Table(t *testing.T) {
	out, err := runMsched(t, context.Background(), nil, "--log-level", "error", "bench", "traces", "--workload", swfTrace(t, 32),
		"--policy", "fcfs,ga-xms", "--seeds", "2", "--generations", "1")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"small.swf, 32 hosts, request estimates", "small.swf, 32 hosts, exact estimates"} {
		if !strings.Contains(out, s) {
			t.Errorf("no %q in\n%s", s, out)
		}
	}
	for _, row := range []string{`(?m)^\s+easy\s+-\s`, `(?m)^\s+ga-xms\s+1\s`, `(?m)^\s+ga-xms\s+2\s`, `(?m)^\s+ga-xms\s+worst\s`} {
		if n := len(regexp.MustCompile(row).FindAllString(out, -1)); n != 2 {
			t.Errorf("%d rows matching %s, want 2:\n%s", n, row, out)
		}
	}
}

func TestBenchTraces_Errors(t *testing.T) {
	trace := swfTrace(t, 32)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", trace, "--policy", "easy,nope"}, `unknown policy "nope"`},
		{[]string{"--workload", filepath.Join(t.TempDir(), "missing.swf")}, "missing.swf"},
		{[]string{"--workload", trace, "--estimate", "guess"}, `unknown estimate "guess"`},
		{[]string{"--workload", trace, "--seeds", "0"}, "--seeds 0"},
		{[]string{"--procs", "32"}, "--procs goes with --workload"},
	} {
		if _, err := benchTraces(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error containing %q", c.args, err, c.want)
		}
	}
}

// bench etc --json: one object per generated instance, named class/seed
// when there are several seeds, each with the exact LP bound (tiny gap) at
// or below every method, and the GA's and the ILS's ratios to it.
func TestBenchETC_JSON(t *testing.T) {
	out, err := runMsched(t, context.Background(), nil, "--log-level", "error", "bench", "etc", "--json",
		"--class", "u_i_lolo", "--seeds", "2", "--seconds", "300ms")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), out)
	}
	for i, line := range lines {
		var r struct {
			Instance       string
			LPBound        float64 `json:"lp_bound"`
			LPGap          float64 `json:"lp_gap"`
			MinMin         float64 `json:"min_min"`
			ILS, GA        float64
			GAOverLP       float64 `json:"ga_over_lp"`
			ILSOverLP      float64 `json:"ils_over_lp"`
			Evaluations    int
			ILSEvaluations int    `json:"ils_evaluations"`
			ILSStart       string `json:"ils_start"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v in %q", err, line)
		}
		if want := fmt.Sprintf("u_i_lolo/%d", i+1); r.Instance != want {
			t.Errorf("instance %q, want %q", r.Instance, want)
		}
		if !(r.LPBound > 0) || r.LPGap > 1e-9 || r.GA < r.LPBound || r.ILS < r.LPBound || r.MinMin < r.GA {
			t.Errorf("%s: LP bound %g (gap %g), Min-min %g, ILS %g, GA %g", r.Instance, r.LPBound, r.LPGap, r.MinMin, r.ILS, r.GA)
		}
		if r.GAOverLP < 1 || r.ILSOverLP < 1 || r.Evaluations == 0 || r.ILSEvaluations == 0 {
			t.Errorf("%s: ratios %g and %g, evaluations %d and %d", r.Instance, r.GAOverLP, r.ILSOverLP, r.Evaluations, r.ILSEvaluations)
		}
		if r.ILSStart != "min-min" {
			t.Errorf("%s: ils_start %q, want min-min", r.Instance, r.ILSStart)
		}
	}
	// --ils-from-dual says so, in the JSON and in the table's column.
	out, err = runMsched(t, context.Background(), nil, "--log-level", "error", "bench", "etc", "--json",
		"--class", "u_i_lolo", "--seconds", "200ms", "--ils-from-dual")
	if err != nil || !strings.Contains(out, `"ils_start":"dual"`) {
		t.Errorf("--ils-from-dual --json: %v\n%s", err, out)
	}
	out, err = runMsched(t, context.Background(), nil, "--log-level", "error", "bench", "etc",
		"--class", "u_i_lolo", "--seconds", "200ms", "--ils-from-dual")
	if err != nil || !strings.Contains(out, "ILS from dual") {
		t.Errorf("--ils-from-dual: %v\n%s", err, out)
	}
	if out, err := runMsched(t, context.Background(), nil, "bench", "etc", "--seeds", "0"); err == nil {
		t.Errorf("--seeds 0 accepted:\n%s", out)
	}

	// A file of another size, read with --tasks and --machines: 3 tasks on
	// 2 machines, task-major; the optimum puts tasks 0 and 2 on machine 1
	// (makespan 5); the LP bound is at most that.
	file := filepath.Join(t.TempDir(), "tiny.etc")
	if err := os.WriteFile(file, []byte("9\n1\n2\n3\n8\n4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runMsched(t, context.Background(), nil, "--log-level", "error", "bench", "etc", "--json",
		"--file", file, "--tasks", "3", "--machines", "2", "--seconds", "100ms")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var r struct {
		Instance string
		LPBound  float64 `json:"lp_bound"`
		ILS, GA  float64
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &r); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if r.Instance != "tiny.etc" || r.GA != 5 || r.ILS != 5 || r.LPBound > 5 {
		t.Errorf("tiny instance: %+v, want GA and ILS at the optimum 5, LP bound at most 5", r)
	}
	if out, err := runMsched(t, context.Background(), nil, "bench", "etc", "--file", file); err == nil {
		t.Errorf("a 3 × 2 file read as 512 × 16:\n%s", out)
	}
}
