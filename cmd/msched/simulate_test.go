package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// simulateTrace writes a small SWF trace: 60 jobs of 1–8 processors on an
// 8-processor machine, arriving faster than they run, so that a queue forms.
func simulateTrace(t *testing.T) string { return swfTrace(t, 8) }

// swfTrace writes 60 jobs of 1–procs processors on a machine of procs,
// each requesting twice its run time.
func swfTrace(t *testing.T, machine int) string {
	t.Helper()
	rng := rand.New(rand.NewSource(7))
	var b strings.Builder
	fmt.Fprintf(&b, "; MaxProcs: %d\n", machine)
	for i := 1; i <= 60; i++ {
		run := 50 + rng.Intn(500)
		procs := 1 + rng.Intn(machine)
		fmt.Fprintf(&b, "%d %d -1 %d %d -1 -1 %d %d -1 1 1 1 1 1 -1 -1 -1\n", i, i*40, run, procs, procs, 2*run)
	}
	path := filepath.Join(t.TempDir(), "small.swf")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func simulateJSON(t *testing.T, args ...string) (map[string]any, error) {
	t.Helper()
	out, err := runMsched(t, context.Background(), nil, append([]string{"--log-level", "error", "simulate", "--json"}, args...)...)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	return m, nil
}

// simulate runs the GA policies with the configured pool and overtaking
// bound, as the sched daemon does: a pool of one job is FCFS, and the
// default pool of 20 is not.
func TestSimulate_GAUsesConfiguredWindow(t *testing.T) {
	trace := simulateTrace(t)
	args := []string{"--workload", trace, "--policy", "ga-xms", "--generations", "5"}
	def, err := simulateJSON(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	fcfs, err := simulateJSON(t, "--workload", trace, "--policy", "fcfs")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("MSCHED_GA_WINDOW", "1")
	one, err := simulateJSON(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if one["mean_wait_s"] != fcfs["mean_wait_s"] {
		t.Errorf("ga-xms with ga.window 1: mean wait %v, want fcfs's %v", one["mean_wait_s"], fcfs["mean_wait_s"])
	}
	if def["mean_wait_s"] == fcfs["mean_wait_s"] {
		t.Errorf("ga-xms with the default window waits as fcfs does (%v): the setting cannot show", def["mean_wait_s"])
	}
	t.Setenv("MSCHED_GA_WINDOW", "0")
	if _, err := simulateJSON(t, args...); err == nil || !strings.Contains(err.Error(), "ga.window") {
		t.Errorf("ga.window 0: %v, want an error naming ga.window", err)
	}
}

// ga.max_jumps 0 means that no job may be overtaken, as in the paper: fpfs
// is then fcfs, where the default bound (7) lets jobs overtake.
func TestSimulate_MaxJumpsZeroIsFCFS(t *testing.T) {
	trace := simulateTrace(t)
	fcfs, err := simulateJSON(t, "--workload", trace, "--policy", "fcfs")
	if err != nil {
		t.Fatal(err)
	}
	def, err := simulateJSON(t, "--workload", trace, "--policy", "fpfs")
	if err != nil {
		t.Fatal(err)
	}
	if def["mean_wait_s"] == fcfs["mean_wait_s"] {
		t.Fatalf("fpfs with the default bound waits as fcfs does (%v): the setting cannot show", def["mean_wait_s"])
	}
	t.Setenv("MSCHED_GA_MAX_JUMPS", "0")
	zero, err := simulateJSON(t, "--workload", trace, "--policy", "fpfs")
	if err != nil {
		t.Fatal(err)
	}
	if zero["mean_wait_s"] != fcfs["mean_wait_s"] {
		t.Errorf("fpfs with ga.max_jumps 0: mean wait %v, want fcfs's %v", zero["mean_wait_s"], fcfs["mean_wait_s"])
	}
}
