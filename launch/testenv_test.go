package launch

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
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
)

// Tests that need root (to run jobs as other users) or sshd skip without
// them, unless the environment variable CI is set: CI must run them, so
// there they fail.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "needs root")
	}
	for _, p := range []string{"/usr/sbin/useradd", "/usr/sbin/userdel", "/usr/sbin/groupadd", "/usr/sbin/groupdel"} {
		if _, err := os.Stat(p); err != nil {
			skipOrFail(t, "needs "+p)
		}
	}
}

func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(why + " (CI is set: not skipping)")
	}
	t.Skip(why)
}

func randomName(prefix string) string {
	b := make([]byte, 4)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// runRetry runs an account tool, retrying while another process holds the
// password database's lock (tests of other packages add users too).
func runRetry(t *testing.T, argv ...string) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for {
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err == nil {
			return
		}
		if !strings.Contains(string(out), "lock") || time.Now().After(deadline) {
			t.Fatalf("%s: %v: %s", strings.Join(argv, " "), err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// testUser makes a system user with a random name, its own group, one more
// supplementary group, /bin/sh and a home directory (0755, its own) under
// /tmp, where every user can reach it; all are removed when the test ends.
// Its password is "*", not the "!" of a locked account, which sshd refuses
// without PAM.
func testUser(t *testing.T) *Identity {
	t.Helper()
	needRoot(t)
	name, group := randomName("mst"), randomName("msg")
	home, err := os.MkdirTemp("/tmp", "msched-launch-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	runRetry(t, "/usr/sbin/groupadd", "-r", group)
	t.Cleanup(func() { exec.Command("/usr/sbin/groupdel", group).Run() })
	runRetry(t, "/usr/sbin/useradd", "-M", "-r", "-U", "-G", group, "-d", home, "-s", "/bin/sh", "-p", "*", name)
	t.Cleanup(func() {
		for i := 0; i < 50; i++ {
			if exec.Command("/usr/sbin/userdel", name).Run() == nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	line, err := exec.Command("/usr/bin/getent", "passwd", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(strings.Split(string(line), ":")[2])
	id, err := LookupIdentity(uid)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, id.UID, id.GID); err != nil {
		t.Fatal(err)
	}
	os.Chmod(home, 0o755)
	return id
}

// userDir is a new directory of id's, 0755, in its home.
func userDir(t *testing.T, id *Identity) string {
	t.Helper()
	d, err := os.MkdirTemp(id.Home, "d")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, id.UID, id.GID); err != nil {
		t.Fatal(err)
	}
	os.Chmod(d, 0o755)
	return d
}

// userSpec is newSpec for a job of id: its working directory and output
// files are the user's, the shepherd's files stay in root's temporary
// directory.
func userSpec(t *testing.T, id *Identity, argv ...string) Spec {
	t.Helper()
	spec := newSpec(t, argv...)
	spec.Identity = id
	spec.Dir = userDir(t, id)
	spec.Stdout, spec.Stderr = filepath.Join(spec.Dir, "out"), filepath.Join(spec.Dir, "err")
	return spec
}

// sshd is an OpenSSH server of the tests' own: its configuration, host key,
// authorized keys and logs under a temporary directory, listening on one
// port of 127.0.0.2 to 127.0.0.5, which stand for four remote hosts.
type sshd struct {
	dir        string
	port       int
	addrs      []string
	knownHosts string // the host key, for each address
	key        string // msched's key (the shepherd's), authorized for every test user
	cmd        *exec.Cmd
	done       chan struct{}
}

var (
	sshdOnce   sync.Once
	sshdShared *sshd
	sshdErr    error
)

// testSSHD returns the package's sshd, started on first use and stopped by
// TestMain (stopSSHD). It needs root and sshd.
func testSSHD(t *testing.T) *sshd {
	t.Helper()
	needRoot(t)
	for _, p := range []string{"/usr/sbin/sshd", "/usr/bin/ssh", "/usr/bin/ssh-keygen"} {
		if _, err := os.Stat(p); err != nil {
			skipOrFail(t, "needs "+p)
		}
	}
	sshdOnce.Do(func() { sshdShared, sshdErr = startSSHD() })
	if sshdErr != nil {
		t.Fatal(sshdErr)
	}
	return sshdShared
}

func stopSSHD() {
	if s := sshdShared; s != nil {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(waitBound):
			s.cmd.Process.Kill()
			<-s.done
		}
		os.RemoveAll(s.dir)
	}
}

func startSSHD() (*sshd, error) {
	dir, err := os.MkdirTemp("", "msched-launch-sshd-")
	if err != nil {
		return nil, err
	}
	// sshd reads authorized/<user> as the user: the directory must be
	// searchable (msched's private key in it stays 0600).
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &sshd{dir: dir, addrs: []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"},
		knownHosts: filepath.Join(dir, "known_hosts"), key: filepath.Join(dir, "msched_key")}
	fail := func(err error) (*sshd, error) {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("test sshd: %w", err)
	}
	for _, k := range []string{filepath.Join(dir, "host_key"), s.key} {
		if out, err := exec.Command("/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", k).CombinedOutput(); err != nil {
			return fail(fmt.Errorf("ssh-keygen: %v: %s", err, out))
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "authorized"), 0o755); err != nil {
		return fail(err)
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // sshd's privilege separation directory
		return fail(err)
	}
	hostPub, err := os.ReadFile(filepath.Join(dir, "host_key.pub"))
	if err != nil {
		return fail(err)
	}
	for attempt := 0; ; attempt++ {
		if s.port, err = freePort(s.addrs[0]); err != nil {
			return fail(err)
		}
		var conf, known strings.Builder
		for _, a := range s.addrs {
			fmt.Fprintf(&conf, "ListenAddress %s:%d\n", a, s.port)
			fmt.Fprintf(&known, "[%s]:%d %s", a, s.port, hostPub)
		}
		fmt.Fprintf(&conf, `HostKey %s/host_key
AuthorizedKeysFile %s/authorized/%%u
PidFile %s/sshd.pid
UsePAM no
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PrintMotd no
PrintLastLog no
MaxStartups 100
MaxSessions 100
LogLevel ERROR
`, dir, dir, dir)
		if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(conf.String()), 0o644); err != nil {
			return fail(err)
		}
		if err := os.WriteFile(s.knownHosts, []byte(known.String()), 0o644); err != nil {
			return fail(err)
		}
		// -D: sshd stays our child, stopped by its pid; -e: its log on stderr.
		log, err := os.Create(filepath.Join(dir, "sshd.log"))
		if err != nil {
			return fail(err)
		}
		s.cmd = exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
		s.cmd.Stdout, s.cmd.Stderr = log, log
		if err := s.cmd.Start(); err != nil {
			log.Close()
			return fail(err)
		}
		log.Close()
		s.done = make(chan struct{})
		go func() { s.cmd.Wait(); close(s.done) }()
		if err := s.waitListening(); err == nil {
			return s, nil
		} else if attempt == 2 {
			s.cmd.Process.Kill()
			<-s.done
			b, _ := os.ReadFile(filepath.Join(dir, "sshd.log"))
			return fail(fmt.Errorf("%v: %s", err, b))
		}
		s.cmd.Process.Kill() // the port was taken meanwhile: another one
		<-s.done
	}
}

// freePort is a TCP port free on addr now.
func freePort(addr string) (int, error) {
	l, err := net.Listen("tcp", addr+":0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitListening waits (bounded) until sshd accepts on every address.
func (s *sshd) waitListening() error {
	deadline := time.Now().Add(waitBound)
	for _, a := range s.addrs {
		for {
			select {
			case <-s.done:
				return fmt.Errorf("sshd exited")
			default:
			}
			c, err := net.DialTimeout("tcp", net.JoinHostPort(a, strconv.Itoa(s.port)), time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("sshd does not listen on %s:%d", a, s.port)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// config is msched's ssh configuration for this server.
func (s *sshd) config() SSHConfig {
	return SSHConfig{IdentityFile: s.key, KnownHostsFile: s.knownHosts,
		Options: []string{"-F", "/dev/null", "-o", "ConnectTimeout=10"}}
}

// dest is the destinations 127.0.0.2… for n hosts, user "" (the job's).
func (s *sshd) dest(n int) []SSHDest {
	var d []SSHDest
	for _, a := range s.addrs[:n] {
		d = append(d, SSHDest{Host: a, Port: s.port})
	}
	return d
}

// authorize lets msched's key log in as id, and gives id a key of its own
// (~/.ssh/id_ed25519, authorized too) and the server's known hosts, as a
// user of a cluster has: mpirun logs in to the other hosts with them.
func (s *sshd) authorize(t *testing.T, id *Identity) {
	t.Helper()
	sshDir := filepath.Join(id.Home, ".ssh")
	if err := os.MkdirAll(sshDir, 0o700); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(sshDir, "id_ed25519")
	if out, err := exec.Command("/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", own).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	known, err := os.ReadFile(s.knownHosts)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sshDir, "known_hosts"), known, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{sshDir, own, own + ".pub", filepath.Join(sshDir, "known_hosts")} {
		if err := os.Chown(p, id.UID, id.GID); err != nil {
			t.Fatal(err)
		}
	}
	var keys []byte
	for _, pub := range []string{s.key + ".pub", own + ".pub"} {
		b, err := os.ReadFile(pub)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, b...)
	}
	ak := filepath.Join(s.dir, "authorized", id.User)
	if err := os.WriteFile(ak, keys, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(ak) })
}

// sshSpec is userSpec for a job that runs through ssh on n of the
// server's addresses; the host names are the addresses.
func (s *sshd) sshSpec(t *testing.T, id *Identity, n int, argv ...string) Spec {
	t.Helper()
	spec := userSpec(t, id, argv...)
	spec.SSH = s.config().Spec(s.dest(n))
	spec.Hosts = append([]string(nil), s.addrs[:n]...)
	return spec
}
