package main

import (
	"encoding/json"
	"os/exec"
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
