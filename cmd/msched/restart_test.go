package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"msched/spool"
)

// daemonProc is one `msched daemon X` process.
type daemonProc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// startDaemon starts `msched daemon name` on the spool; its output goes to
// a log printed if the test fails.
func startDaemon(t *testing.T, sp *spool.Spool, name string, log *os.File) *daemonProc {
	t.Helper()
	return startMsched(t, sp, log, name, "daemon", name)
}

// startMsched starts `msched args…` on the spool, named name; its output
// goes to log.
func startMsched(t *testing.T, sp *spool.Spool, log *os.File, name string, args ...string) *daemonProc {
	t.Helper()
	cmd := exec.Command(mschedBin, args...)
	cmd.Env = testEnv(sp.Root())
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &daemonProc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	return p
}

// signal sends sig and waits for the process to end.
func (p *daemonProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("daemon %s did not end within 20 s of %v", p.name, sig)
	}
}

// alive reports whether process pid exists (and is not a zombie of ours).
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !containsState(b, 'Z')
}

// containsState reports whether a /proc/PID/stat line gives the process
// state st (the field after the parenthesised command name).
func containsState(stat []byte, st byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == st
}

// runningJobs returns the jobs in running/ that have started, by name.
func runningJobs(sp *spool.Spool) map[string]*spool.Job {
	out := map[string]*spool.Job{}
	es, _ := sp.List(spool.Running)
	for _, e := range es {
		if j, err := sp.Read(spool.Running, e.Name); err == nil && j.Run != nil && j.Run.PGID > 0 {
			out[j.Name] = j
		}
	}
	return out
}

// restartJobs is the workload of the restart tests: short jobs, parallel
// jobs and long ones that are sure to be running when run is stopped:
// they run until the file release exists.
func restartJobs(release string) []string {
	var bodies []string
	for i := 0; i < 14; i++ {
		bodies = append(bodies, fmt.Sprintf("name: short-%d\ncommand: [\"sleep\", \"0.2\"]\n", i))
	}
	for i := 0; i < 4; i++ {
		bodies = append(bodies, fmt.Sprintf("name: pair-%d\ncommand: [\"sleep\", \"0.3\"]\nhosts: {count: 2}\n", i))
	}
	for i := 0; i < 4; i++ {
		// Running until the test releases them (bounded): they are
		// surely running across the restarts, however slow the machine.
		bodies = append(bodies, fmt.Sprintf("name: long-%d\ncommand: [sh, -c, '%s']\nwalltime: 5m\n", i, untilReleased(release)))
	}
	return bodies
}

// checkRestartOutcome checks what README promises after restarts: every
// job reported exactly once, each with exit status 0; the jobs that were
// running when run died ran once (attempt 1) and kept their start time;
// the job whose shepherd was killed too was re-queued as attempt 2.
func checkRestartOutcome(t *testing.T, sp *spool.Spool, n int, adopted map[string]*spool.Job, lost string, runStopped time.Time, crashed bool) {
	t.Helper()
	rs := checkOneReportEach(t, sp, n)
	checkDrained(t, sp, crashed)
	byName := map[string]record{}
	for _, r := range rs {
		byName[r.Name] = r
		if r.State != "exited" || r.ExitStatus == nil || *r.ExitStatus != 0 {
			t.Errorf("%s (%s): %s, exit %v, reason %q; want exited with status 0", r.Name, r.JID, r.State, deref(r.ExitStatus), r.Reason)
		}
	}
	if len(adopted) == 0 {
		t.Fatal("no job was running when run was stopped: the test proves nothing")
	}
	for name, j := range adopted {
		r := byName[name]
		switch {
		case name == lost:
			if r.Attempts != 2 {
				t.Errorf("%s: shepherd killed while run was down: %d attempts, want 2 (re-queued once)", name, r.Attempts)
			}
		case r.Attempts != 1:
			t.Errorf("%s: running when run died: %d attempts, want 1 (adopted, not restarted)", name, r.Attempts)
		case !r.StartedAt.Before(runStopped):
			t.Errorf("%s: started at %v, after run was stopped at %v (it was running since %v): it was started again",
				name, r.StartedAt, runStopped, j.Run.StartedAt)
		}
	}
}

// waitLong waits until a long job is running.
func waitLong(t *testing.T, sp *spool.Spool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for name := range runningJobs(sp) {
			if strings.HasPrefix(name, "long-") {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no long job running within 30 s; spool:\n%s", spoolListing(sp))
}

// TestRestart_KillNine kills each daemon with SIGKILL in the middle of a
// run and starts it again, as separate `msched daemon X` processes sharing
// only the spool. While run is down, the jobs it had started must keep
// running under their shepherds; one shepherd is killed as well, and its
// job must be re-queued as a new attempt.
func TestRestart_KillNine(t *testing.T) {
	sp, _ := testSpool(t, 4)
	_, logf := logFile(t, "daemons")
	procs := map[string]*daemonProc{}
	for _, n := range daemonNames {
		procs[n] = startDaemon(t, sp, n, logf)
	}
	defer func() {
		for _, p := range procs {
			p.cmd.Process.Kill()
			<-p.done
		}
	}()
	release := filepath.Join(t.TempDir(), "release")
	releaseOnCleanup(t, release)
	jobs := restartJobs(release)
	// init dies with half of the submissions waiting for it.
	for i, b := range jobs[:len(jobs)/2] {
		submit(t, sp, fmt.Sprintf("a%02d.yaml", i), b)
	}
	procs["init"].signal(t, syscall.SIGKILL)
	for i, b := range jobs[len(jobs)/2:] {
		submit(t, sp, fmt.Sprintf("b%02d.yaml", i), b)
	}
	procs["init"] = startDaemon(t, sp, "init", logf)

	// run dies with jobs running; one of their shepherds dies too.
	waitLong(t, sp)
	for _, n := range []string{"sched", "reaper", "stats"} {
		procs[n].signal(t, syscall.SIGKILL)
		procs[n] = startDaemon(t, sp, n, logf)
	}
	waitLong(t, sp)
	running := runningJobs(sp)
	procs["run"].signal(t, syscall.SIGKILL)
	runStopped := time.Now()
	lost := ""
	for name, j := range running {
		if !alive(j.Run.PGID) && !alive(j.Run.PID) {
			// It may simply have ended; only a long job must be alive.
			if strings.HasPrefix(j.Name, "long-") {
				t.Errorf("%s: job and shepherd gone right after run was killed", name)
			}
			delete(running, name)
			continue
		}
		if lost == "" && strings.HasPrefix(j.Name, "long-") {
			lost = name
			if err := syscall.Kill(j.Run.PID, syscall.SIGKILL); err != nil {
				t.Fatalf("killing the shepherd of %s: %v", name, err)
			}
		}
	}
	if lost == "" {
		t.Fatal("no long job running when run was killed")
	}
	time.Sleep(200 * time.Millisecond)
	procs["run"] = startDaemon(t, sp, "run", logf)
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	waitReports(t, sp, len(jobs), 60*time.Second)
	for _, n := range daemonNames {
		procs[n].signal(t, syscall.SIGTERM)
	}
	checkRestartOutcome(t, sp, len(jobs), running, lost, runStopped, true)
}

// TestRestart_ContextCancel stops each daemon by cancelling its context
// (a clean stop, as SIGTERM does) in the middle of a run and starts it
// again, each daemon in its own system in this process.
func TestRestart_ContextCancel(t *testing.T) {
	sp, hosts := testSpool(t, 4)
	cfg := testConfig(t, sp)
	log, _ := logFile(t, "daemons")
	ds := map[string]*inProcess{}
	start := func(n string) { ds[n] = startInProcess(t, cfg, hosts, log.With("process", n), n) }
	for _, n := range daemonNames {
		start(n)
	}
	defer func() {
		for _, d := range ds {
			d.cancel()
		}
		for _, d := range ds {
			<-d.done
		}
	}()
	release := filepath.Join(t.TempDir(), "release")
	releaseOnCleanup(t, release)
	jobs := restartJobs(release)
	for i, b := range jobs {
		submit(t, sp, fmt.Sprintf("j%02d.yaml", i), b)
	}
	ds["init"].stop(t)
	start("init")
	waitLong(t, sp)
	for _, n := range []string{"sched", "reaper", "stats"} {
		ds[n].stop(t)
		start(n)
	}
	waitLong(t, sp)
	running := runningJobs(sp)
	runStopped := time.Now()
	ds["run"].stop(t)
	for name, j := range running {
		if strings.HasPrefix(j.Name, "long-") && !alive(j.Run.PGID) {
			t.Errorf("%s: job gone right after run stopped", name)
		}
	}
	time.Sleep(200 * time.Millisecond)
	start("run")
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitReports(t, sp, len(jobs), 60*time.Second)
	for _, n := range daemonNames {
		ds[n].stop(t)
	}
	checkRestartOutcome(t, sp, len(jobs), running, "", runStopped, false)
}
