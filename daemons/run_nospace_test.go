package daemons

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

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
//
// The job must stay in running/ until the test has seen the full disk
// felt (the shepherd's write of the result failed, or the run daemon said
// it waits for space to move the job) and a while after; it must reach
// finished/ once space is back, without the periodic rescan (an hour
// here), as the exit status 0 it ended with.
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
			d.Rescan = time.Hour // progress must not wait for it
			moveWaits := make(chan struct{}, 1)
			d.Log = slog.New(onLog{d.Log.Handler(), func(r slog.Record) {
				if r.Message == "cannot record the job: file system full; waiting for space" {
					select {
					case moveWaits <- struct{}{}:
					default:
					}
				}
			}})
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
			failedWrites := failedResultWrites(t, filepath.Join(sp.Path(spool.DirDB), RunDir), jid)
			free := diskfull.Fill(t, fs)
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			// The disk stays full a while after the job's end: the job must
			// stay in running/ (not re-queued as lost), whatever is retried.
			stillRunning := func() {
				if st, _, err := sp.Find(jid); err != nil || st != spool.Running {
					t.Fatalf("on a full disk the job went to %s (%v)", st, err)
				}
			}
			eventually(t, "the job ended", func() bool { stillRunning(); return procGone(pgid) })
			// Not before the full disk was felt: a loaded machine may not
			// have tried a write yet.
			if tc.ownResultFS {
				eventually(t, "the run daemon saying it waits for space to move the job", func() bool {
					stillRunning()
					select {
					case <-moveWaits:
						return true
					default:
						return false
					}
				})
			} else {
				eventually(t, "the shepherd's write of the result failing", func() bool { stillRunning(); return failedWrites() > 0 })
			}
			for deadline := time.Now().Add(500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				stillRunning()
			}
			free()
			took := eventuallyWithin(t, progressBound, "the job recorded after space came back (the rescan is an hour away)", func() bool {
				st, _, err := sp.Find(jid)
				return err == nil && st == spool.Finished
			})
			t.Logf("recorded %v after space came back", took)
			f, err := sp.Read(spool.Finished, jid)
			if err != nil {
				t.Fatal(err)
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

// failedResultWrites counts, from its call on, the tries by jid's shepherd
// to write the job's result into runDir (db/run/) that failed: each such
// try removes its temporary (.<jid>.result.staging, or atomicfile's
// .<jid>.result.*), which a try that succeeds renames into place instead.
// The count is read through inotify by the test's goroutine.
func failedResultWrites(t *testing.T, runDir, jid string) (count func() int) {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.InotifyAddWatch(fd, runDir, unix.IN_DELETE|unix.IN_ONLYDIR); err != nil {
		t.Fatal(err)
	}
	prefix := "." + jid + ".result"
	buf := make([]byte, 64<<10)
	n := 0
	return func() int {
		for {
			k, err := unix.Read(fd, buf)
			if err != nil || k <= 0 {
				return n // EAGAIN: nothing more queued
			}
			for off := 0; off+unix.SizeofInotifyEvent <= k; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
				off += unix.SizeofInotifyEvent + int(ev.Len)
				if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
					t.Fatal("inotify overflow on db/run/")
				}
				if ev.Mask&unix.IN_DELETE != 0 && strings.HasPrefix(name, prefix) {
					n++
				}
			}
		}
	}
}
