package daemons

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"msched/spool"
)

func newRun(t *testing.T, sp *spool.Spool, max int) *Run {
	return &Run{Env: testEnv(t, sp), Launcher: testLauncher(t), MaxAttempts: max, KillGrace: 200 * time.Millisecond}
}

func TestRun_Outcomes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		walltime time.Duration
		status   *int
		signal   string
		reason   string
	}{
		{"env", []string{"env"}, 0, ptr(0), "", ""},
		{"nonzero", []string{"exit", "3"}, 0, ptr(3), "", "exit status 3"},
		{"signal", []string{"signal"}, 0, nil, "SIGKILL", "killed by SIGKILL"},
		{"walltime", []string{"sleep"}, 300 * time.Millisecond, nil, "SIGTERM", "walltime exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := newTestSpool(t)
			jid := runnable(t, sp, jobArgv(t, tc.args...), func(j *spool.Job) { j.Walltime = spool.Duration(tc.walltime) })
			startDaemon(t, newRun(t, sp, 0).Run)
			j := inState(t, sp, jid, spool.Finished)
			r := j.Run
			if r == nil || r.StartedAt.IsZero() || r.EndedAt.Before(r.StartedAt) || r.Attempts != 1 || r.PID == 0 || r.Host != "h0" {
				t.Fatalf("run section %+v", r)
			}
			if (r.ExitStatus == nil) != (tc.status == nil) || (r.ExitStatus != nil && *r.ExitStatus != *tc.status) {
				t.Errorf("exit status %v, want %v", r.ExitStatus, tc.status)
			}
			if r.Signal != tc.signal && !(tc.name == "walltime" && r.Signal != "") {
				t.Errorf("signal %q, want %q", r.Signal, tc.signal)
			}
			if j.Reason != tc.reason {
				t.Errorf("reason %q, want %q", j.Reason, tc.reason)
			}
			if tc.walltime > 0 && r.EndedAt.Sub(r.StartedAt) > 10*time.Second {
				t.Errorf("walltime not enforced: ran %v", r.EndedAt.Sub(r.StartedAt))
			}
			if historyCount(j, spool.Running) != 1 || historyCount(j, spool.Finished) != 1 {
				t.Errorf("history %+v", j.History)
			}
			out, errp := spool.CapturedPaths(sp.Path(spool.DirOutput), jid)
			stdout := readText(t, out)
			if !strings.Contains(stdout, "hello from "+tc.args[0]) || !strings.Contains(readText(t, errp), "stderr of") {
				t.Errorf("output not captured: %q", stdout)
			}
			if tc.name == "env" {
				for _, want := range []string{"MSCHED_JID=" + jid, "MSCHED_HOSTS=h0,h1", "MSCHED_NHOSTS=2", "hostfile:\nh0\nh1\n"} {
					if !strings.Contains(stdout, want) {
						t.Errorf("job output lacks %q:\n%s", want, stdout)
					}
				}
			}
			eventually(t, "launch files removed", func() bool {
				des, _ := os.ReadDir(filepath.Join(sp.Path(spool.DirDB), RunDir))
				return len(des) == 0
			})
		})
	}
}

// A job with its own stdout path writes there, relative to the directory
// msched submit ran in (submit_dir), whatever its workdir; and it runs in
// that directory when it names no workdir.
func TestRun_JobsOwnOutputPaths(t *testing.T) {
	sp := newTestSpool(t)
	sd := t.TempDir()
	jid := runnable(t, sp, jobArgv(t, "exit", "0"), func(j *spool.Job) { j.SubmitDir, j.Workdir, j.Stdout = sd, "work", "out.txt" })
	if err := os.Mkdir(filepath.Join(sd, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	startDaemon(t, newRun(t, sp, 0).Run)
	inState(t, sp, jid, spool.Finished)
	if got := readText(t, filepath.Join(sd, "out.txt")); !strings.Contains(got, "hello from exit") {
		t.Errorf("out.txt = %q", got)
	}
	_, errp := spool.CapturedPaths(sp.Path(spool.DirOutput), jid)
	if !strings.Contains(readText(t, errp), "stderr of exit") {
		t.Error("stderr without a destination was not captured")
	}
}

// A destination in a directory the job's workdir lacks is the job's start
// error: the run daemon creates only the spool's output directory, never
// one for the job, and never relative to its own working directory.
func TestRun_OwnOutputDirIsNotCreated(t *testing.T) {
	sp := newTestSpool(t)
	wd, cwd := t.TempDir(), t.TempDir()
	t.Chdir(cwd)
	jid := runnable(t, sp, jobArgv(t, "exit", "0"), func(j *spool.Job) { j.Workdir, j.Stdout = wd, "logs/out.txt" })
	startDaemon(t, newRun(t, sp, 0).Run)
	q := inState(t, sp, jid, spool.Queued) // a start error is re-queued
	if note := q.History[len(q.History)-1].Note; !strings.Contains(note, "cannot start") {
		t.Errorf("history note %q, want a start error", note)
	}
	for _, d := range []string{filepath.Join(cwd, "logs"), filepath.Join(wd, "logs")} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (err %v): the run daemon made the job's directory", d, err)
		}
	}
}

func TestRun_CancelRunnable(t *testing.T) {
	sp := newTestSpool(t)
	gate := filepath.Join(t.TempDir(), "gate")
	jid := runnable(t, sp, jobArgv(t, "gate", gate), nil)
	if err := sp.RequestCancel(jid); err != nil {
		t.Fatal(err)
	}
	startDaemon(t, newRun(t, sp, 0).Run)
	j := inState(t, sp, jid, spool.Rejected)
	if j.Reason != "cancelled" || j.Run != nil {
		t.Errorf("reason %q, run %+v", j.Reason, j.Run)
	}
	eventually(t, "control removed", func() bool { cs, _ := sp.Controls(); return len(cs) == 0 })
}

func TestRun_CancelRunning(t *testing.T) {
	sp := newTestSpool(t)
	jid := runnable(t, sp, jobArgv(t, "sleep"), nil)
	startDaemon(t, newRun(t, sp, 0).Run)
	var pgid int
	eventually(t, "job running with its process group recorded", func() bool {
		j, err := sp.Read(spool.Running, jid)
		if err == nil && j.Run.PGID != 0 {
			pgid = j.Run.PGID
		}
		return pgid != 0
	})
	if procGone(pgid) {
		t.Fatal("job not running")
	}
	if err := sp.RequestCancel(jid); err != nil {
		t.Fatal(err)
	}
	j := inState(t, sp, jid, spool.Finished)
	if !j.CancelRequested || j.Reason != "cancelled" || j.Run.ExitStatus != nil {
		t.Errorf("cancel_requested %v, reason %q, exit %v", j.CancelRequested, j.Reason, j.Run.ExitStatus)
	}
	if !procGone(pgid) {
		t.Errorf("job leader %d still running", pgid)
	}
	if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
		// Members may linger as zombies only if nobody reaps them; the
		// leader is reaped by the shepherd, so the group must be gone.
		t.Errorf("process group %d still exists: %v", pgid, err)
	}
	eventually(t, "control removed", func() bool { cs, _ := sp.Controls(); return len(cs) == 0 })
}

// A job that cannot start goes back to queued/ with its attempt counted,
// and to finished/ with the reason once MaxAttempts is reached.
func TestRun_StartErrorRequeuedThenFinished(t *testing.T) {
	sp := newTestSpool(t)
	// A start error another attempt may cure: the working directory may
	// yet appear.
	missing := filepath.Join(t.TempDir(), "not-yet")
	jid := runnable(t, sp, jobArgv(t, "exit", "0"), func(j *spool.Job) { j.Workdir = missing })
	startDaemon(t, newRun(t, sp, 2).Run)
	q := inState(t, sp, jid, spool.Queued)
	if q.Run == nil || q.Run.Attempts != 1 || q.Schedule != nil {
		t.Fatalf("re-queued job: run %+v schedule %+v", q.Run, q.Schedule)
	}
	if note := q.History[len(q.History)-1].Note; !strings.Contains(note, "cannot start") || !strings.Contains(note, "re-queued") {
		t.Errorf("history note %q", note)
	}
	// Play the scheduler: place it again.
	sched := sp.As(spool.Sched)
	q.Schedule = &spool.Schedule{Hosts: []string{"h1"}, PredictedSeconds: 1}
	if err := sched.Move(q, spool.Queued, spool.Runnable, "again"); err != nil {
		t.Fatal(err)
	}
	f := inState(t, sp, jid, spool.Finished)
	if f.Run.Attempts != 2 || f.Run.ExitStatus != nil || !strings.Contains(f.Reason, "cannot start") ||
		!strings.Contains(f.Reason, "giving up") {
		t.Errorf("finished: run %+v reason %q", f.Run, f.Reason)
	}
}

// A start that can never succeed (issue 13, item 3: no such program, a
// program that cannot be executed; an argument list too long is refused by
// the job file's bounds before it gets here, and launch's tests cover it)
// ends the job at once with the reason, instead of re-queuing it
// run.max_attempts times.
func TestRun_HopelessStartNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name   string
		argv   func(t *testing.T) []string
		reason string
	}{
		{"no such program", func(*testing.T) []string { return []string{"/no/such/program"} }, "no such file or directory"},
		{"not in PATH", func(*testing.T) []string { return []string{"no-such-program-msched"} }, "executable file not found"},
		{"not executable", func(t *testing.T) []string {
			p := filepath.Join(t.TempDir(), "script")
			if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{p}
		}, "permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := newTestSpool(t)
			jid := runnable(t, sp, tc.argv(t), nil)
			startDaemon(t, newRun(t, sp, 3).Run)
			f := inState(t, sp, jid, spool.Finished)
			if f.Run == nil || f.Run.Attempts != 1 || f.Run.ExitStatus != nil || !strings.Contains(f.Reason, tc.reason) ||
				!strings.Contains(f.Reason, "not retried") {
				t.Errorf("finished: run %+v reason %q", f.Run, f.Reason)
			}
			if n := historyCount(f, spool.Queued); n != 1 {
				t.Errorf("queued %d times, want once (by init): %+v", n, f.History)
			}
		})
	}
}

// The guarantee in Run's doc comment: a job running when the daemon stops
// keeps running under its shepherd, and the next daemon records its result
// exactly once, whether it ends while no daemon runs or after the restart.
func TestRun_RestartAdoptsJob(t *testing.T) {
	for _, whileDown := range []bool{false, true} {
		name := "ends after restart"
		if whileDown {
			name = "ends while down"
		}
		t.Run(name, func(t *testing.T) {
			sp := newTestSpool(t)
			gate := filepath.Join(t.TempDir(), "gate")
			jid := runnable(t, sp, jobArgv(t, "gate", gate), nil)
			stop := startDaemon(t, newRun(t, sp, 0).Run)
			var pgid int
			eventually(t, "job running", func() bool {
				j, err := sp.Read(spool.Running, jid)
				if err == nil {
					pgid = j.Run.PGID
				}
				return pgid != 0
			})
			stop()
			if procGone(pgid) {
				t.Fatal("stopping the run daemon ended the job")
			}
			result := filepath.Join(sp.Path(spool.DirDB), RunDir, jid+".result")
			if whileDown {
				if err := os.WriteFile(gate, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				eventually(t, "result written with no daemon", func() bool { _, err := os.Stat(result); return err == nil })
			}
			if _, err := os.Stat(filepath.Join(sp.Dir(spool.Running), jid)); err != nil {
				t.Fatal("job left running/ with no daemon:", err)
			}
			startDaemon(t, newRun(t, sp, 0).Run)
			if !whileDown {
				if err := os.WriteFile(gate, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			j := inState(t, sp, jid, spool.Finished)
			if j.Run.ExitStatus == nil || *j.Run.ExitStatus != 0 || j.Run.Attempts != 1 {
				t.Errorf("run %+v reason %q", j.Run, j.Reason)
			}
			if historyCount(j, spool.Running) != 1 || historyCount(j, spool.Finished) != 1 || historyCount(j, spool.Queued) != 1 {
				t.Errorf("not recorded exactly once: %+v", j.History)
			}
		})
	}
}

// If the shepherd itself died, the restarted daemon re-queues the job as
// lost (an attempt counted), or finishes it when attempts are spent.
func TestRun_RestartRequeuesLostJob(t *testing.T) {
	for _, max := range []int{2, 1} {
		t.Run(map[int]string{2: "requeued", 1: "attempts spent"}[max], func(t *testing.T) {
			sp := newTestSpool(t)
			jid := runnable(t, sp, jobArgv(t, "sleep"), nil)
			stop := startDaemon(t, newRun(t, sp, max).Run)
			var j *spool.Job
			eventually(t, "job running", func() bool {
				var err error
				j, err = sp.Read(spool.Running, jid)
				return err == nil && j.Run.PGID != 0
			})
			stop()
			if err := syscall.Kill(j.Run.PID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			eventually(t, "shepherd and job dead", func() bool { return procGone(j.Run.PID) && procGone(j.Run.PGID) })
			startDaemon(t, newRun(t, sp, max).Run)
			if max == 1 {
				f := inState(t, sp, jid, spool.Finished)
				// "lost:" either way: found gone at recovery, or adopted as
				// running an instant before the lock was seen released.
				if !strings.Contains(f.Reason, "lost: ") || f.Run.ExitStatus != nil {
					t.Errorf("reason %q run %+v", f.Reason, f.Run)
				}
				return
			}
			q := inState(t, sp, jid, spool.Queued)
			if q.Run == nil || q.Run.Attempts != 1 {
				t.Errorf("attempts not counted: %+v", q.Run)
			}
			if note := q.History[len(q.History)-1].Note; !strings.Contains(note, "lost: ") || !strings.Contains(note, "re-queued") {
				t.Errorf("history note %q", note)
			}
		})
	}
}

// A job moved to running/ by a daemon that died before handing it to a
// shepherd never ran: it is re-queued without an attempt counted.
func TestRun_RestartRequeuesNeverStarted(t *testing.T) {
	sp := newTestSpool(t)
	jid := putJob(t, sp, spool.Running, &spool.Job{Command: jobArgv(t, "exit", "0"),
		Schedule: &spool.Schedule{Hosts: []string{"h0"}, PredictedSeconds: 1},
		Run:      &spool.RunInfo{StartedAt: time.Now().UTC(), Attempts: 1}})
	startDaemon(t, newRun(t, sp, 0).Run)
	q := inState(t, sp, jid, spool.Queued)
	if q.Run != nil && q.Run.Attempts != 0 {
		t.Errorf("attempt counted for a job that never ran: %+v", q.Run)
	}
	if note := q.History[len(q.History)-1].Note; !strings.Contains(note, "not started") {
		t.Errorf("history note %q", note)
	}
}

// Many jobs at once: each is followed by its own goroutine and a long job
// does not hold up the others.
func TestRun_ManyConcurrentJobs(t *testing.T) {
	sp := newTestSpool(t)
	long := runnable(t, sp, jobArgv(t, "sleep"), nil)
	var short []string
	for i := 0; i < 8; i++ {
		short = append(short, runnable(t, sp, jobArgv(t, "exit", "0"), nil))
	}
	startDaemon(t, newRun(t, sp, 0).Run)
	for _, jid := range short {
		inState(t, sp, jid, spool.Finished)
	}
	if _, err := sp.Read(spool.Running, long); err != nil {
		t.Errorf("long job: %v", err)
	}
	if err := sp.RequestCancel(long); err != nil {
		t.Fatal(err)
	}
	inState(t, sp, long, spool.Finished)
}
