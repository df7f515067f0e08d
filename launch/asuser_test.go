package launch

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envOf parses `env` output into a map.
func envOf(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			t.Fatalf("not an env line: %q", l)
		}
		m[k] = v
	}
	return m
}

// checkEnv checks a job's environment: want exactly, plus only what sh adds
// by itself.
func checkEnv(t *testing.T, env, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
	for k := range env {
		if _, ok := want[k]; !ok && k != "PWD" && k != "SHLVL" && k != "_" && k != "OLDPWD" {
			t.Errorf("unexpected variable %s=%q in the job's environment", k, env[k])
		}
	}
}

// A job with an identity runs with the user's uid, gid and groups, in a
// clean environment from the password database, the job's env and
// msched's variables; nothing of the shepherd's environment leaks in.
func TestLocal_RunsAsUser(t *testing.T) {
	id := testUser(t)
	t.Setenv("MSCHED_TEST_LEAK", "from the test process")
	spec := userSpec(t, id, "sh", "-c", `id -u; id -g; id -G; env; echo ---; cat "$MSCHED_HOSTFILE"`)
	spec.Env = []string{"FOO=bar baz", "HOME=/overridden", "MSCHED_JID=spoofed"}
	spec.Hosts = []string{"a/cpu0", "a/cpu1"}
	// The host file placed by the daemon, root's and private, as a recycled
	// file is: the job must still read it.
	spec.HostfilePath = rootFile(t, 0o600, "old content\n")
	res := run(t, spec)
	if !res.OK() {
		t.Fatalf("got %+v (stderr %q)", res, readFile(t, spec.Stderr))
	}
	out, hostfile, _ := strings.Cut(readFile(t, spec.Stdout), "---\n")
	if hostfile != "a/cpu0\na/cpu1\n" {
		t.Errorf("the job read its host file as %q", hostfile)
	}
	lines := strings.SplitN(out, "\n", 4)
	if lines[0] != strconv.Itoa(id.UID) || lines[1] != strconv.Itoa(id.GID) {
		t.Errorf("uid %s gid %s, want %d %d", lines[0], lines[1], id.UID, id.GID)
	}
	var groups []int
	for _, f := range strings.Fields(lines[2]) {
		g, _ := strconv.Atoi(f)
		groups = append(groups, g)
	}
	if len(id.Groups) < 2 || !sameSet(groups, id.Groups) {
		t.Errorf("id -G: %v, want %v (primary and supplementary)", groups, id.Groups)
	}
	checkEnv(t, envOf(t, lines[3]), map[string]string{
		"PATH": DefaultPath, "HOME": "/overridden", "USER": id.User, "LOGNAME": id.User, "SHELL": "/bin/sh",
		"FOO": "bar baz", "MSCHED_JID": "j1", "MSCHED_HOSTS": "a/cpu0,a/cpu1", "MSCHED_NHOSTS": "2",
		"MSCHED_HOSTFILE": spec.HostfilePath,
	})
	fi, err := os.Stat(spec.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != id.UID || fi.Mode().Perm()&^0o022 != 0o644&^0o022 {
		t.Errorf("output file owned by %d, mode %v: want the user's (%d), 0644", st.Uid, fi.Mode(), id.UID)
	}
}

// Without an identity, the job runs as the shepherd's user, with PATH from
// the spec and HOME, USER, LOGNAME, SHELL of the shepherd's environment.
func TestLocal_CleanEnvWithoutIdentity(t *testing.T) {
	t.Setenv("MSCHED_TEST_LEAK", "from the test process")
	t.Setenv("HOME", "/home/shepherd")
	t.Setenv("USER", "shepherd")
	t.Setenv("LOGNAME", "")
	os.Unsetenv("LOGNAME")
	t.Setenv("SHELL", "/bin/dash")
	spec := newSpec(t, "env")
	spec.Path = "/usr/bin:/bin"
	if res := run(t, spec); !res.OK() {
		t.Fatalf("got %+v", res)
	}
	checkEnv(t, envOf(t, readFile(t, spec.Stdout)), map[string]string{
		"PATH": "/usr/bin:/bin", "HOME": "/home/shepherd", "USER": "shepherd", "SHELL": "/bin/dash",
		"MSCHED_JID": "j1", "MSCHED_HOSTS": "h0", "MSCHED_NHOSTS": "1",
		"MSCHED_HOSTFILE": filepath.Join(spec.Dir, "j1.hosts"),
	})
}

// rootFile makes a root-owned file of mode perm holding content in a
// directory every user can search, and returns its path.
func rootFile(t *testing.T, perm os.FileMode, content string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "msched-launch-root-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	p := filepath.Join(dir, "secret")
	if err := os.WriteFile(p, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, perm)
	return p
}

// The shepherd (root) opens a job's output files as the job's user would:
// a file the user may not write, a symbolic link planted at the output path,
// a FIFO (with or without a reader) and a directory the user may not write
// in are all refused, and the job does not start.
func TestLocal_OutputsOpenedAsUser(t *testing.T) {
	id := testUser(t)
	const secret = "root's secret\n"
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, spec *Spec) (check func())
		reason string // the whole Reason, or a part after "cannot start: "
	}{
		{"root's file", func(t *testing.T, spec *Spec) func() {
			spec.Stdout = "/etc/passwd"
			return nil
		}, "cannot start: stdout /etc/passwd: permission denied"},
		{"root's file for stderr", func(t *testing.T, spec *Spec) func() {
			spec.Stderr = rootFile(t, 0o644, secret)
			return func() { checkContent(t, spec.Stderr, secret) }
		}, "permission denied"},
		{"symlink to root's file", func(t *testing.T, spec *Spec) func() {
			target := rootFile(t, 0o600, secret)
			if err := os.Symlink(target, spec.Stdout); err != nil {
				t.Fatal(err)
			}
			os.Lchown(spec.Stdout, id.UID, id.GID)
			return func() { checkContent(t, target, secret) }
		}, "cannot start: stdout " + "OUT" + ": is a symbolic link (not followed), not a file"},
		{"symlink to the user's own file", func(t *testing.T, spec *Spec) func() {
			// Not followed either: O_NOFOLLOW does not ask whose it is.
			own := filepath.Join(spec.Dir, "own")
			os.WriteFile(own, nil, 0o644)
			os.Chown(own, id.UID, id.GID)
			os.Symlink(own, spec.Stdout)
			return nil
		}, "is a symbolic link"},
		{"fifo without a reader", func(t *testing.T, spec *Spec) func() {
			if err := syscall.Mkfifo(spec.Stdout, 0o666); err != nil {
				t.Fatal(err)
			}
			os.Chown(spec.Stdout, id.UID, id.GID)
			return nil
		}, "cannot start: stdout " + "OUT" + ": is a named pipe, not a file"},
		{"fifo with a reader", func(t *testing.T, spec *Spec) func() {
			if err := syscall.Mkfifo(spec.Stdout, 0o666); err != nil {
				t.Fatal(err)
			}
			os.Chown(spec.Stdout, id.UID, id.GID) // the user could write it: only its type is wrong
			r, err := os.OpenFile(spec.Stdout, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return nil
		}, "is a named pipe"},
		{"directory the user cannot write", func(t *testing.T, spec *Spec) func() {
			spec.Stdout = filepath.Join(filepath.Dir(rootFile(t, 0o644, "")), "new")
			return func() {
				if _, err := os.Lstat(spec.Stdout); !os.IsNotExist(err) {
					t.Errorf("%s was created: %v", spec.Stdout, err)
				}
			}
		}, "permission denied"},
		{"a directory", func(t *testing.T, spec *Spec) func() {
			spec.Stdout = spec.Dir
			return nil
		}, "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := userSpec(t, id, "sh", "-c", "echo pwned; echo pwned >&2")
			check := tc.setup(t, &spec)
			begin := time.Now()
			res := run(t, spec)
			want := strings.ReplaceAll(tc.reason, "OUT", spec.Stdout)
			if !res.StartError || !strings.Contains(res.Reason, want) {
				t.Fatalf("got %+v, want a start error with %q", res, want)
			}
			// A start error is found at once; a shepherd that blocked
			// (opening a fifo without a reader) would never answer.
			if d := time.Since(begin); d > waitBound {
				t.Errorf("took %v: the shepherd blocked", d)
			}
			if check != nil {
				check()
			}
		})
	}
	t.Run("dev null and a new file", func(t *testing.T) {
		spec := userSpec(t, id, "sh", "-c", "echo out; echo err >&2")
		spec.Stdout = "/dev/null"
		if res := run(t, spec); !res.OK() {
			t.Fatalf("got %+v", res)
		}
		checkContent(t, spec.Stderr, "err\n")
	})
}

func checkContent(t *testing.T, path, want string) {
	t.Helper()
	if got := readFile(t, path); got != want {
		t.Errorf("%s holds %q, want %q", path, got, want)
	}
}

// The working directory and the program are checked as the user: a
// directory only root may enter, a program only root may run.
func TestLocal_WorkdirAndProgramAsUser(t *testing.T) {
	id := testUser(t)
	private, err := os.MkdirTemp("/tmp", "msched-launch-private-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(private) })
	os.Chmod(private, 0o700)
	prog := filepath.Join(private, "prog")
	os.WriteFile(prog, []byte("#!/bin/sh\necho ran\n"), 0o755)
	file := rootFile(t, 0o644, "")

	for _, tc := range []struct {
		name   string
		mutate func(*Spec)
		reason string
	}{
		{"workdir root's", func(s *Spec) { s.Dir = private }, "cannot start: workdir " + private + ": permission denied"},
		{"workdir a file", func(s *Spec) { s.Dir = file }, "cannot start: workdir " + file + ": not a directory"},
		{"program root's", func(s *Spec) { s.Argv = []string{prog} }, "permission denied"},
		{"program in root's PATH entry", func(s *Spec) { s.Argv = []string{"prog"}; s.Path = private + ":/usr/bin:/bin" },
			`cannot start: exec: "prog": executable file not found in $PATH`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := userSpec(t, id, "true")
			tc.mutate(&spec)
			res := run(t, spec)
			if !res.StartError || !strings.Contains(res.Reason, tc.reason) {
				t.Fatalf("got %+v, want a start error with %q", res, tc.reason)
			}
		})
	}
}

// A shepherd that is not root cannot run a job as another user, and says so.
func TestShepherd_NotRootRefusesOtherUser(t *testing.T) {
	id := testUser(t)
	dir := userDir(t, id)
	spec := Spec{JID: "j1", Argv: []string{"true"}, Dir: dir, Hosts: []string{"h0"},
		ResultPath: filepath.Join(dir, "j1.result"), PidPath: filepath.Join(dir, "j1.pid"),
		Identity: &Identity{User: "root", UID: 0, GID: 0, Home: "/root", Shell: "/bin/sh"}}
	data, _ := json.Marshal(spec)
	// The test binary's directory is root's own (0700): a copy the user may run.
	self, _ := os.Executable()
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "shepherd")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, shepherdArg)
	cmd.Stdin = strings.NewReader(string(data))
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(id.UID), Gid: uint32(id.GID)}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("shepherd as %s: %v: %s", id.User, err, out)
	}
	res, ok, err := readResult(spec.ResultPath)
	want := "cannot start: the shepherd runs as uid " + strconv.Itoa(id.UID) + ", not root, and cannot run a job as root (uid 0)"
	if !ok || err != nil || !res.StartError || res.Reason != want {
		t.Fatalf("got %+v (%v %v), want a start error %q", res, ok, err, want)
	}
}

// The file-system identity stays on its own thread: other goroutines keep
// root's, during and after.
func TestAsUser_ThreadOnly(t *testing.T) {
	id := testUser(t)
	secret := rootFile(t, 0o600, "x")
	inside, release, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		done <- asUser(id, func() error {
			close(inside)
			<-release
			_, err := os.ReadFile(secret)
			return err
		})
	}()
	<-inside
	for i := 0; i < 20; i++ {
		if _, err := os.ReadFile(secret); err != nil {
			t.Fatalf("root lost access while a thread is the user: %v", err)
		}
	}
	close(release)
	if err := <-done; !os.IsPermission(err) {
		t.Errorf("as the user: %v, want permission denied", err)
	}
	if _, err := os.ReadFile(secret); err != nil {
		t.Errorf("root after: %v", err)
	}
}
