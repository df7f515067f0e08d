package web

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"msched/acct"
	"msched/spool"
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

// BenchmarkAccountingLog renders what reads the accounting log, over a log
// of 50,000 records (about 17 MB, a quarter of the size at which the
// reaper rotates it by default) of jobs ending every 10 s: the overview's
// refresh and its recent jobs (the log's last records), the usage chart of
// the last day (the last 8,640 records), the first page of /recent, a
// filter that matches one record in a hundred (the log read from its end
// until 26 match, each line tested as bytes before it is decoded), and a
// reaped job's page whose record is the log's first (the whole log read
// backwards, decoding only that line).
func BenchmarkAccountingLog(b *testing.B) {
	now := testNow
	f := fixture{Jobs: 200, Hosts: 16, Now: now}.build(b)
	var data []byte
	const n = 50000
	for i := 0; i < n; i++ {
		end := now.Add(-time.Duration(n-i) * 10 * time.Second)
		user := fmt.Sprintf("user%02d", i%20)
		if i%100 == 0 {
			user = "rare"
		}
		r := acct.Record{JID: spool.FormatJID(int64(100000 + i)), Name: jobNames[i%len(jobNames)], User: user,
			Executable: "/opt/bin/" + jobNames[i%len(jobNames)], Hosts: []string{fmt.Sprintf("node%02d", i%16)},
			SubmittedAt: end.Add(-5 * time.Minute), StartedAt: end.Add(-2 * time.Minute), EndedAt: end,
			PredictedSeconds: ptr(110.0), ActualSeconds: ptr(120.0), WaitSeconds: ptr(180.0), State: "exited", ExitStatus: ptr(0)}
		line, _ := json.Marshal(r)
		data = append(append(data, line...), '\n')
	}
	if err := os.WriteFile(filepath.Join(f.sp.Path(spool.DirDB), acct.JSONL), data, 0o644); err != nil {
		b.Fatal(err)
	}
	jidsGiven(b, f.sp, spool.FormatJID(100000+n-1))
	h := handlerFor(f, now, "")
	for _, c := range []struct{ name, path string }{
		{"overview-fragment", "/?fragment=1"},
		{"usage-24h", "/usage?fragment=1"},
		{"recent", "/recent?fragment=1"},
		{"recent-rare-user", "/recent?user=rare&fragment=1"},
		{"oldest-job-page", "/jobs/" + spool.FormatJID(100000)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", c.path, nil))
				if w.Code != 200 {
					b.Fatal(w.Code, w.Body)
				}
			}
		})
	}
}
