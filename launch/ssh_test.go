package launch

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestSSHConfig_Spec(t *testing.T) {
	c := SSHConfig{Binary: "/usr/bin/ssh", IdentityFile: "/etc/msched/id_ed25519",
		KnownHostsFile: "/etc/msched/known hosts", Options: []string{"-o", "ConnectTimeout=5"}}
	dest := []SSHDest{{Host: "n1", Port: 2222, User: "alice"}, {Host: "n2"}}
	s := c.Spec(dest)
	want := []string{"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
		"-o", `UserKnownHostsFile="/etc/msched/known hosts"`,
		"-i", "/etc/msched/id_ed25519", "-o", "IdentitiesOnly=yes", "-o", "ConnectTimeout=5"}
	if s.Binary != c.Binary || !reflect.DeepEqual(s.Options, want) || !reflect.DeepEqual(s.Dest, dest) {
		t.Errorf("Spec = %+v, want options %q", s, want)
	}
	if got := (SSHConfig{}).Spec(nil).Options; !reflect.DeepEqual(got, []string{"-o", "BatchMode=yes"}) {
		t.Errorf("empty config: %q", got)
	}
	got := s.Command(dest[0], "alice", "uptime")
	wantArgv := append(append([]string{"/usr/bin/ssh"}, want...), "-p", "2222", "-l", "alice", "--", "n1", "uptime")
	if !reflect.DeepEqual(got, wantArgv) {
		t.Errorf("Command = %q\nwant %q", got, wantArgv)
	}
	// A host or user that looks like an option stays a host or a user.
	got = (&SSH{}).Command(SSHDest{Host: "-oProxyCommand=evil"}, "-oProxyCommand=evil", "true")
	if want := []string{"ssh", "-l", "-oProxyCommand=evil", "--", "-oProxyCommand=evil", "true"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Command = %q, want %q", got, want)
	}
	if sshConfigWord("/a%d/b") != "/a%%d/b" {
		t.Errorf("%% not escaped: %s", sshConfigWord("/a%d/b"))
	}
}

func TestSplitMarkers(t *testing.T) {
	marker := "\nmsched:tok:"
	stream := "\nmsched:tok:ready\nhello\nmsched:tok:not at a line start? no: this one is a marker too\n" +
		"partial line\nmsched:to" + "k-not:x\n" + "no newline before" + "\nmsched:tok:end 3\nafter\nmsched:tok:"
	wantText := "hello" + "partial line\nmsched:tok-not:x\n" + "no newline before" + "after\nmsched:tok:"
	wantEvents := []string{"ready", "not at a line start? no: this one is a marker too", "end 3"}
	// Every way of cutting the stream into reads gives the same result.
	check := func(name string, rd interface{ Read([]byte) (int, error) }) {
		var text bytes.Buffer
		var events []string
		if err := splitMarkers(rd, []byte(marker), func(b []byte) { text.Write(b) }, func(e string) { events = append(events, e) }); err != nil {
			t.Fatal(err)
		}
		if text.String() != wantText || !reflect.DeepEqual(events, wantEvents) {
			t.Errorf("%s: text %q events %q\nwant text %q events %q", name, text.String(), events, wantText, wantEvents)
		}
	}
	check("whole", strings.NewReader(stream))
	check("one byte at a time", iotest.OneByteReader(strings.NewReader(stream)))
	check("half", iotest.HalfReader(strings.NewReader(stream)))
}

// fakeSSH is an ssh client for tests without sshd: it runs the remote
// command line here, through sh as the login shell would, and ignores the
// options. exit, when not "", makes it fail like ssh does instead.
func fakeSSH(t *testing.T, fail string) *SSH {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ssh")
	body := "for a do last=$a; done\nexec /bin/sh -c \"$last\"\n"
	if fail != "" {
		body = "echo " + shQuote(fail) + " >&2\nexit 255\n"
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return &SSH{Binary: p, Dest: []SSHDest{{Host: "remote1", User: "someone"}}}
}

// Every word reaches the remote job as it was, whatever it holds: quotes,
// spaces, newlines, $(…), backquotes, globs, an empty word, a leading dash.
func TestSSH_WordsArriveIntact(t *testing.T) {
	dir := filepath.Join(t.TempDir(), `d ir'"$x`)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pwned := filepath.Join(dir, "pwned")
	words := []string{"it's", `"dq"`, "a  b", "$(touch " + pwned + ")", "`touch " + pwned + "`",
		`back\slash`, "new\nline", "*", "", "-n", "msched:x:end 0", "'\\''"}
	spec := newSpec(t, append([]string{"sh", "-c", `printf '[%s]\n' "$@"; printf '<%s>\n' "$FOO" "$BAR" "$(pwd)"`, "sh"}, words...)...)
	spec.Dir = dir
	spec.Stdout, spec.Stderr = filepath.Join(t.TempDir(), "out"), filepath.Join(t.TempDir(), "err")
	spec.SSH = fakeSSH(t, "")
	spec.Hosts = []string{"remote1"}
	spec.Env = []string{`FOO=a'b "c" $(touch ` + pwned + `)`, "BAR=x\ny"}
	res := run(t, spec)
	if !res.OK() {
		t.Fatalf("got %+v; stderr %q", res, readFile(t, spec.Stderr))
	}
	var want strings.Builder
	for _, w := range words {
		want.WriteString("[" + w + "]\n")
	}
	want.WriteString("<" + `a'b "c" $(touch ` + pwned + `)` + ">\n<x\ny>\n<" + dir + ">\n")
	if got := readFile(t, spec.Stdout); got != want.String() {
		t.Errorf("got\n%s\nwant\n%s", got, want.String())
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Error("a word was executed")
	}
	if got := readFile(t, spec.Stderr); got != "" {
		t.Errorf("stderr %q, want nothing (the markers are taken out)", got)
	}
}

// With a fake ssh, the protocol alone: statuses including 255, a failure
// before the wrapper ran, and the wrapper's own start errors.
func TestSSH_ProtocolWithoutSSHD(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fail        string // fake ssh fails with this message
		argv        []string
		dir         string
		status      int
		signal      string
		reason      string
		startErr    bool
		unreachable string
		stderr      string
	}{
		{name: "exit 0", argv: []string{"true"}},
		{name: "exit 3", argv: []string{"sh", "-c", "exit 3"}, status: 3, reason: "exit status 3"},
		{name: "exit 255", argv: []string{"sh", "-c", "exit 255"}, status: 255, reason: "exit status 255"},
		{name: "signal", argv: []string{"sh", "-c", "kill -USR1 $$"}, status: -1, signal: "SIGUSR1", reason: "killed by SIGUSR1"},
		{name: "stderr without newline", argv: []string{"sh", "-c", "printf partial >&2"}, stderr: "partial"},
		{name: "unreachable", fail: "ssh: connect to host remote1 port 22: Connection refused", argv: []string{"true"},
			status: -1, startErr: true, unreachable: "remote1",
			reason: "cannot start: ssh to someone@remote1: ssh: connect to host remote1 port 22: Connection refused"},
		{name: "not authorized", fail: "someone@remote1: Permission denied (publickey).", argv: []string{"true"},
			status: -1, startErr: true, reason: "Permission denied (publickey)"},
		{name: "command not found", argv: []string{"no-such-program-xyz"}, status: -1, startErr: true,
			reason: "cannot start: on someone@remote1: command not found: no-such-program-xyz"},
		{name: "not executable", argv: []string{"/etc/passwd"}, status: -1, startErr: true,
			reason: "not an executable file: /etc/passwd"},
		{name: "missing workdir", argv: []string{"true"}, dir: "/nonexistent/dir", status: -1, startErr: true,
			reason: "cannot start: on someone@remote1: workdir /nonexistent/dir: no such directory, or no permission"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := newSpec(t, tc.argv...)
			spec.SSH = fakeSSH(t, tc.fail)
			spec.Hosts = []string{"remote1"}
			spec.Dir = tc.dir
			res := run(t, spec)
			if res.ExitStatus != tc.status || res.Signal != tc.signal || !strings.Contains(res.Reason, tc.reason) ||
				res.StartError != tc.startErr || res.Unreachable != tc.unreachable {
				t.Fatalf("got %+v\nwant status %d signal %q reason %q start error %v unreachable %q",
					res, tc.status, tc.signal, tc.reason, tc.startErr, tc.unreachable)
			}
			if tc.reason == "" && res.Reason != "" {
				t.Errorf("reason %q, want none", res.Reason)
			}
			if got := readFile(t, spec.Stderr); got != tc.stderr {
				t.Errorf("stderr %q, want %q", got, tc.stderr)
			}
			if !tc.startErr && (res.StartedAt.IsZero() || res.EndedAt.Before(res.StartedAt)) {
				t.Errorf("times %v .. %v", res.StartedAt, res.EndedAt)
			}
		})
	}
}

// An ssh job is refused before ssh runs when it cannot be described safely.
func TestSSH_Refused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Spec)
		reason string
	}{
		{"no user", func(s *Spec) { s.SSH.Dest[0].User = "" }, "no user to log in as"},
		{"bad env name", func(s *Spec) { s.Env = []string{"A-B=1"} }, `env entry "A-B=1"`},
		{"host like an option", func(s *Spec) { s.SSH.Dest[0].Host = "-oProxyCommand=x" }, "invalid host"},
		{"nul in argv", func(s *Spec) { s.Argv = []string{"echo", "a\x00b"} }, "NUL"},
		{"relative output without a workdir", func(s *Spec) { s.Stdout = "out.txt" }, "relative path"},
		{"hosts and destinations differ", func(s *Spec) { s.Hosts = []string{"a", "b"} }, "1 destinations for 2 hosts"},
		{"mpi argv like an option", func(s *Spec) { s.MPI = &MPI{}; s.Argv = []string{"--help"} }, "starts with '-'"},
		{"mpi as root", func(s *Spec) { s.MPI = &MPI{}; s.SSH.Dest[0].User = "root" }, "does not run a job as root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := newSpec(t, "true")
			spec.SSH = fakeSSH(t, "must not run")
			spec.Hosts = []string{"remote1"}
			spec.Dir = ""
			tc.mutate(&spec)
			res := run(t, spec)
			if !res.StartError || !strings.Contains(res.Reason, tc.reason) || res.Unreachable != "" {
				t.Fatalf("got %+v, want a start error with %q", res, tc.reason)
			}
		})
	}
}

// Cancel and walltime reach the job through the wrapper (here without
// sshd: the "remote" side is a local sh).
func TestSSH_CancelWithoutSSHD(t *testing.T) {
	spec := newSpec(t, "sh", "-c", `trap "" TERM; echo $$ > leader; sleep 300`)
	spec.SSH = fakeSSH(t, "")
	spec.Hosts = []string{"remote1"}
	spec.Walltime = 300 * time.Millisecond
	begin := time.Now()
	res := run(t, spec)
	if res.Reason != "walltime exceeded" || res.Signal != "SIGKILL" {
		t.Fatalf("got %+v", res)
	}
	// Generous, for a loaded machine; without the kill the job would run
	// for minutes.
	if d := time.Since(begin); d > waitBound {
		t.Errorf("took %v for 300 ms walltime + 200 ms grace", d)
	}
	leader := readPid(t, filepath.Join(spec.Dir, "leader"))
	eventually(t, "job gone", func() bool { return gone(leader) })
}
