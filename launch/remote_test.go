package launch

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests run jobs through a real sshd (testSSHD) on 127.0.0.2 to
// 127.0.0.5, which stand for remote hosts; the remote side is this machine,
// so a test can look at the "remote" processes and files directly.

// An ssh job runs as its user on the first host: the login's environment
// (HOME, SSH_CONNECTION) under the job's env and msched's variables, the
// host file on the remote host (removed at the end), stdout and stderr in
// the local files, opened as the user, without the protocol's markers.
func TestSSH_RunsAsUser(t *testing.T) {
	s := testSSHD(t)
	id := testUser(t)
	s.authorize(t, id)
	t.Setenv("MSCHED_TEST_LEAK", "from the test process")
	t.Setenv("LANG", "C.leak") // ssh sends LANG (Debian's SendEnv) if it has it
	spec := s.sshSpec(t, id, 2, "sh", "-c", `id -un; echo "$SSH_CONNECTION"; pwd; cat "$MSCHED_HOSTFILE"
readlink /proc/$$/fd/0; read -r pid comm state ppid pgrp sid rest < /proc/$$/stat; echo "$pid $pgrp $sid"
echo ---; env; echo to stderr >&2`)
	spec.Env = []string{"FOO=a b", "MSCHED_JID=spoofed"}
	begin := time.Now()
	res := run(t, spec)
	t.Logf("ssh job took %v", time.Since(begin).Round(time.Millisecond))
	if !res.OK() {
		t.Fatalf("got %+v; stderr %q", res, readFile(t, spec.Stderr))
	}
	out := readFile(t, spec.Stdout)
	head, envText, _ := strings.Cut(out, "---\n")
	lines := strings.Split(strings.TrimSpace(head), "\n")
	if len(lines) != 7 {
		t.Fatalf("stdout %q", out)
	}
	if lines[5] != "/dev/null" {
		t.Errorf("the job's stdin is %q, want /dev/null", lines[5])
	}
	if f := strings.Fields(lines[6]); len(f) != 3 || f[1] != f[0] || f[2] != f[0] {
		t.Errorf("pid, process group, session: %q; want the job to lead its own group and session", lines[6])
	}
	if lines[0] != id.User {
		t.Errorf("id -un = %q, want %q", lines[0], id.User)
	}
	if f := strings.Fields(lines[1]); len(f) != 4 || f[2] != "127.0.0.2" || f[3] != strconv.Itoa(s.port) {
		t.Errorf("SSH_CONNECTION %q, want the server 127.0.0.2 %d", lines[1], s.port)
	}
	if lines[2] != spec.Dir {
		t.Errorf("pwd %q, want %q", lines[2], spec.Dir)
	}
	if lines[3] != "127.0.0.2" || lines[4] != "127.0.0.3" {
		t.Errorf("host file %q", lines[3:])
	}
	env := envOf(t, envText)
	for k, want := range map[string]string{"FOO": "a b", "MSCHED_JID": "j1", "MSCHED_HOSTS": "127.0.0.2,127.0.0.3",
		"MSCHED_NHOSTS": "2", "HOME": id.Home, "USER": id.User} {
		if env[k] != want {
			t.Errorf("%s=%q, want %q", k, env[k], want)
		}
	}
	for _, k := range []string{"MSCHED_TEST_LEAK", "LANG"} {
		if v, ok := env[k]; ok {
			t.Errorf("%s=%q reached the remote job", k, v)
		}
	}
	if hf := env["MSCHED_HOSTFILE"]; !strings.HasPrefix(hf, "/tmp/msched.") {
		t.Errorf("MSCHED_HOSTFILE=%q", hf)
	} else if _, err := os.Stat(hf); !os.IsNotExist(err) {
		t.Errorf("remote host file %s left behind: %v", hf, err)
	}
	if got := readFile(t, spec.Stderr); got != "to stderr\n" {
		t.Errorf("stderr %q", got)
	}
	fi, _ := os.Stat(spec.Stdout)
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != id.UID {
		t.Errorf("stdout owned by uid %d, want the user's %d", st.Uid, id.UID)
	}
}

func TestSSH_ExitStatus(t *testing.T) {
	s := testSSHD(t)
	id := testUser(t)
	s.authorize(t, id)
	for _, tc := range []struct {
		name   string
		script string
		status int
		signal string
		reason string
	}{
		{"zero", "true", 0, "", ""},
		{"three", "exit 3", 3, "", "exit status 3"},
		{"255", "exit 255", 255, "", "exit status 255"}, // ssh's own failure status, but the job's here
		{"signal", "kill -USR1 $$", -1, "SIGUSR1", "killed by SIGUSR1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, s.sshSpec(t, id, 1, "sh", "-c", tc.script))
			if res.ExitStatus != tc.status || res.Signal != tc.signal || res.Reason != tc.reason || res.StartError || res.Unreachable != "" {
				t.Fatalf("got %+v, want status %d signal %q reason %q", res, tc.status, tc.signal, tc.reason)
			}
		})
	}
}

// ssh failing to reach the host is a start error naming the host, with
// Unreachable set; a login refused to one user is not the host's fault.
func TestSSH_Unreachable(t *testing.T) {
	s := testSSHD(t)
	id := testUser(t)
	s.authorize(t, id)
	other := testUser(t) // msched's key is not authorized for it
	closedPort, err := freePort("127.0.0.2")
	if err != nil {
		t.Fatal(err)
	}
	wrongKnown := filepath.Join(t.TempDir(), "known_hosts")
	if out, err := exec.Command("/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", wrongKnown+".key").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	pub, _ := os.ReadFile(wrongKnown + ".key.pub")
	os.WriteFile(wrongKnown, []byte(fmt.Sprintf("[127.0.0.2]:%d %s", s.port, pub)), 0o644)

	for _, tc := range []struct {
		name        string
		id          *Identity
		mutate      func(*Spec)
		reason      string
		unreachable string
	}{
		{"connection refused", id, func(sp *Spec) { sp.SSH.Dest[0].Port = closedPort; sp.Hosts[0] = "node1" },
			"cannot start: ssh to node1 (" + id.User + "@127.0.0.2 port " + strconv.Itoa(closedPort) + "): ssh: connect to host 127.0.0.2 port " + strconv.Itoa(closedPort) + ": Connection refused",
			"node1"},
		{"host key refused", id, func(sp *Spec) {
			c := s.config()
			c.KnownHostsFile = wrongKnown
			sp.SSH = c.Spec(s.dest(1))
		}, "Host key verification failed", "127.0.0.2"},
		{"user not authorized", other, func(*Spec) {}, "Permission denied (publickey)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := s.sshSpec(t, tc.id, 1, "sh", "-c", "echo ran")
			tc.mutate(&spec)
			res := run(t, spec)
			if !res.StartError || !strings.Contains(res.Reason, tc.reason) || res.Unreachable != tc.unreachable {
				t.Fatalf("got %+v\nwant a start error with %q, unreachable %q", res, tc.reason, tc.unreachable)
			}
			if got := readFile(t, spec.Stdout) + readFile(t, spec.Stderr); got != "" {
				t.Errorf("output %q, want none (ssh's message is in the reason)", got)
			}
		})
	}
}

// The remote side's own start errors are start errors, not unreachable
// hosts: a missing working directory, a missing program, a user whose
// login shell runs nothing.
func TestSSH_CannotStartRemote(t *testing.T) {
	s := testSSHD(t)
	id := testUser(t)
	s.authorize(t, id)
	nologin := testUser(t)
	s.authorize(t, nologin)
	if out, err := exec.Command("/usr/sbin/usermod", "-s", "/usr/sbin/nologin", nologin.User).CombinedOutput(); err != nil {
		t.Fatalf("usermod: %v: %s", err, out)
	}
	for _, tc := range []struct {
		name   string
		id     *Identity
		mutate func(*Spec)
		reason string
	}{
		{"workdir", id, func(sp *Spec) { sp.Dir = "/nonexistent/dir" }, "workdir /nonexistent/dir: no such directory"},
		{"program", id, func(sp *Spec) { sp.Argv = []string{"no-such-program-xyz"} }, "command not found: no-such-program-xyz"},
		{"nologin", nologin, func(*Spec) {}, "did not run the job"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := s.sshSpec(t, tc.id, 1, "true")
			tc.mutate(&spec)
			res := run(t, spec)
			if !res.StartError || !strings.Contains(res.Reason, tc.reason) || res.Unreachable != "" {
				t.Fatalf("got %+v, want a start error with %q", res, tc.reason)
			}
		})
	}
}

// remoteScript records the job's leader and a background child in its
// working directory, then waits; trap "" TERM makes both ignore SIGTERM.
func remoteScript(ignoreTerm bool) string {
	s := `echo $$ > leader.tmp; mv leader.tmp leader; sleep 30 & echo $! > child.tmp; mv child.tmp child; wait`
	if ignoreTerm {
		s = `trap "" TERM; ` + s
	}
	return s
}

// remotePids waits for the pids the remote job wrote (the remote host is
// this machine, its files are ours too).
func remotePids(t *testing.T, dir string) (leader, child int) {
	t.Helper()
	return readPid(t, filepath.Join(dir, "leader")), readPid(t, filepath.Join(dir, "child"))
}

func checkGone(t *testing.T, pids ...int) {
	t.Helper()
	eventually(t, fmt.Sprintf("remote processes %v gone", pids), func() bool {
		for _, p := range pids {
			if !gone(p) {
				return false
			}
		}
		return true
	})
}

// Cancel and walltime reach the job's process group on the remote host:
// SIGTERM, then SIGKILL after the grace.
func TestSSH_CancelAndWalltime(t *testing.T) {
	s := testSSHD(t)
	id := testUser(t)
	s.authorize(t, id)
	for _, tc := range []struct {
		name       string
		ignoreTerm bool
		walltime   time.Duration
		reason     string
		signal     string
	}{
		{"cancel", false, 0, "cancelled", "SIGTERM"},
		{"cancel, TERM ignored", true, 0, "cancelled", "SIGKILL"},
		// 5 s: the job must have written its pids (remotePids) before the
		// walltime ends it, after an ssh login that a loaded machine slows.
		{"walltime", false, 5 * time.Second, "walltime exceeded", "SIGTERM"},
		{"walltime, TERM ignored", true, 5 * time.Second, "walltime exceeded", "SIGKILL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := s.sshSpec(t, id, 1, "sh", "-c", remoteScript(tc.ignoreTerm))
			spec.Walltime = tc.walltime
			spec.KillGrace = 500 * time.Millisecond
			begin := time.Now()
			h, err := testLocal(t).Start(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			leader, child := remotePids(t, spec.Dir)
			if tc.walltime == 0 {
				if err := h.Cancel(); err != nil {
					t.Fatal(err)
				}
			}
			res := wait(t, h)
			t.Logf("ended after %v", time.Since(begin).Round(time.Millisecond))
			if res.Reason != tc.reason || res.Signal != tc.signal || res.StartError || res.StartedAt.IsZero() {
				t.Fatalf("got %+v, want %q by %s", res, tc.reason, tc.signal)
			}
			checkGone(t, leader, child)
		})
	}
}

// kill -9 of the shepherd kills ssh (Pdeathsig), and the remote wrapper,
// seeing its stdin end, kills the job: SIGTERM, then SIGKILL after the
// grace for a job that ignores SIGTERM. Adopt then finds the job Gone.
func TestSSH_ShepherdKilled(t *testing.T) {
	s := testSSHD(t)
	id := testUser(t)
	s.authorize(t, id)
	for _, ignoreTerm := range []bool{false, true} {
		t.Run(fmt.Sprintf("ignore TERM %v", ignoreTerm), func(t *testing.T) {
			spec := s.sshSpec(t, id, 1, "sh", "-c", remoteScript(ignoreTerm))
			spec.KillGrace = 500 * time.Millisecond
			h, err := testLocal(t).Start(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			leader, child := remotePids(t, spec.Dir)
			begin := time.Now()
			killShepherdAndAdopt(t, h, spec)
			checkGone(t, leader, child)
			t.Logf("remote job gone %v after the shepherd's death", time.Since(begin).Round(time.Millisecond))
		})
	}
}

// The run daemon dies (kill -9) while an ssh job runs; the job goes on, and
// a new daemon adopts it and gets its Result, as for a local job.
func TestSSH_AdoptAfterDaemonKilled(t *testing.T) {
	s := testSSHD(t)
	id := testUser(t)
	s.authorize(t, id)
	spec := s.sshSpec(t, id, 1)
	gate := newGate(t, spec.Dir) // the user's directory: the job must see it
	spec.Argv = gated(gate, "echo done; exit 7")
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
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		daemon.Process.Kill()
		t.Fatalf("fake daemon: %v", err)
	}
	daemon.Process.Kill()
	daemon.Wait()
	a, err := Adopt(spec.PidPath, spec.ResultPath)
	if err != nil || a.State != Running {
		t.Fatalf("Adopt: %v %v, want running", a.State, err)
	}
	// Only now, the daemon killed and reaped and the job adopted while it
	// runs, may it end.
	openGate(t, gate)
	if res := wait(t, a.Handle); res.ExitStatus != 7 || res.StartError {
		t.Fatalf("got %+v", res)
	}
	if got := readFile(t, spec.Stdout); got != "done\n" {
		t.Errorf("stdout %q", got)
	}
}

// An MPI job over four hosts (four addresses of this machine) runs one rank
// per host, or more, as the user: mpirun on the first host through ssh, and
// mpirun's own ssh to the others with the user's key.
func TestSSH_MPI(t *testing.T) {
	s := testSSHD(t)
	if _, err := exec.LookPath("mpirun"); err != nil {
		skipOrFail(t, "needs mpirun (openmpi-bin)")
	}
	id := testUser(t)
	s.authorize(t, id)
	// The four hosts are one machine here, where the daemons mpirun starts
	// on them would share (and remove) one session directory in /tmp: the
	// user's agent, ssh with the user's own key, gives each its own TMPDIR.
	agent := filepath.Join(id.Home, "agent")
	script := fmt.Sprintf(`#!/bin/sh
h=$1
shift
exec ssh -p %d -o BatchMode=yes -o StrictHostKeyChecking=yes "$h" "mkdir -p /tmp/msched-mpi-$h-$(id -u) && TMPDIR=/tmp/msched-mpi-$h-$(id -u) && export TMPDIR &&" "$@"
`, s.port)
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, a := range s.addrs {
			os.RemoveAll(fmt.Sprintf("/tmp/msched-mpi-%s-%d", a, id.UID))
		}
	})
	for _, perHost := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d per host", perHost), func(t *testing.T) {
			spec := s.sshSpec(t, id, 4, "sh", "-c", `echo "$OMPI_COMM_WORLD_RANK $(id -un) $FOO $MSCHED_JID $SSH_CONNECTION"`)
			spec.Env = []string{"FOO=bar"}
			spec.MPI = &MPI{RanksPerHost: perHost, Agent: agent}
			begin := time.Now()
			res := run(t, spec)
			t.Logf("mpi job took %v", time.Since(begin).Round(time.Millisecond))
			if !res.OK() {
				t.Fatalf("got %+v\nstdout %q\nstderr %q", res, readFile(t, spec.Stdout), readFile(t, spec.Stderr))
			}
			lines := strings.Split(strings.TrimSpace(readFile(t, spec.Stdout)), "\n")
			sort.Slice(lines, func(i, j int) bool {
				a, _ := strconv.Atoi(strings.Fields(lines[i])[0])
				b, _ := strconv.Atoi(strings.Fields(lines[j])[0])
				return a < b
			})
			if len(lines) != 4*perHost {
				t.Fatalf("%d ranks, want %d:\n%s", len(lines), 4*perHost, strings.Join(lines, "\n"))
			}
			perAddr := map[string]int{}
			for i, l := range lines {
				f := strings.Fields(l)
				if len(f) != 8 || f[0] != strconv.Itoa(i) || f[1] != id.User || f[2] != "bar" || f[3] != "j1" {
					t.Errorf("rank line %q, want %d %s bar j1 and $SSH_CONNECTION", l, i, id.User)
					continue
				}
				perAddr[f[6]]++ // the address the rank's host was reached at
			}
			for _, a := range s.addrs {
				if perAddr[a] != perHost {
					t.Errorf("%d ranks on %s, want %d (all: %v)", perAddr[a], a, perHost, perAddr)
				}
			}
		})
	}
}

// Locally, mpirun runs as the job's user with every host a slot here; it
// never runs as root.
func TestLocal_MPI(t *testing.T) {
	if _, err := exec.LookPath("mpirun"); err != nil {
		skipOrFail(t, "needs mpirun (openmpi-bin)")
	}
	id := testUser(t)
	spec := userSpec(t, id, "sh", "-c", `echo "$OMPI_COMM_WORLD_RANK $(id -un) $FOO"`)
	spec.Hosts = []string{"a/cpu0", "a/cpu1"}
	spec.Env = []string{"FOO=bar"}
	spec.MPI = &MPI{RanksPerHost: 2}
	res := run(t, spec)
	if !res.OK() {
		t.Fatalf("got %+v\nstdout %q\nstderr %q", res, readFile(t, spec.Stdout), readFile(t, spec.Stderr))
	}
	lines := strings.Split(strings.TrimSpace(readFile(t, spec.Stdout)), "\n")
	sort.Strings(lines)
	want := []string{"0 " + id.User + " bar", "1 " + id.User + " bar", "2 " + id.User + " bar", "3 " + id.User + " bar"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("ranks:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}

	root := newSpec(t, "true")
	root.MPI = &MPI{}
	if os.Geteuid() == 0 {
		if res := run(t, root); !res.StartError || !strings.Contains(res.Reason, "does not run a job as root") {
			t.Errorf("mpirun as root: %+v", res)
		}
	}
}

// A process the job started outside its process group (setsid) is killed
// with the job: it carries the job's MSCHED_HOSTFILE.
func TestSSH_EscapedProcessKilledAtEnd(t *testing.T) {
	s := testSSHD(t)
	id := testUser(t)
	s.authorize(t, id)
	spec := s.sshSpec(t, id, 1, "sh", "-c",
		`setsid sh -c 'echo $$ > escaped; exec sleep 300' & while [ ! -s escaped ]; do sleep 0.01; done; exit 5`)
	res := run(t, spec)
	escaped := readPid(t, filepath.Join(spec.Dir, "escaped"))
	t.Cleanup(func() { syscall.Kill(escaped, syscall.SIGKILL) })
	if res.ExitStatus != 5 || res.StartError {
		t.Fatalf("got %+v", res)
	}
	if !gone(escaped) {
		t.Errorf("process %d, which left the job's process group, still runs after the job's end", escaped)
	}
}

// A process the job started outside its process group (setsid) and without
// its environment (env -i), which the wrapper cannot tell from the user's
// other processes, keeps the ssh session's output open after the job has
// ended; the shepherd reports the job's end anyway, sshLinger later.
func TestSSH_EscapedProcessDoesNotHoldTheJob(t *testing.T) {
	s := testSSHD(t)
	id := testUser(t)
	s.authorize(t, id)
	const linger = 500 * time.Millisecond
	t.Setenv(lingerEnv, linger.String()) // for the shepherd, a process of its own
	// The job ends only once the escaped process is in its own session.
	spec := s.sshSpec(t, id, 1, "sh", "-c",
		`setsid env -i /bin/sh -c 'echo $$ > escaped; exec /bin/sleep 300' & while [ ! -s escaped ]; do sleep 0.01; done; exit 5`)
	begin := time.Now()
	res := run(t, spec)
	d := time.Since(begin)
	escaped := readPid(t, filepath.Join(spec.Dir, "escaped"))
	t.Cleanup(func() { syscall.Kill(escaped, syscall.SIGKILL) })
	if res.ExitStatus != 5 || res.StartError {
		t.Fatalf("got %+v", res)
	}
	// The upper bound is generous (an ssh login on a loaded machine may be
	// slow); a shepherd that waited for the escaped process would take
	// minutes.
	if d < linger || d > waitBound {
		t.Errorf("took %v, want the linger (%v) and a little", d, linger)
	}
}

// A cancel at any instant of the start (before ssh connects, before the
// wrapper runs, after) is a cancel, never a lost job or a start error.
func TestSSH_CancelRightAfterStart(t *testing.T) {
	s := testSSHD(t)
	id := testUser(t)
	s.authorize(t, id)
	for i, delay := range []time.Duration{0, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		spec := s.sshSpec(t, id, 1, "sh", "-c", "echo $$ > leader; exec sleep 30")
		h, err := testLocal(t).Start(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		h.Cancel()
		res := wait(t, h)
		if res.Reason != "cancelled" || res.StartError {
			t.Fatalf("%d (after %v): got %+v", i, delay, res)
		}
		if b, err := os.ReadFile(filepath.Join(spec.Dir, "leader")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				checkGone(t, pid)
			}
		}
	}
}
