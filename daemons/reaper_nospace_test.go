package daemons

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"msched/internal/diskfull"
	"msched/spool"
)

// A reaper whose scan found the disk full reaps once space is back, by
// itself, within seconds: nothing else in the spool changes to wake it,
// and its periodic rescan (an hour here) is too late (issue 13, item 2:
// progress must resume within seconds of space coming back; the test
// allows progressBound, for a loaded machine).
func TestReaper_ResumesAfterDiskFull(t *testing.T) {
	fs := diskfull.Mount(t, 4<<20)
	sp, err := spool.Create(filepath.Join(fs, "spool"))
	if err != nil {
		t.Fatal(err)
	}
	failed := make(chan struct{}, 1)
	env := testEnv(t, sp)
	env.Rescan = time.Hour
	env.Log = slog.New(onLog{env.Log.Handler(), func(r slog.Record) {
		if r.Message == "scan failed" {
			select {
			case failed <- struct{}{}:
			default:
			}
		}
	}})
	// The job file, written while there is space, arrives in finished/ by a
	// rename once the disk is full (a rename needs no block).
	staged := filepath.Join(t.TempDir(), "staged")
	stagedSp, err := spool.Create(staged)
	if err != nil {
		t.Fatal(err)
	}
	jid := finishedJob(t, stagedSp)
	job, err := os.ReadFile(filepath.Join(stagedSp.Dir(spool.Finished), jid))
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(sp.Path(spool.DirTmp), ".staged")
	if err := os.WriteFile(tmp, job, 0o644); err != nil {
		t.Fatal(err)
	}
	startDaemon(t, (&Reaper{Env: env}).Run)
	free := diskfull.Fill(t, fs)
	if err := os.Rename(tmp, filepath.Join(sp.Dir(spool.Finished), jid)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-failed:
	case <-time.After(waitBound):
		t.Fatal("the reaper did not fail on the full disk")
	}
	if jobsIn(t, sp, spool.Finished) != 1 {
		t.Fatal("reaped on a full disk?")
	}
	free()
	took := eventuallyWithin(t, progressBound, "reaped after space came back (the rescan is an hour away)", func() bool {
		return jobsIn(t, sp, spool.Finished) == 0
	})
	t.Logf("reaped %v after space came back", took)
	jsonl, swf := checkLogs(t, sp.Path(spool.DirDB))
	if jsonl[jid] != 1 || swf[jid] != 1 {
		t.Errorf("%d JSON records, %d SWF lines; want 1 each", jsonl[jid], swf[jid])
	}
	if _, err := os.Stat(filepath.Join(sp.Path(spool.DirReports), jid+".txt")); err != nil {
		t.Error(err)
	}
}
