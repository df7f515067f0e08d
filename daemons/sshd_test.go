package daemons

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"msched/launch"
)

// testSSHD is an sshd of a test's own on a loopback address, started and
// stopped by the test (by its pid): a host that goes away and comes back.
type testSSHD struct {
	t    *testing.T
	dir  string
	conf string
	Addr string // listen address, e.g. 127.0.0.2
	Port int
	// SSH reaches it as root with the test's key, checking its host key.
	SSH launch.SSHConfig

	mu  sync.Mutex
	cmd *exec.Cmd
}

// needRoot skips t without root or the named programs, unless CI is set:
// CI must run these tests, so there t fails instead.
func needRoot(t *testing.T, programs ...string) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "needs root"
	}
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			why = fmt.Sprintf("needs %s: %v", p, err)
		}
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI is set: not skipping)", why)
	}
	t.Skip(why)
}

// startSSHD starts an sshd listening on addr (a loopback address other than
// 127.0.0.1 works on Linux without configuration) at a free port, with a
// host key and root's authorized key in t.TempDir(). It is stopped at the
// end of the test.
func startSSHD(t *testing.T, addrs ...string) *testSSHD {
	t.Helper()
	needRoot(t, "/usr/sbin/sshd", "ssh", "ssh-keygen")
	dir := t.TempDir()
	s := &testSSHD{t: t, dir: dir, conf: filepath.Join(dir, "sshd_config"), Addr: addrs[0]}
	for _, k := range []string{"host", "id"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, k)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	// A free port: bound, then let go (below the ephemeral range the
	// kernel gives out for outgoing connections, drawn at random).
	l, err := net.Listen("tcp", net.JoinHostPort(s.Addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	s.Port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	hostPub, err := os.ReadFile(filepath.Join(dir, "host.pub"))
	if err != nil {
		t.Fatal(err)
	}
	// Only the first address's key is known: the others are hosts whose
	// key is refused.
	known := fmt.Sprintf("[%s]:%d %s", s.Addr, s.Port, hostPub)
	if err := os.WriteFile(filepath.Join(dir, "known_hosts"), []byte(known), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := ""
	for _, a := range addrs {
		conf += fmt.Sprintf("ListenAddress %s:%d\n", a, s.Port)
	}
	conf += fmt.Sprintf(`HostKey %[1]s/host
AuthorizedKeysFile %[1]s/id.pub
PidFile %[1]s/sshd.pid
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
LogLevel VERBOSE
`, dir)
	if err := os.WriteFile(s.conf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // privilege separation
		t.Fatal(err)
	}
	s.SSH = launch.SSHConfig{IdentityFile: filepath.Join(dir, "id"), KnownHostsFile: filepath.Join(dir, "known_hosts"),
		Options: []string{"-F", "/dev/null", "-o", "ConnectTimeout=5"}}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// Start starts sshd (in the foreground, -D, so that its pid is the
// child's) and waits until it accepts connections.
func (s *testSSHD) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	cmd := exec.Command("/usr/sbin/sshd", "-D", "-f", s.conf, "-E", filepath.Join(s.dir, "sshd.log"))
	if out, err := exec.Command("/usr/sbin/sshd", "-t", "-f", s.conf).CombinedOutput(); err != nil {
		s.t.Fatalf("sshd -t: %v: %s", err, out)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(waitBound)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(s.Addr, strconv.Itoa(s.Port)), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "sshd.log"))
			s.t.Fatalf("sshd does not accept connections: %v\n%s", err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills sshd by its pid and waits for it: connections are refused from
// then on (sessions already open keep their own processes, as when a real
// sshd stops).
func (s *testSSHD) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Close stops sshd and every process below it, at the end of the test. A
// connection sshd has accepted is served by a process of its own, which
// re-executes sshd and opens the log file (-E) again, creating it if it
// is gone: left running, as Stop leaves it, such a process can recreate
// sshd.log in t.TempDir() while the test's cleanup removes it ("directory
// not empty"), or write there after the test. So sshd and each process
// below it is stopped (SIGSTOP) before its children are read, so that
// none forks one unseen, and then all are killed.
func (s *testSSHD) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	tree := stopTree(s.t, s.cmd.Process.Pid)
	for _, pid := range tree {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = s.cmd.Wait()
	s.cmd = nil
	// The others are not this process's children: wait until each is
	// gone or a zombie (which holds no file open).
	deadline := time.Now().Add(waitBound)
	for _, pid := range tree[1:] {
		for st := procState(pid); st != 0 && st != 'Z'; st = procState(pid) {
			if time.Now().After(deadline) {
				s.t.Errorf("sshd's process %d (state %c) outlived SIGKILL", pid, st)
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// stopTree stops root and every process below it with SIGSTOP and returns
// their pids, root first. A process's children are read once it has
// stopped, so a fork in progress is complete and its child listed.
func stopTree(t *testing.T, root int) []int {
	tree := []int{root}
	for i := 0; i < len(tree); i++ {
		pid := tree[i]
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			continue // gone
		}
		deadline := time.Now().Add(waitBound)
		for st := procState(pid); st != 'T' && st != 't'; st = procState(pid) {
			if st == 0 || st == 'Z' {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("sshd's process %d does not stop (state %c)", pid, st)
				break
			}
			time.Sleep(time.Millisecond)
		}
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		for _, f := range tasks {
			b, _ := os.ReadFile(f)
			for _, w := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(w); err == nil {
					tree = append(tree, c)
				}
			}
		}
	}
	return tree
}

// procState is the state letter of process pid (proc(5): R, S, D, T, Z,
// …), or 0 if there is no such process.
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state …: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// Close ends the connections sshd still serves, not only the listener: a
// client that has got sshd's banner (the connection's own process has
// started) sees its connection closed at once, not after sshd's
// LoginGraceTime (two minutes).
func TestSSHD_CloseEndsConnections(t *testing.T) {
	s := startSSHD(t, "127.0.0.2")
	c, err := net.Dial("tcp", net.JoinHostPort(s.Addr, strconv.Itoa(s.Port)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(waitBound)); err != nil {
		t.Fatal(err)
	}
	banner := make([]byte, 4)
	if _, err := io.ReadFull(c, banner); err != nil || string(banner) != "SSH-" {
		t.Fatalf("no banner from sshd: %q, %v", banner, err)
	}
	s.Close()
	if err := c.SetReadDeadline(time.Now().Add(3 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("the connection outlived Close: %v", err)
	}
}
