package bench

import (
	"context"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
)

// A small budget: only the report's structure and the setting's invariants
// are checked; the figures come from running `msched bench table1`.
func TestTable1_Structure(t *testing.T) {
	r, err := Table1(context.Background(), Table1Config{Sizes: []float64{16, 32}, HorizonTasks: 15, Generations: 1, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"sizes", "fifo", "ga_ms", "ga_xms"} {
		v, ok := obj[k].([]any)
		if !ok || len(v) != 2 {
			t.Fatalf("%s = %v, want a list of 2", k, obj[k])
		}
	}
	peak := r.Rates["fifo-peak"]
	for name, rates := range r.Rates {
		for k, x := range rates {
			// Every policy finishes tasks, and none beats the node-seconds
			// bound relative to fifo-peak.
			if !(x > 0) || x/peak[k] > r.BoundRatio[k]+1e-9 {
				t.Errorf("%s size %g: rate %g (fifo-peak %g, bound ratio %g)", name, r.Sizes[k], x, peak[k], r.BoundRatio[k])
			}
			if u := r.Utilization[name][k]; !(u > 0 && u <= 1) {
				t.Errorf("%s size %g: utilisation %g", name, r.Sizes[k], u)
			}
		}
	}
	var sb strings.Builder
	if err := r.Table(&sb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"16 nodes", "20 tasks always waiting", "GA-XMS / FIFO"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, sb.String())
		}
	}
	// A row of figures per policy (the header names fifo and fifo-peak
	// whatever ran).
	for _, p := range r.Setup.Policies {
		if !regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(p) + `\s+\d`).MatchString(sb.String()) {
			t.Errorf("table lacks a row for %s:\n%s", p, sb.String())
		}
	}
}

// The bound counts node-seconds exactly: with i* = 1 only, FIFO runs every
// task on one node at efficiency 50 % and so does every schedule, so the
// bound at full utilisation is 1.
func TestTable1_Bound(t *testing.T) {
	if b := Table1Bound(1, 1, 1); math.Abs(b-1) > 1e-12 {
		t.Fatalf("bound = %g, want 1", b)
	}
	// i* = 2: FIFO 2·C_cpu, best C_cpu·(1 + 1/4).
	if b := Table1Bound(2, 2, 0.5); math.Abs(b-2/(0.5*1.25)) > 1e-12 {
		t.Fatalf("bound = %g, want %g", b, 2/(0.5*1.25))
	}
}

// Every policy sees the same task stream, and each task's Eq. 2 run time
// is least at its peak-speedup count, uniform on peakMin..nodes, where it
// lies in [S/2, 3S/2).
func TestTable1_Tasks(t *testing.T) {
	const peakMin = 4
	a, b := Table1Tasks(32, peakMin, 16, 9), Table1Tasks(32, peakMin, 16, 9)
	peaks := map[int]bool{}
	for i := 0; i < 200; i++ {
		x, y := a(i), b(i)
		best, at := math.Inf(1), 0
		for n := 1; n <= 16; n++ {
			if x.Time(n) != y.Time(n) {
				t.Fatalf("task %d differs between streams", i)
			}
			if v := x.Time(n); v < best {
				best, at = v, n
			}
		}
		if best < 16 || best >= 48 || x.Min != 1 || x.Max != 16 || at < peakMin {
			t.Fatalf("task %d: least run time %g at %d nodes", i, best, at)
		}
		peaks[at] = true
	}
	if len(peaks) != 16-peakMin+1 {
		t.Errorf("peak counts cover %d of the %d in %d..16", len(peaks), 16-peakMin+1, peakMin)
	}
}

// The standard queue's tasks are the same tasks, rigid on a request that
// covers 1..nodes and says nothing about the task's peak count.
func TestTable1_Requests(t *testing.T) {
	tasks, reqs := Table1Tasks(16, 1, 16, 7), Table1Requests(16, 1, 16, 7)
	seen := map[int]bool{}
	atPeak := 0
	for i := 0; i < 2000; i++ {
		a, b := tasks(i), reqs(i)
		if a.Time(3) != b.Time(3) || a.Min != 1 || a.Max != 16 {
			t.Fatalf("task %d differs between the streams", i)
		}
		if b.Min != b.Max || b.Min < 1 || b.Min > 16 {
			t.Fatalf("task %d request %d..%d, want one count in 1..16", i, b.Min, b.Max)
		}
		seen[b.Min] = true
		best := 1
		for n := 2; n <= 16; n++ {
			if a.Time(n) < a.Time(best) {
				best = n
			}
		}
		if b.Min == best {
			atPeak++
		}
	}
	if len(seen) != 16 {
		t.Errorf("requests cover %d of the 16 counts", len(seen))
	}
	if atPeak > 2000/16*2 {
		t.Errorf("%d of 2000 requests hit the task's peak count: not independent of it", atPeak)
	}
}
