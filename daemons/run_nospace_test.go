package daemons

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"msched/internal/diskfull"
	"msched/spool"
)

// A job that ends while the spool's file system is full is recorded once
// space comes back, as the exit status 0 it ended with: it is not taken
// for lost and run again, nor left in running/ until the run daemon
// restarts (issue 13, item 2: no progress for 45-90 s, 16-22 finished jobs
// run again). On a real full tmpfs:
//
//   - "result": the spool's one file system is full when the job ends, so
//     its shepherd cannot write the result (and the run daemon could not
//     have moved the job);
//   - "move": db/run/, where shepherds write results, is a file system of
//     its own with space, so the result is written and only the run
//     daemon's move to finished/ finds the spool full.
func TestRun_JobEndingOnFullDiskRecordedOnce(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ownResultFS bool
	}{{"result", false}, {"move", true}} {
		t.Run(tc.name, func(t *testing.T) {
			fs := diskfull.Mount(t, 4<<20)
			sp, err := spool.Create(filepath.Join(fs, "spool"))
			if err != nil {
				t.Fatal(err)
			}
			if tc.ownResultFS {
				runDir := filepath.Join(sp.Path(spool.DirDB), RunDir)
				if err := os.MkdirAll(runDir, spool.DirPerm); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Mount("tmpfs", runDir, "tmpfs", 0, "size=1m"); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { syscall.Unmount(runDir, syscall.MNT_DETACH) })
			}
			gate := filepath.Join(t.TempDir(), "gate") // not on the full file system
			jid := runnable(t, sp, jobArgv(t, "gate", gate), nil)
			d := newRun(t, sp, 3)
			d.Rescan = time.Minute // progress must not wait for it
			startDaemon(t, d.Run)
			var pgid int
			eventually(t, "job running", func() bool {
				j, err := sp.Read(spool.Running, jid)
				if err == nil && j.Run != nil {
					pgid = j.Run.PGID
				}
				return pgid != 0
			})
			// The run daemon's recycled files (tmp/run/pool.*) keep their
			// blocks, so a move may find room in them even on a full disk;
			// without them every write needs a new block, as on a disk
			// that filled up before they were there.
			pool, _ := filepath.Glob(filepath.Join(sp.Path(spool.DirTmp), "run", "pool.*"))
			for _, p := range pool {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			}
			free := diskfull.Fill(t, fs)
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the job ended", func() bool { return procGone(pgid) })
			// The disk stays full a while after the job's end: the job must
			// stay in running/ (not re-queued as lost), whatever is retried.
			deadline := time.Now().Add(500 * time.Millisecond)
			for ; time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if st, _, err := sp.Find(jid); err != nil || st != spool.Running {
					t.Fatalf("on a full disk the job went to %s (%v)", st, err)
				}
			}
			free()
			begin := time.Now()
			f := inState(t, sp, jid, spool.Finished)
			if d := time.Since(begin); d > 5*time.Second {
				t.Errorf("recorded %v after space came back", d)
			}
			if f.Run == nil || f.Run.ExitStatus == nil || *f.Run.ExitStatus != 0 || f.Run.Attempts != 1 || f.Reason != "" {
				t.Errorf("run %+v reason %q; want exit status 0 on the first attempt", f.Run, f.Reason)
			}
			if historyCount(f, spool.Running) != 1 || historyCount(f, spool.Queued) != 1 {
				t.Errorf("history %+v; want one run", f.History)
			}
			if out := readText(t, filepath.Join(sp.Path(spool.DirOutput), jid, "stdout")); strings.Count(out, "hello from") != 1 {
				t.Errorf("the job ran %d times: %q", strings.Count(out, "hello from"), out)
			}
		})
	}
}
