package daemons

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"msched/acct"
	"msched/spool"
)

// A job that an older msched had moved to exited/ (sched's finished →
// exited, gone since the reaper takes jobs from finished/) is reported
// after an upgrade like any finished job: one report, one record saying
// "exited", and exited/ is gone.
func TestReaper_ReportsJobsLeftInExited(t *testing.T) {
	sp := newTestSpool(t)
	jid := finishedJob(t, sp)
	j, err := sp.Read(spool.Finished, jid)
	if err != nil {
		t.Fatal(err)
	}
	j.History = append(j.History, spool.Event{State: "exited", At: j.SubmittedAt, Note: "predicted 10s, actual 8s"})
	b, err := j.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(sp.Root(), "exited")
	if err := os.Mkdir(old, spool.DirPerm); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, jid), b, spool.FilePerm); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(sp.Dir(spool.Finished), jid)); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	stop := startDaemon(t, (&Reaper{Env: testEnv(t, sp), Notifier: rec}).Run)
	eventually(t, "reaped and notified", func() bool { return jobsIn(t, sp, spool.Finished) == 0 && rec.count() == 1 })
	stop()
	if _, err := os.Stat(old); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("exited/ still there: %v", err)
	}
	recs, _ := accountingLines(t, sp)
	if len(recs) != 1 || recs[0].JID != jid || recs[0].State != spool.OutcomeExited || recs[0].SWFStatus != acct.SWFCompleted {
		t.Errorf("records %+v, want one for %s, exited and completed", recs, jid)
	}
	if _, err := os.Stat(filepath.Join(sp.Path(spool.DirReports), jid+".txt")); err != nil {
		t.Errorf("no report: %v", err)
	}
}
