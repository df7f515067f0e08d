package web

import (
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkOverview renders the overview of a spool of 1,000 jobs over
// every state and a schedule of 64 hosts, as a new process would (a CGI
// request): every job file listed, the first of each state read and
// parsed, the schedule, host samples and sched's counters read, the Gantt
// chart laid out and the page rendered. The acceptance bound is 200 ms.
func BenchmarkOverview(b *testing.B) {
	for _, path := range []string{"/", "/?fragment=1"} {
		b.Run(map[string]string{"/": "page", "/?fragment=1": "fragment"}[path], func(b *testing.B) {
			now := testNow
			f := fixture{Jobs: 1000, Hosts: 64, Now: now}.build(b)
			h := handlerFor(f, now, "")
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
				if w.Code != 200 {
					b.Fatal(w.Code)
				}
			}
		})
	}
}

// TestOverview_Within200ms checks the acceptance bound once outside the
// benchmark, so that CI fails if the overview gets slow. Under -race the
// code runs several times slower, so the bound is scaled there.
func TestOverview_Within200ms(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 1,000-job spool")
	}
	f := fixture{Jobs: 1000, Hosts: 64, Now: testNow}.build(t)
	h := handlerFor(f, testNow, "")
	best := time.Hour
	for i := 0; i < 5; i++ {
		start := time.Now()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		if d := time.Since(start); d < best {
			best = d
		}
		if w.Code != 200 {
			t.Fatal(w.Code)
		}
	}
	limit := 200 * time.Millisecond * time.Duration(raceFactor)
	t.Logf("overview of 1,000 jobs and 64 hosts: best of 5 %v (limit %v)", best, limit)
	if best > limit {
		t.Errorf("overview took %v, over %v", best, limit)
	}
}
