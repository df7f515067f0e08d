package web

import (
	"net/http/httptest"
	"testing"
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
