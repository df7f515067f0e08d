package daemons

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"msched/acct"
	"msched/notify"
	"msched/spool"
)

// recorder is a Notifier that remembers what it was given.
type recorder struct {
	mu   sync.Mutex
	reps []notify.Report
}

func (r *recorder) Notify(_ context.Context, rep notify.Report) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reps = append(r.reps, rep)
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reps)
}

// finishedJob is a job that ran 8 s against a prediction of 10 s and left
// its stdout in spool/output.
func finishedJob(t *testing.T, sp *spool.Spool) string {
	t.Helper()
	sub := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	zero := 0
	j := &spool.Job{Name: "particles", Command: []string{"./AppParticles", "-n", "20000"}, Notify: "alice@example.org",
		SubmittedAt: sub, Walltime: spool.Duration(time.Minute), Hosts: &spool.Hosts{Count: 2},
		Model:    &spool.Model{Name: "particles", Params: map[string]float64{"N": 20000}},
		Schedule: &spool.Schedule{Hosts: []string{"h0", "h1"}, PredictedSeconds: 10},
		Run:      &spool.RunInfo{StartedAt: sub.Add(5 * time.Second), EndedAt: sub.Add(13 * time.Second), ExitStatus: &zero, Attempts: 1}}
	jid := putJob(t, sp, spool.Finished, j)
	out, _ := spool.CapturedPaths(sp.Path(spool.DirOutput), jid)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, []byte("hello from the job\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return jid
}

// rejectedJob is a submission init could not parse.
func rejectedJob(t *testing.T, sp *spool.Spool) string {
	t.Helper()
	return putJob(t, sp, spool.Rejected, &spool.Job{Name: "bad",
		Reason:   "bad.yaml:2: unknown field \"comand\"\nbad.yaml:3: walltime: \"soon\" is not a duration",
		Original: "name: bad\ncomand: [x]\nwalltime: soon\n",
		History:  []spool.Event{{State: spool.Submitted, At: time.Now().UTC()}, {State: spool.Rejected, At: time.Now().UTC()}}})
}

// accountingLines returns the records of the JSON-lines log and the job
// lines (not comments) of the SWF log.
func accountingLines(t *testing.T, sp *spool.Spool) (recs []acct.Record, swf [][]string) {
	t.Helper()
	for _, l := range strings.Split(readText(t, filepath.Join(sp.Path(spool.DirDB), acct.JSONL)), "\n") {
		if l == "" {
			continue
		}
		var r acct.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("bad accounting line %q: %v", l, err)
		}
		recs = append(recs, r)
	}
	for _, l := range strings.Split(readText(t, filepath.Join(sp.Path(spool.DirDB), acct.SWF)), "\n") {
		if l != "" && !strings.HasPrefix(l, ";") {
			swf = append(swf, strings.Fields(l))
		}
	}
	return recs, swf
}

func TestReaper_ReportsAccountsAndRemoves(t *testing.T) {
	sp := newTestSpool(t)
	ok, bad := finishedJob(t, sp), rejectedJob(t, sp)
	rec := &recorder{}
	stop := startDaemon(t, (&Reaper{Env: testEnv(t, sp), Notifier: rec}).Run)
	eventually(t, "both reaped and notified", func() bool {
		return jobsIn(t, sp, spool.Finished)+jobsIn(t, sp, spool.Rejected) == 0 && rec.count() == 2
	})
	stop()

	report := readText(t, filepath.Join(sp.Path(spool.DirReports), ok+".txt"))
	for _, want := range []string{
		"To: alice@example.org", "Subject: msched: job " + ok + " (particles) exited with status 0",
		"Command:     ./AppParticles -n 20000", "Hosts:       h0, h1 (2)", "Wait:        5s",
		"Predicted:   10s", "Actual:      8s (prediction error +2.0 s)", "Exit status: 0",
		"Standard output:\n\n    hello from the job\n",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	rejection := readText(t, filepath.Join(sp.Path(spool.DirReports), bad+".txt"))
	for _, want := range []string{"rejected: bad.yaml:2: unknown field", "            bad.yaml:3: walltime", "    comand: [x]\n"} {
		if !strings.Contains(rejection, want) {
			t.Errorf("rejection report lacks %q:\n%s", want, rejection)
		}
	}

	recs, swf := accountingLines(t, sp)
	if len(recs) != 2 || len(swf) != 2 {
		t.Fatalf("%d JSON records, %d SWF lines; want 2 each", len(recs), len(swf))
	}
	r := recs[0]
	if r.JID != ok || r.State != "exited" || *r.PredictedSeconds != 10 || *r.ActualSeconds != 8 || *r.WaitSeconds != 5 ||
		*r.ExitStatus != 0 || r.SWFStatus != acct.SWFCompleted || len(r.Hosts) != 2 || r.User != "alice" ||
		r.Model != "particles" || r.Executable != "./AppParticles" {
		t.Errorf("record %+v", r)
	}
	sub := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Unix()
	want := []string{strings.TrimLeft(ok[1:], "0"), itoa(sub), "5", "8", "2", "-1", "-1", "2", "60", "-1", "1", "1", "-1", "1", "-1", "-1", "-1", "-1"}
	if strings.Join(swf[0], " ") != strings.Join(want, " ") {
		t.Errorf("SWF line\n got %v\nwant %v", swf[0], want)
	}
	if len(swf[1]) != 18 || swf[1][10] != "0" || swf[1][3] != "-1" {
		t.Errorf("rejected SWF line %v", swf[1])
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// A crash after the accounting append and before the removal leaves the
// job file; reaping it again (by a restarted reaper) rewrites the report
// and adds no second record. A torn last line from a crash mid-append is
// cut and written again.
func TestReaper_CrashWindowAccountsOnce(t *testing.T) {
	sp := newTestSpool(t)
	jid := finishedJob(t, sp)
	stop := startDaemon(t, (&Reaper{Env: testEnv(t, sp)}).Run)
	eventually(t, "reaped", func() bool { return jobsIn(t, sp, spool.Finished) == 0 })
	stop()

	finishedJob2 := func() { // the same job file again, as if Remove had not happened
		zero := 0
		sub := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		putJob(t, sp, spool.Finished, &spool.Job{JID: jid, Name: "particles", Command: []string{"x"}, SubmittedAt: sub,
			Run: &spool.RunInfo{StartedAt: sub, EndedAt: sub.Add(time.Second), ExitStatus: &zero}})
	}
	finishedJob2()
	stop = startDaemon(t, (&Reaper{Env: testEnv(t, sp)}).Run)
	eventually(t, "reaped again", func() bool { return jobsIn(t, sp, spool.Finished) == 0 })
	stop()
	if recs, swf := accountingLines(t, sp); len(recs) != 1 || len(swf) != 1 {
		t.Fatalf("%d JSON records and %d SWF lines for one job", len(recs), len(swf))
	}

	// A second job whose JSON line was torn by a crash.
	other := finishedJob(t, sp)
	f, err := os.OpenFile(filepath.Join(sp.Path(spool.DirDB), acct.JSONL), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"jid":"` + other + `","na`)
	f.Close()
	startDaemon(t, (&Reaper{Env: testEnv(t, sp)}).Run)
	eventually(t, "second job reaped", func() bool { return jobsIn(t, sp, spool.Finished) == 0 })
	recs, swf := accountingLines(t, sp)
	if len(recs) != 2 || len(swf) != 2 || recs[1].JID != other {
		t.Fatalf("after a torn line: %d records, %d SWF lines: %+v", len(recs), len(swf), recs)
	}
}

// Cancel requests for jobs that are gone or already done are removed; one
// for an active job is left to its owner.
func TestReaper_RemovesStaleControls(t *testing.T) {
	sp := newTestSpool(t)
	queued := putJob(t, sp, spool.Queued, &spool.Job{Command: []string{"x"}})
	done := finishedJob(t, sp)
	for _, jid := range []string{queued, done, "J999999"} {
		if err := sp.RequestCancel(jid); err != nil {
			t.Fatal(err)
		}
	}
	startDaemon(t, (&Reaper{Env: testEnv(t, sp)}).Run)
	eventually(t, "stale requests removed", func() bool {
		cs, err := sp.Controls()
		if err != nil {
			t.Fatal(err)
		}
		return len(cs) == 1 && cs[0].JID == queued
	})
}

// A report names the job's model and how accurate it has been on the
// model's earlier jobs, carried across a reaper restart by the accounting
// log.
func TestReaper_ReportShowsModelAccuracy(t *testing.T) {
	sp := newTestSpool(t)
	first := finishedJob(t, sp) // particles: predicted 10 s, ran 8 s (2 s off: too short for a percentage)
	stop := startDaemon(t, (&Reaper{Env: testEnv(t, sp)}).Run)
	eventually(t, "first reaped", func() bool { return jobsIn(t, sp, spool.Finished) == 0 })
	stop()
	second := finishedJob(t, sp)
	stop = startDaemon(t, (&Reaper{Env: testEnv(t, sp)}).Run)
	eventually(t, "second reaped", func() bool { return jobsIn(t, sp, spool.Finished) == 0 })
	stop()

	r1 := readText(t, filepath.Join(sp.Path(spool.DirReports), first+".txt"))
	if !strings.Contains(r1, "Model:       particles\n") || strings.Contains(r1, "Accuracy:") {
		t.Errorf("first report: want the model and no accuracy yet:\n%s", r1)
	}
	r2 := readText(t, filepath.Join(sp.Path(spool.DirReports), second+".txt"))
	if want := "Accuracy:    mean absolute error 2.0 s over the model's 1 earlier jobs (all shorter than 10s)"; !strings.Contains(r2, want) {
		t.Errorf("second report lacks %q:\n%s", want, r2)
	}
}
