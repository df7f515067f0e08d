package daemons

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
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
	t.Cleanup(s.Stop)
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
// then on (sessions already open keep their own processes).
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
