// Package testbed starts msched's testbed for tests: one sshd on the
// loopback addresses 127.0.0.2-5 and two single-node Slurm clusters, c1 and
// c2, all on this machine, from Debian's packages, through up.sh and down.sh
// beside this file (see README.md there). Start gives each test its own
// directory and ports, so tests of several packages may run beds at once.
//
// A bed needs root and the packages openssh-server, openssh-client,
// slurm-wlm and munge. Without them Start skips the test, unless the
// environment variable CI is set: CI must run these tests, so there Start
// fails instead.
package testbed

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The scripts are embedded and written next to each bed, so that a test
// binary finds them wherever it runs (and `go test -trimpath` too).
//
//go:embed up.sh down.sh lib.sh
var scripts embed.FS

// addrs are the loopback addresses sshd listens on, one per ws host.
var addrs = []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}

// Bed is a running testbed.
type Bed struct {
	Dir        string            // the directory up.sh ran in
	SSHPort    int               // sshd's port on each of Addrs
	Addrs      []string          // 127.0.0.2 … 127.0.0.5
	HostsFile  string            // Dir/hosts.yaml, for msched up --hosts
	ConfigFile string            // Dir/msched.yaml, for msched up --config
	SlurmConf  map[string]string // cluster name ("c1", "c2") -> its slurm.conf

	slurmPortBase int
	base          string // holds up.sh, down.sh and Dir
	tag           string // in the names of the bed's users

	mu    sync.Mutex
	users map[string]User
}

// User is a local user made by AddUser.
type User struct {
	Name     string
	UID, GID int
	Home     string
}

// Timeouts of the scripts: up.sh waits at most about a minute for a
// daemon; on a busy two-core machine the whole bed starts in a few seconds.
const (
	upTimeout   = 2 * time.Minute
	downTimeout = time.Minute
)

// required are the programs up.sh, down.sh and AddUser run.
var required = []string{
	"/usr/sbin/sshd", "/usr/bin/ssh", "/usr/bin/ssh-keygen",
	"/usr/sbin/munged", "/usr/sbin/mungekey",
	"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch", "/usr/bin/scontrol",
	"/usr/bin/setpriv", "/usr/sbin/useradd", "/usr/sbin/userdel", "/bin/bash",
}

// Start runs up.sh in a new directory under os.TempDir with free ports,
// registers down.sh (and the directory's removal) with t.Cleanup, and
// returns the bed. Without root or the packages it skips t, or fails it
// when CI is set.
func Start(t testing.TB) *Bed {
	t.Helper()
	if reason := unavailable(); reason != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("testbed: %s (CI is set: not skipping)", reason)
		}
		t.Skipf("testbed: %s", reason)
	}
	// Not t.TempDir: its parent is 0700, and other users must reach the
	// munge socket and the slurm.confs. The name is short because unix
	// socket paths under it are limited (see up.sh).
	base, err := os.MkdirTemp("", "mstb")
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	for _, name := range []string{"up.sh", "down.sh", "lib.sh"} {
		data, _ := scripts.ReadFile(name)
		if err := os.WriteFile(filepath.Join(base, name), data, 0o755); err != nil {
			t.Fatalf("testbed: %v", err)
		}
	}
	b := &Bed{
		Dir:   filepath.Join(base, "bed"),
		Addrs: append([]string(nil), addrs...),
		base:  base,
		tag:   fmt.Sprintf("%06x", rand.IntN(1<<24)),
		users: map[string]User{},
	}
	b.HostsFile = filepath.Join(b.Dir, "hosts.yaml")
	b.ConfigFile = filepath.Join(b.Dir, "msched.yaml")
	b.SlurmConf = map[string]string{
		"c1": filepath.Join(b.Dir, "c1", "slurm.conf"),
		"c2": filepath.Join(b.Dir, "c2", "slurm.conf"),
	}
	if b.SSHPort, err = freePorts(addrs, 1); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	// slurmctld and slurmd listen on every address (0.0.0.0): their ports
	// must be free on all of them (another bed's sshd may be on 127.0.0.2),
	// and not this bed's ssh port, which is not yet bound.
	for b.slurmPortBase = b.SSHPort; b.slurmPortBase <= b.SSHPort && b.SSHPort < b.slurmPortBase+4; {
		if b.slurmPortBase, err = freePorts([]string{"0.0.0.0"}, 4); err != nil {
			t.Fatalf("testbed: %v", err)
		}
	}
	// Registered before up.sh runs: a half-started bed is stopped too.
	t.Cleanup(func() {
		if out, err := b.down(); err != nil {
			t.Errorf("testbed: down.sh: %v\n%s", err, out)
		}
	})
	out, err := b.up()
	if err != nil {
		t.Fatalf("testbed: up.sh: %v\n%s", err, out)
	}
	t.Logf("testbed: %s", out)
	return b
}

// unavailable says why no bed can start here, or "".
func unavailable() string {
	if os.Geteuid() != 0 {
		return "needs root (it starts sshd, Slurm and munged, and adds users)"
	}
	var missing []string
	for _, p := range required {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("missing %s: apt-get install openssh-server openssh-client slurm-wlm munge",
			strings.Join(missing, ", "))
	}
	return ""
}

// freePorts returns a port p such that p … p+n-1 are free on every one of
// hosts, checked by binding them and letting them go. It draws p below
// Linux's ephemeral range (32768 up), where the kernel never puts the
// local end of a connection, so between the check and the daemons' bind
// only another bed choosing at random can take the port.
func freePorts(hosts []string, n int) (int, error) {
	const lo, hi = 20000, 32768
	for range 100 {
		p := lo + rand.IntN(hi-lo-n)
		var held []net.Listener
		ok := true
		for i := 0; i < n && ok; i++ {
			for _, h := range hosts {
				l, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(p+i)))
				if err != nil {
					ok = false
					break
				}
				held = append(held, l)
			}
		}
		for _, l := range held {
			l.Close()
		}
		if ok {
			return p, nil
		}
	}
	return 0, fmt.Errorf("no %d free ports in a row on %v", n, hosts)
}

func (b *Bed) up() (string, error) {
	return b.run("up.sh", upTimeout)
}

func (b *Bed) down() (string, error) {
	return b.run("down.sh", downTimeout)
}

// run runs one of the bed's scripts on b.Dir and returns its output.
func (b *Bed) run(script string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/bash", filepath.Join(b.base, script), b.Dir)
	cmd.Env = append(os.Environ(),
		"TESTBED_SSH_PORT="+strconv.Itoa(b.SSHPort),
		"TESTBED_SLURM_PORT_BASE="+strconv.Itoa(b.slurmPortBase))
	// The daemons must not hold the output pipe open; if one did, stop
	// waiting for it anyway.
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

var (
	// A bed user's name is "mst", the bed's tag, "-" and AddUser's name:
	// at most 3+6+1+22 = 32 characters, what useradd allows.
	userName = regexp.MustCompile(`^[a-z][a-z0-9]{0,21}$`)
	// userMu keeps this process's useradd and userdel calls apart: they
	// lock /etc/passwd and fail, rather than wait, when it is taken.
	userMu sync.Mutex
)

// AddUser creates (idempotently) a local user for the bed, with a home
// directory, an ed25519 key pair ~/.ssh/id_ed25519 that ~/.ssh/authorized_keys
// accepts and ~/.ssh/known_hosts holding the bed's sshd, all owned by the
// user, and removes it (userdel -r) in t.Cleanup. name is a short lowercase
// word; the user's name is "mst", a random tag of the bed, "-" and name, so
// that parallel tests do not clash.
func (b *Bed) AddUser(t testing.TB, name string) User {
	t.Helper()
	if !userName.MatchString(name) {
		t.Fatalf("testbed: user name %q: want a lowercase letter then up to 21 lowercase letters or digits", name)
	}
	name = "mst" + b.tag + "-" + name
	b.mu.Lock()
	defer b.mu.Unlock()
	if u, ok := b.users[name]; ok {
		return u
	}
	if _, err := user.Lookup(name); err != nil {
		// -p '*': no password, but not locked ('!'), which sshd without
		// PAM would refuse even for key logins.
		if err := userCmd("useradd", "-m", "-p", "*", "-s", "/bin/bash", "-c", "msched testbed", name); err != nil {
			t.Fatalf("testbed: %v", err)
		}
		t.Cleanup(func() {
			// -f: even if a job of the user still runs.
			if err := userCmd("userdel", "-r", "-f", name); err != nil {
				t.Errorf("testbed: %v", err)
			}
		})
	}
	u, err := lookupUser(name)
	if err == nil {
		err = b.sshFiles(u)
	}
	if err != nil {
		t.Fatalf("testbed: user %s: %v", name, err)
	}
	b.users[name] = u
	return u
}

// userCmd runs useradd or userdel, again while /etc/passwd is locked by
// another process (up to 10 s).
func userCmd(args ...string) error {
	userMu.Lock()
	defer userMu.Unlock()
	for i := 0; ; i++ {
		out, err := exec.Command("/usr/sbin/"+args[0], args[1:]...).CombinedOutput()
		if err == nil {
			return nil
		}
		if i == 50 || !strings.Contains(string(out), "lock") {
			return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func lookupUser(name string) (User, error) {
	pw, err := user.Lookup(name)
	if err != nil {
		return User{}, err
	}
	uid, err1 := strconv.Atoi(pw.Uid)
	gid, err2 := strconv.Atoi(pw.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return User{}, err
	}
	return User{Name: name, UID: uid, GID: gid, Home: pw.HomeDir}, nil
}

// sshFiles writes u's ~/.ssh: a key pair unless there is one,
// authorized_keys with its public key, known_hosts from the bed.
func (b *Bed) sshFiles(u User) error {
	dir := filepath.Join(u.Home, ".ssh")
	key := filepath.Join(dir, "id_ed25519")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if _, err := os.Stat(key); err != nil {
		out, err := exec.Command("/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", u.Name+"@testbed", "-f", key).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ssh-keygen: %v: %s", err, out)
		}
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		return err
	}
	known, err := os.ReadFile(filepath.Join(b.Dir, "ssh", "known_hosts"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "known_hosts"), known, 0o644); err != nil {
		return err
	}
	for _, p := range []string{dir, key, key + ".pub", filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "known_hosts")} {
		if err := os.Chown(p, u.UID, u.GID); err != nil {
			return err
		}
	}
	return nil
}
