package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"msched/workload"
)

// workload generate lublin writes an SWF trace that workload stats reads:
// --jobs jobs on the model's 128 nodes; --alpha 9.83 (W2) offers more than
// the default W1 from the same seed, and --alpha belongs to lublin only.
func TestWorkload_GenerateLublin(t *testing.T) {
	dir := t.TempDir()
	stats := func(args ...string) workload.Stats {
		t.Helper()
		file := filepath.Join(dir, "lublin.swf")
		if _, err := runMsched(t, context.Background(), nil, append([]string{"workload", "generate", "lublin", "--jobs", "3000", "--seed", "5", "--out", file}, args...)...); err != nil {
			t.Fatal(err)
		}
		out, err := runMsched(t, context.Background(), nil, "workload", "stats", file, "--json")
		if err != nil {
			t.Fatal(err)
		}
		var s workload.Stats
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return s
	}
	w1 := stats()
	if w1.Jobs != 3000 || w1.Procs != workload.LublinProcs || w1.MaxP > 128 || w1.JobsWithRun != 3000 {
		t.Errorf("W1: %d jobs (%d with run times) on %d procs, largest %d", w1.Jobs, w1.JobsWithRun, w1.Procs, w1.MaxP)
	}
	w2 := stats("--alpha", "9.83")
	if w2.Jobs != 3000 || !(w2.OfferedLoad > w1.OfferedLoad) {
		t.Errorf("W2: %d jobs, offered load %.3f (W1 %.3f)", w2.Jobs, w2.OfferedLoad, w1.OfferedLoad)
	}
	if _, err := runMsched(t, context.Background(), nil, "workload", "generate", "o2k", "--jobs", "10", "--alpha", "9.83"); err == nil || !strings.Contains(err.Error(), "--alpha is a flag of lublin") {
		t.Errorf("o2k --alpha: %v", err)
	}
	if _, err := runMsched(t, context.Background(), nil, "workload", "generate", "lublin", "--jobs", "10", "--alpha", "-1"); err == nil {
		t.Error("--alpha -1 accepted")
	}
	for _, a := range []string{"0", "50"} { // 0 would quietly be W1; 50 would never end
		if _, err := runMsched(t, context.Background(), nil, "workload", "generate", "lublin", "--jobs", "10", "--alpha", a); err == nil {
			t.Errorf("--alpha %s accepted", a)
		}
	}
}
