package launch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// waitBound bounds every wait in these tests.
const waitBound = 20 * time.Second

func newSpec(t *testing.T, argv ...string) Spec {
	t.Helper()
	dir := t.TempDir()
	return Spec{
		JID: "j1", Argv: argv, Dir: dir, Hosts: []string{"h0"},
		Stdout: filepath.Join(dir, "out"), Stderr: filepath.Join(dir, "err"),
		ResultPath: filepath.Join(dir, "j1.result"), PidPath: filepath.Join(dir, "j1.pid"),
		KillGrace: 200 * time.Millisecond,
	}
}

func run(t *testing.T, spec Spec) Result {
	t.Helper()
	h, err := testLocal(t).Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return wait(t, h)
}

func wait(t *testing.T, h Handle) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	res, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// eventually polls cond until it holds or waitBound passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gone reports whether pid no longer runs; a zombie counts as gone, since
// in a container nobody may reap an orphan.
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i+2 < len(b) && b[i+2] == 'Z'
}

// killShepherdAndAdopt kills the job's shepherd with SIGKILL, as a crash
// would, and requires the job lost to its Handle and Gone to Adopt, which
// kills what is left of it.
func killShepherdAndAdopt(t *testing.T, h Handle, spec Spec) {
	t.Helper()
	syscall.Kill(h.Pid(), syscall.SIGKILL)
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	if _, err := h.Wait(ctx); !errors.Is(err, ErrLost) {
		t.Fatalf("Wait: %v, want ErrLost", err)
	}
	if a, err := Adopt(spec.PidPath, spec.ResultPath); err != nil || a.State != Gone {
		t.Fatalf("Adopt: %v %v, want gone", a.State, err)
	}
}

// gated is the argv of a job that waits for the file gate (openGate), then
// runs the shell command then. It must still be running when the test looks
// (an Adopt), however slow the machine: a job that merely sleeps may have
// ended by then. The wait is bounded (600 rounds of 50 ms, 30 s or more) so
// that the job ends even if the test fails first, and a job that ends by the
// bound exits 99 instead of running then.
func gated(gate, then string) []string {
	return []string{"sh", "-c",
		`i=0; while [ ! -e "$1" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; [ -e "$1" ] || exit 99; ` + then,
		"job", gate}
}

// newGate names a gate file in dir for gated, which the job must be able to
// see (dir searchable by the job's user). When the test ends the gate is
// opened, so that a job whose test failed before openGate ends too.
func newGate(t *testing.T, dir string) string {
	t.Helper()
	gate := filepath.Join(dir, "gate")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o644) })
	return gate
}

// openGate creates gate, letting a gated job go on.
func openGate(t *testing.T, gate string) {
	t.Helper()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	eventually(t, "pid in "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

func TestLocal_ExitStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		argv   []string
		status int
		signal string
		reason string
	}{
		{"zero", []string{"true"}, 0, "", ""},
		{"nonzero", []string{"sh", "-c", "exit 3"}, 3, "", "exit status 3"},
		{"signal", []string{"sh", "-c", "kill -USR1 $$"}, -1, "SIGUSR1", "killed by SIGUSR1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, newSpec(t, tc.argv...))
			if res.ExitStatus != tc.status || res.Signal != tc.signal || res.Reason != tc.reason || res.StartError {
				t.Fatalf("got %+v, want status %d signal %q reason %q", res, tc.status, tc.signal, tc.reason)
			}
			if res.OK() != (tc.status == 0) {
				t.Errorf("OK() = %v", res.OK())
			}
			if res.StartedAt.IsZero() || res.EndedAt.Before(res.StartedAt) {
				t.Errorf("bad times %v .. %v", res.StartedAt, res.EndedAt)
			}
		})
	}
}

func TestLocal_Walltime(t *testing.T) {
	// The upper bounds are generous (a loaded machine may be slow to run
	// the shepherd); a job the walltime did not end would run for minutes.
	t.Run("term", func(t *testing.T) {
		spec := newSpec(t, "sleep", "300")
		spec.Walltime = time.Second
		begin := time.Now()
		res := run(t, spec)
		if res.Reason != "walltime exceeded" || res.Signal != "SIGTERM" || res.ExitStatus != -1 {
			t.Fatalf("got %+v", res)
		}
		if d := time.Since(begin); d < time.Second || d > waitBound {
			t.Errorf("took %v for a 1 s walltime", d)
		}
	})
	t.Run("kill after grace", func(t *testing.T) {
		// The job ignores SIGTERM (and sleep inherits that): only the
		// SIGKILL after the grace period ends it.
		spec := newSpec(t, "sh", "-c", `trap "" TERM; sleep 300`)
		spec.Walltime = 300 * time.Millisecond
		begin := time.Now()
		res := run(t, spec)
		if res.Reason != "walltime exceeded" || res.Signal != "SIGKILL" {
			t.Fatalf("got %+v", res)
		}
		if d := time.Since(begin); d < 500*time.Millisecond || d > waitBound {
			t.Errorf("took %v for 300 ms walltime + 200 ms grace", d)
		}
	})
}

func TestLocal_CancelKillsProcessGroup(t *testing.T) {
	for _, tc := range []struct{ name, script, signal string }{
		{"term", `sleep 30 & echo $! > child; wait`, "SIGTERM"},
		{"child ignores term", `trap "" TERM; sleep 30 & echo $! > child; wait`, "SIGKILL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := newSpec(t, "sh", "-c", tc.script)
			h, err := testLocal(t).Start(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			child := readPid(t, filepath.Join(spec.Dir, "child"))
			if err := h.Cancel(); err != nil {
				t.Fatal(err)
			}
			res := wait(t, h)
			if res.Reason != "cancelled" || res.Signal != tc.signal || res.StartError {
				t.Fatalf("got %+v", res)
			}
			if !gone(child) {
				t.Errorf("child %d of the cancelled job still runs", child)
				syscall.Kill(child, syscall.SIGKILL)
			}
			if err := h.Cancel(); err != nil {
				t.Errorf("Cancel after the end: %v", err)
			}
		})
	}
}

func TestLocal_LeftoversKilledWhenLeaderExits(t *testing.T) {
	spec := newSpec(t, "sh", "-c", `sleep 30 & echo $! > child`)
	res := run(t, spec)
	if !res.OK() {
		t.Fatalf("got %+v", res)
	}
	child := readPid(t, filepath.Join(spec.Dir, "child"))
	eventually(t, "background child killed", func() bool { return gone(child) })
}

func TestLocal_CancelRightAfterStart(t *testing.T) {
	// Whether the SIGTERM reaches the shepherd before or after it starts
	// the job, the outcome is a cancel, never a lost job.
	for i := 0; i < 5; i++ {
		spec := newSpec(t, "sleep", "30")
		h, err := testLocal(t).Start(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		h.Cancel()
		res := wait(t, h)
		if res.Reason != "cancelled" || res.StartError {
			t.Fatalf("got %+v", res)
		}
	}
}

func TestLocal_StartContextDoesNotCancel(t *testing.T) {
	spec := newSpec(t, "sleep", "0.3")
	ctx, cancel := context.WithCancel(context.Background())
	h, err := testLocal(t).Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if res := wait(t, h); !res.OK() {
		t.Fatalf("job ended by the Start context: %+v", res)
	}
}

func TestLocal_CannotStart(t *testing.T) {
	noexec := filepath.Join(t.TempDir(), "noexec")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// permanent: no attempt could start it (the program, argv's size);
	// the others another attempt may cure.
	for _, tc := range []struct {
		name      string
		mutate    func(*Spec)
		reason    string
		permanent bool
	}{
		{"missing executable", func(s *Spec) { s.Argv = []string{"no-such-program-xyz"} },
			`cannot start: exec: "no-such-program-xyz": executable file not found in $PATH`, true},
		{"missing path", func(s *Spec) { s.Argv = []string{"/no/such/program"} },
			"cannot start: fork/exec /no/such/program: no such file or directory", true},
		{"missing workdir", func(s *Spec) { s.Dir = "/nonexistent/dir" },
			"cannot start: workdir /nonexistent/dir: no such file or directory", false},
		{"not executable", func(s *Spec) { s.Argv = []string{noexec} }, "permission denied", true},
		{"argument list too long", func(s *Spec) { s.Argv = []string{"true", strings.Repeat("x", 130<<10)} },
			"argument list too long", true},
		{"empty argv", func(s *Spec) { s.Argv = nil }, "cannot start: empty argv", true},
		{"output dir missing", func(s *Spec) { s.Stdout = "/nonexistent/out" },
			"cannot start: stdout /nonexistent/out: no such file or directory", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := newSpec(t, "true")
			tc.mutate(&spec)
			res := run(t, spec)
			if !res.StartError || res.ExitStatus != -1 || !strings.Contains(res.Reason, tc.reason) {
				t.Fatalf("got %+v, want start_error with %q", res, tc.reason)
			}
			if res.Permanent != tc.permanent {
				t.Errorf("permanent = %v, want %v (%s)", res.Permanent, tc.permanent, res.Reason)
			}
			if !res.StartedAt.IsZero() {
				t.Errorf("started_at set for a job that never started")
			}
		})
	}
}

func TestLocal_Output(t *testing.T) {
	spec := newSpec(t, "sh", "-c", "echo out; echo err >&2")
	spec.Stdout, spec.Stderr = "o.txt", "e.txt" // relative to Dir
	run(t, spec)
	run(t, spec) // appends
	if got := readFile(t, filepath.Join(spec.Dir, "o.txt")); got != "out\nout\n" {
		t.Errorf("stdout %q", got)
	}
	if got := readFile(t, filepath.Join(spec.Dir, "e.txt")); got != "err\nerr\n" {
		t.Errorf("stderr %q", got)
	}
	spec.Stderr = spec.Stdout
	spec.Argv = []string{"sh", "-c", "echo a; echo b >&2; echo c"}
	os.Remove(filepath.Join(spec.Dir, "o.txt"))
	run(t, spec)
	if got := readFile(t, filepath.Join(spec.Dir, "o.txt")); got != "a\nb\nc\n" {
		t.Errorf("shared stdout/stderr %q", got)
	}
}

func TestLocal_EnvAndHostfile(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "myprog"), []byte(`#!/bin/sh
echo "$MSCHED_JID|$MSCHED_HOSTS|$MSCHED_NHOSTS|$FOO"
cat "$MSCHED_HOSTFILE"
echo "$MSCHED_HOSTFILE"
`), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := newSpec(t, "myprog") // found only through the job's own PATH
	spec.Hosts = []string{"a/cpu0", "a/cpu1", "b"}
	spec.Env = []string{"FOO=bar", "PATH=" + bin + ":/usr/bin:/bin", "MSCHED_JID=spoofed"}
	if res := run(t, spec); !res.OK() {
		t.Fatalf("got %+v", res)
	}
	hostfile := filepath.Join(spec.Dir, "j1.hosts")
	want := "j1|a/cpu0,a/cpu1,b|3|bar\na/cpu0\na/cpu1\nb\n" + hostfile + "\n"
	if got := readFile(t, spec.Stdout); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// A co-allocated job learns its components from its environment and its
// host file, and Env cannot forge them.
func TestLocal_Components(t *testing.T) {
	spec := newSpec(t, "sh", "-c", `echo "$MSCHED_COMPONENTS|$MSCHED_CLUSTERS|$MSCHED_NHOSTS"; cat "$MSCHED_HOSTFILE"`)
	spec.Hosts = []string{"a/cpu0", "a/cpu1", "c/cpu0", "b/cpu3"}
	spec.Components = []Component{{Cluster: "a", Hosts: 2}, {Cluster: "c", Hosts: 1}, {Cluster: "b", Hosts: 1}}
	spec.Env = []string{"MSCHED_CLUSTERS=x"}
	if res := run(t, spec); !res.OK() {
		t.Fatalf("got %+v", res)
	}
	want := "2,1,1|a,c,b|4\n" +
		"a/cpu0 # cluster=a component=1\na/cpu1 # cluster=a component=1\n" +
		"c/cpu0 # cluster=c component=2\nb/cpu3 # cluster=b component=3\n"
	if got := readFile(t, spec.Stdout); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestLocal_Busy(t *testing.T) {
	spec := newSpec(t, "sleep", "30")
	h, err := testLocal(t).Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { h.Cancel(); wait(t, h) }()
	if _, err := testLocal(t).Start(context.Background(), spec); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Start on a live pid file: %v, want ErrBusy", err)
	}
}

func TestLocal_ShepherdInOwnSession(t *testing.T) {
	spec := newSpec(t, "sleep", "30")
	h, err := testLocal(t).Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { h.Cancel(); wait(t, h) }()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(h.Pid()) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if f[3] != strconv.Itoa(h.Pid()) { // field 6: session
		t.Errorf("shepherd %d is in session %s, want its own", h.Pid(), f[3])
	}
}

func TestAdopt_AfterHandleDropped(t *testing.T) {
	gate := newGate(t, t.TempDir())
	spec := newSpec(t, gated(gate, "exit 4")...)
	if _, err := testLocal(t).Start(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	a, err := Adopt(spec.PidPath, spec.ResultPath)
	if err != nil || a.State != Running {
		t.Fatalf("Adopt: %v %v, want running", a.State, err)
	}
	openGate(t, gate)
	res := wait(t, a.Handle)
	if res.ExitStatus != 4 {
		t.Fatalf("got %+v", res)
	}
	a, err = Adopt(spec.PidPath, spec.ResultPath)
	if err != nil || a.State != Finished || a.Result.ExitStatus != 4 {
		t.Fatalf("Adopt after the end: %+v %v", a, err)
	}
}

// TestAdopt_AfterDaemonKilled kills -9 a process that started a shepherd, as
// when the run daemon crashes, and checks the job survives and is adopted.
func TestAdopt_AfterDaemonKilled(t *testing.T) {
	gate := newGate(t, t.TempDir())
	spec := newSpec(t, gated(gate, "echo done")...)
	spec, _ = spec.normalize()
	data, _ := json.Marshal(spec)
	exe, _ := os.Executable()
	daemon := exec.Command(exe, daemonArg)
	daemon.Stdin = strings.NewReader(string(data))
	daemon.Stderr = os.Stderr
	out, err := daemon.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		daemon.Process.Kill()
		t.Fatalf("fake daemon: %v", err)
	}
	daemon.Process.Kill()
	daemon.Wait()
	a, err := Adopt(spec.PidPath, spec.ResultPath)
	if err != nil || a.State != Running {
		t.Fatalf("Adopt: %v %v, want running", a.State, err)
	}
	if got := strconv.Itoa(a.Handle.Pid()); got+"\n" != line {
		t.Errorf("adopted shepherd pid %s, daemon started %s", got, line)
	}
	// Only now, the daemon killed and reaped and the job adopted while it
	// runs, may it end.
	openGate(t, gate)
	if res := wait(t, a.Handle); !res.OK() {
		t.Fatalf("got %+v", res)
	}
	if got := readFile(t, spec.Stdout); got != "done\n" {
		t.Errorf("stdout %q", got)
	}
}

func TestAdopt_CancelAdopted(t *testing.T) {
	spec := newSpec(t, "sleep", "300")
	if _, err := testLocal(t).Start(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	// The job must have started, or the cancel stops the shepherd before
	// it starts it (a cancel too, but no SIGTERM to a job).
	eventually(t, "pid file names the job", func() bool {
		rec, err := ReadPidFile(spec.PidPath)
		return err == nil && rec.Pgid != 0
	})
	a, err := Adopt(spec.PidPath, spec.ResultPath)
	if err != nil || a.State != Running {
		t.Fatalf("Adopt: %v %v", a.State, err)
	}
	if err := a.Handle.Cancel(); err != nil {
		t.Fatal(err)
	}
	if res := wait(t, a.Handle); res.Reason != "cancelled" || res.Signal != "SIGTERM" {
		t.Fatalf("got %+v", res)
	}
}

// TestAdopt_ShepherdKilled: the shepherd dies without a result. The job
// (leader and child) must die with it, Wait reports ErrLost and Adopt Gone.
func TestAdopt_ShepherdKilled(t *testing.T) {
	spec := newSpec(t, "sh", "-c", `sleep 30 & echo $! > child; wait`)
	h, err := testLocal(t).Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	child := readPid(t, filepath.Join(spec.Dir, "child"))
	var rec PidFile
	eventually(t, "pid file names the job", func() bool {
		rec, err = ReadPidFile(spec.PidPath)
		return err == nil && rec.Pgid != 0
	})
	killShepherdAndAdopt(t, h, spec)
	eventually(t, "job gone", func() bool { return gone(rec.Pgid) && gone(child) })
}

// A process that left the job's process group (setsid) is killed when the
// shepherd was killed too: it is found by the environment it started with.
func TestAdopt_ShepherdKilledEscapedProcess(t *testing.T) {
	spec := newSpec(t, "sh", "-c", `setsid sh -c 'echo $$ > esc.new; mv esc.new esc; exec sleep 1000' & wait`)
	h, err := testLocal(t).Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	esc := readPid(t, filepath.Join(spec.Dir, "esc"))
	t.Cleanup(func() { syscall.Kill(esc, syscall.SIGKILL) })
	var rec PidFile
	eventually(t, "pid file names the job", func() bool {
		rec, err = ReadPidFile(spec.PidPath)
		return err == nil && rec.Pgid != 0
	})
	if want := "MSCHED_HOSTFILE=" + filepath.Join(spec.Dir, "j1.hosts"); rec.EnvMark != want {
		t.Errorf("EnvMark %q, want %q", rec.EnvMark, want)
	}
	killShepherdAndAdopt(t, h, spec)
	// Killed, if not yet dead: its environment may read empty before it
	// is a zombie, and Adopt stops looking then.
	eventually(t, "the escaped process killed by Adopt", func() bool { return gone(esc) })
}

// TestAdopt_PidReuse: a pid file whose pids now belong to another process
// (same pid, other start time) must not make that process look like our
// shepherd or job, nor get it killed; with the true start time, it is ours
// and is killed.
func TestAdopt_PidReuse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		skew  uint64
		alive bool
	}{{"reused pid", 1, true}, {"our job", 0, false}} {
		t.Run(tc.name, func(t *testing.T) {
			other := exec.Command("sleep", "30")
			other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := other.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { other.Wait(); close(done) }()
			defer func() { other.Process.Kill(); <-done }()
			start, err := procStartTime(other.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			pidPath := filepath.Join(dir, "j.pid")
			rec := PidFile{BootID: bootID(), Shepherd: other.Process.Pid, ShepherdStart: start + tc.skew,
				Pgid: other.Process.Pid, JobStart: start + tc.skew}
			data, _ := json.Marshal(rec)
			os.WriteFile(pidPath, data, 0o644)
			a, err := Adopt(pidPath, filepath.Join(dir, "j.result"))
			if err != nil || a.State != Gone {
				t.Fatalf("Adopt: %v %v, want gone", a.State, err)
			}
			// A kill shows within waitBound even on a loaded machine; no
			// kill is judged after 300 ms, room for one that should not come.
			wait := waitBound
			if tc.alive {
				wait = 300 * time.Millisecond
			}
			select {
			case <-done:
				if tc.alive {
					t.Fatal("an unrelated process with a reused pid was killed")
				}
			case <-time.After(wait):
				if !tc.alive {
					t.Fatal("the job's leftover process was not killed")
				}
			}
		})
	}
}

func TestAdopt_NothingThere(t *testing.T) {
	dir := t.TempDir()
	a, err := Adopt(filepath.Join(dir, "x.pid"), filepath.Join(dir, "x.result"))
	if err != nil || a.State != Gone {
		t.Fatalf("got %v %v", a.State, err)
	}
}

func TestParseStat(t *testing.T) {
	// The command name may hold spaces and parentheses.
	line := "4644 (a (b) c) S 4641 4640 3876 0 -1 4194304 101 0 0 0 0 0 0 0 20 0 1 0 27645 3133440 415 18446744073709551615\n"
	got, err := parseStat([]byte(line))
	if want := (procStat{state: 'S', ppid: 4641, pgrp: 4640, start: 27645}); err != nil || got != want {
		t.Fatalf("got %+v %v, want %+v", got, err, want)
	}
	if _, err := parseStat([]byte("12 (x) S 1 2")); err == nil {
		t.Fatal("short line accepted")
	}
}

// BenchmarkLocal_True starts `true` through a shepherd and waits for its
// Result: the whole per-job cost of the launcher, one job at a time.
func BenchmarkLocal_True(b *testing.B) {
	dir := b.TempDir()
	l := testLocal(b)
	i := 0
	for b.Loop() {
		i++
		runTrue(b, l, dir, "b"+strconv.Itoa(i))
	}
}

// BenchmarkLocal_TrueParallel runs several jobs at once, as the run daemon
// does; jobs/s is the launcher's throughput on this machine.
func BenchmarkLocal_TrueParallel(b *testing.B) {
	dir := b.TempDir()
	l := testLocal(b)
	var n atomic.Int64
	b.SetParallelism(4)
	begin := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			runTrue(b, l, dir, "p"+strconv.FormatInt(n.Add(1), 10))
		}
	})
	b.ReportMetric(float64(n.Load())/time.Since(begin).Seconds(), "jobs/s")
}

func runTrue(b *testing.B, l Local, dir, jid string) {
	spec := Spec{JID: jid, Argv: []string{"true"}, Dir: dir, Hosts: []string{"h0"},
		ResultPath: filepath.Join(dir, jid+".result"), PidPath: filepath.Join(dir, jid+".pid")}
	h, err := l.Start(context.Background(), spec)
	if err != nil {
		b.Fatal(err)
	}
	res, err := h.Wait(context.Background())
	if err != nil || !res.OK() {
		b.Fatal(res, err)
	}
}

// The shepherd tells Local's handle when the job has started, with the
// record the pid file holds, so the daemon need not poll; and the job does
// not keep the notice pipe open (it would hold the reader until the job's
// end). A job that never starts closes the channel without a record.
func TestLocal_StartedNotice(t *testing.T) {
	spec := newSpec(t, "sh", "-c", "ls -l /proc/$$/fd; sleep 30")
	h, err := testLocal(t).Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	sn, ok := h.(StartNotifier)
	if !ok {
		t.Fatal("Local's handle is not a StartNotifier")
	}
	select {
	case rec, ok := <-sn.Started():
		if !ok || rec.Pgid == 0 || rec.Shepherd != h.Pid() {
			t.Fatalf("start notice %+v (ok %v), want the job's pgid and shepherd %d", rec, ok, h.Pid())
		}
		if _, more := <-sn.Started(); more {
			t.Error("second notice")
		}
		onDisk, err := ReadPidFile(spec.PidPath)
		if err != nil || onDisk.Pgid != rec.Pgid {
			t.Errorf("pid file %+v (%v), notice %+v", onDisk, err, rec)
		}
	case <-time.After(waitBound):
		t.Fatal("no start notice while the job runs")
	}
	var fds string
	for deadline := time.Now().Add(waitBound); fds == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		fds = readFile(t, spec.Stdout)
	}
	h.Cancel()
	wait(t, h)
	if fds == "" {
		t.Fatal("the job listed no descriptors")
	}
	if strings.Contains(fds, " 4 -> pipe:") {
		t.Errorf("the job inherited the notice pipe (descriptor 4):\n%s", fds)
	}

	spec = newSpec(t, "no-such-program-xyz")
	h, err = testLocal(t).Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case rec, ok := <-h.(StartNotifier).Started():
		if ok {
			t.Errorf("notice %+v for a job that never started", rec)
		}
	case <-time.After(waitBound):
		t.Fatal("the notice channel stayed open for a job that never started")
	}
	if res := wait(t, h); !res.StartError {
		t.Errorf("got %+v, want a start error", res)
	}
}

// A result staging file placed by the daemon becomes the result file (the
// shepherd creates no inode of its own); without one the shepherd makes a
// temporary as before.
func TestLocal_ResultStaging(t *testing.T) {
	spec := newSpec(t, "true")
	spec.ResultStaging = filepath.Join(filepath.Dir(spec.ResultPath), ".j1.result.staging")
	if err := os.WriteFile(spec.ResultStaging, []byte("old content, longer than a result would be ........................................................................................................................................................................................................................................................"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(spec.ResultStaging)
	staged := fi.Sys().(*syscall.Stat_t).Ino
	if res := run(t, spec); !res.OK() {
		t.Fatalf("got %+v", res)
	}
	fi, err := os.Stat(spec.ResultPath)
	if err != nil || fi.Sys().(*syscall.Stat_t).Ino != staged || fi.Mode().Perm() != 0o644 {
		t.Errorf("result %v (%v): want the staging file's inode, mode 0644", fi, err)
	}
	if _, err := os.Lstat(spec.ResultStaging); !os.IsNotExist(err) {
		t.Errorf("staging file still there: %v", err)
	}
	if res, ok, err := readResult(spec.ResultPath); !ok || err != nil || !res.OK() {
		t.Errorf("result reads back as %+v, %v, %v", res, ok, err)
	}

	spec = newSpec(t, "true")
	spec.ResultStaging = filepath.Join(filepath.Dir(spec.ResultPath), ".missing.staging")
	if res := run(t, spec); !res.OK() {
		t.Fatalf("without the staging file: %+v", res)
	}
}
