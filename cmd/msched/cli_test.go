package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"msched/policy"
	"msched/spool"
)

// The spool is --spool, else MSCHED_SPOOL, else the installed system's
// (its configuration's spool key, else /var/spool/msched), else
// ./var/spool; with none there, the error says where msched looked and how
// to make one, and exits 3.
func TestLocate_Order(t *testing.T) {
	pl := nowhere(t)
	t.Setenv("MSCHED_SPOOL", "")
	mk := func(dir string) string {
		t.Helper()
		if _, err := spool.Create(dir); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	where := func(args ...string) (string, string, int) {
		t.Helper()
		out, errOut, code := cliAt(t, pl, append(args, "status", "--json")...)
		return out, errOut, code
	}

	_, errOut, code := where()
	for _, want := range []string{"--spool (not given)", "MSCHED_SPOOL (not set)", pl.SystemConfig, pl.SystemSpool, pl.LocalSpool, "msched create"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("no spool anywhere: the error does not say %q:\n%s", want, errOut)
		}
	}
	if code != exitNotFound {
		t.Errorf("no spool anywhere: exit %d; want %d", code, exitNotFound)
	}

	mk(pl.LocalSpool)
	if _, errOut, code := where(); code != exitOK {
		t.Errorf("./var/spool: exit %d %s", code, errOut)
	}
	// Installed: the system's spool, though ./var/spool exists.
	mk(pl.SystemSpool)
	put(t, openAt(t, pl.SystemSpool), spool.Queued, queuedJob(7, "sys", "root", 0, time.Now().UTC()))
	if out, errOut, _ := where(); !strings.Contains(out, "J000007") {
		t.Errorf("installed system: not its spool: %s %s", out, errOut)
	}
	// Its configuration names another spool.
	other := mk(filepath.Join(t.TempDir(), "elsewhere"))
	put(t, openAt(t, other), spool.Queued, queuedJob(8, "other", "root", 0, time.Now().UTC()))
	if err := os.MkdirAll(filepath.Dir(pl.SystemConfig), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pl.SystemConfig, []byte("spool: "+other+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, _ := where(); !strings.Contains(out, "J000008") {
		t.Errorf("installed system whose configuration names the spool: %s %s", out, errOut)
	}
	// MSCHED_SPOOL before the system's; --spool before MSCHED_SPOOL.
	env := mk(filepath.Join(t.TempDir(), "env"))
	put(t, openAt(t, env), spool.Queued, queuedJob(9, "env", "root", 0, time.Now().UTC()))
	t.Setenv("MSCHED_SPOOL", env)
	if out, errOut, _ := where(); !strings.Contains(out, "J000009") {
		t.Errorf("MSCHED_SPOOL: %s %s", out, errOut)
	}
	if out, errOut, _ := where("--spool", pl.LocalSpool); strings.Contains(out, "J00000") {
		t.Errorf("--spool: not the spool named: %s %s", out, errOut)
	}
	missing := filepath.Join(t.TempDir(), "none")
	if _, errOut, code := where("--spool", missing); code != exitNotFound || !strings.Contains(errOut, "(named by --spool)") || !strings.Contains(errOut, "msched create "+missing) {
		t.Errorf("--spool naming nothing: exit %d %s", code, errOut)
	}
}

func openAt(t *testing.T, dir string) *spool.Spool {
	t.Helper()
	sp, err := spool.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// msched create DIR makes what the first msched up makes (up's own code),
// and a spool that the other commands then find.
func TestCreate_MakesASpoolAsUpDoes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	out, errOut, code := cliAt(t, nowhere(t), "create", dir)
	if code != exitOK {
		t.Fatalf("create: exit %d %s", code, errOut)
	}
	for _, p := range []string{"submitted", "control", "db/hosts.yaml", "msched.yaml", "models/sleep.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("create made no %s: %v", p, err)
		}
	}
	if !strings.Contains(out, "(created: every key at its default)") || !strings.Contains(out, "msched up --spool "+dir) {
		t.Errorf("create's words:\n%s", out)
	}
	if _, errOut, code := cliAt(t, nowhere(t), "--spool", dir, "status"); code != exitOK {
		t.Errorf("status on the new spool: exit %d %s", code, errOut)
	}
	out, _, code = cliAt(t, nowhere(t), "create", dir)
	if code != exitOK || strings.Contains(out, "created") {
		t.Errorf("create again: exit %d; it should leave everything as it is:\n%s", code, out)
	}
	if _, _, code := cliAt(t, nowhere(t), "--spool", dir, "create", dir+"x"); code != exitUsage {
		t.Errorf("create with two spools named: exit %d; want %d", code, exitUsage)
	}
}

// --version names the module version and, when the binary was built from
// a checkout with VCS stamping, the commit.
func TestVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-11-24T12:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := versionOf(bi, "linux/amd64"), "v1.2.3 commit 0123456789ab (2026-11-24T12:00:00Z, modified) go1.26.0 linux/amd64"; got != want {
		t.Errorf("versionOf = %q; want %q", got, want)
	}
	out, err := exec.Command(mschedBin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "msched ") || !strings.Contains(string(out), "go1.") {
		t.Errorf("msched --version: %v %q", err, out)
	}
}

// Exit codes by kind: wrong flags or arguments 2 (with the usage line),
// no such job 3, refused 4.
func TestExitCodes(t *testing.T) {
	sp := emptySpool(t)
	uid := 4242
	put(t, sp, spool.Queued, queuedJob(1, "theirs", "someone", uid, time.Now().UTC()))
	put(t, sp, spool.Finished, queuedJob(2, "done", "root", 0, time.Now().UTC()))
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"nonsense"}, exitUsage, `unknown command "nonsense" for "msched"`},
		{[]string{"stat"}, exitUsage, "did you mean status?"},
		{[]string{"status", "--nonsense"}, exitUsage, "usage: msched status"},
		{[]string{"bench", "nonsense"}, exitUsage, "usage: msched bench COMMAND"},
		{[]string{"up", "extra"}, exitUsage, "usage: msched up"},
		{[]string{"daemon", "bogus"}, exitUsage, `unknown daemon "bogus"`},
		{[]string{"status", "J1x"}, exitUsage, "is not a job id"},
		{[]string{"history", "--since", "soon"}, exitUsage, "--since"},
		{[]string{"status", "J000003"}, exitNotFound, "no job J000003"},
		{[]string{"cancel", "3"}, exitNotFound, "no such job"},
		{[]string{"cancel", "2"}, exitRefused, "already ended"},
		{[]string{"status"}, exitOK, ""},
	} {
		_, errOut, code := cli(t, sp, c.args...)
		if code != c.code || !strings.Contains(errOut, c.says) {
			t.Errorf("msched %v: exit %d, %q; want %d saying %q", c.args, code, errOut, c.code, c.says)
		}
	}
	// Root may cancel anyone's job; the binary's exit status is the code.
	cmd := exec.Command(mschedBin, "--spool", sp.Root(), "cancel", "J9")
	if err := cmd.Run(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != exitNotFound {
		t.Errorf("the binary's exit status for cancel J9: %v", err)
	}
}

// An MSCHED_* variable's error names the variable and what it said, never
// "must be ≥ 1, got 0" for a word viper read as 0, and never blames the
// configuration file.
func TestConfig_EnvErrorsNameTheVariable(t *testing.T) {
	sp := emptySpool(t)
	if err := os.WriteFile(filepath.Join(sp.Root(), "msched.yaml"), []byte("ga:\n  window: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ val, want string }{
		{"abc", `MSCHED_GA_WINDOW="abc": ga.window: abc is not a whole number`},
		{"1e3", `MSCHED_GA_WINDOW="1e3": ga.window: 1e3 is not a whole number`},
		{" 5", `MSCHED_GA_WINDOW=" 5": ga.window:  5 is not a whole number`},
		{"0", `MSCHED_GA_WINDOW="0": ga.window: must be ≥ 1, got 0`},
	} {
		t.Setenv("MSCHED_GA_WINDOW", c.val)
		cmds := [][]string{{"status"}, {"up", "--web", "off"}}
		if c.val == "0" {
			cmds = cmds[1:] // a number, out of range: up's to check, not status's
		}
		for _, args := range cmds {
			_, errOut, code := cli(t, sp, args...)
			if code != exitError || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "msched.yaml") {
				t.Errorf("MSCHED_GA_WINDOW=%q, msched %v: exit %d %q; want %q", c.val, args, code, errOut, c.want)
			}
		}
	}
	t.Setenv("MSCHED_GA_WINDOW", "")
	// A stall of 0 would be the policy's default (20 for plan.stall): refused, naming the
	// values that mean something.
	t.Setenv("MSCHED_PLAN_STALL", "0")
	if _, errOut, code := cli(t, sp, "up", "--web", "off"); code != exitError || !strings.Contains(errOut, `MSCHED_PLAN_STALL="0": plan.stall: must be ≥ 1 (generations without improvement), or negative (never stop early)`) {
		t.Errorf("MSCHED_PLAN_STALL=0: exit %d %q", code, errOut)
	}
	t.Setenv("MSCHED_PLAN_STALL", "")
	t.Setenv("MSCHED_LEARNING_WINDOW", "0")
	if _, errOut, _ := cli(t, sp, "up", "--web", "off"); !strings.Contains(errOut, `MSCHED_LEARNING_WINDOW="0": learning.window: must be ≥ 1`) {
		t.Errorf("MSCHED_LEARNING_WINDOW=0: %q", errOut)
	}
}

// msched up checks the configuration, the hosts file and the models before
// it says it is running.
func TestUp_ChecksBeforeRunning(t *testing.T) {
	for _, c := range []struct {
		name, env, val, want string
	}{
		{"policy", "MSCHED_POLICY", "bogus", `policy: "bogus" is not one of`},
		{"models", "MSCHED_MODELS", "", "config: models"},
		{"hosts", "MSCHED_HOSTS", "/nonexistent/hosts.yaml", "/nonexistent/hosts.yaml"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := emptySpool(t)
			val := c.val
			if c.name == "models" {
				val = filepath.Join(t.TempDir(), "models")
				os.MkdirAll(val, 0o755)
				os.WriteFile(filepath.Join(val, "broken.yaml"), []byte("kind: nonsense\n"), 0o644)
			}
			t.Setenv(c.env, val)
			out, errOut, code := cli(t, sp, "up", "--web", "off")
			if code == exitOK || !strings.Contains(errOut, c.want) || strings.Contains(out, "running") {
				t.Errorf("up with a bad %s: exit %d\nstdout:\n%s\nstderr: %s", c.name, code, out, errOut)
			}
		})
	}
}

// The policy key's comment in msched.yaml lists every policy there is.
func TestConfig_PolicyCommentListsEveryPolicy(t *testing.T) {
	file := string(defaultConfigFile())
	i := strings.Index(file, "\npolicy:")
	if i < 0 {
		t.Fatal("no policy key in the default file")
	}
	comment := file[strings.LastIndex(file[:i], "\n#"):i]
	for _, p := range policy.Names() {
		if !strings.Contains(comment, " "+p+",") && !strings.Contains(comment, " "+p+":") {
			t.Errorf("the policy key's comment does not list %s:%s", p, comment)
		}
	}
}
