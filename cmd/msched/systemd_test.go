package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// unitFile reads a systemd unit's Key=Value lines (comments and sections
// dropped; a key given twice keeps both values).
func unitFile(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: line %q is not Key=Value", path, line)
		}
		out[k] = append(out[k], v)
	}
	return out
}

// The systemd units in examples/systemd run commands this binary has,
// stop only the daemon (KillMode=process: README promises that stopping
// msched leaves jobs running), reload on SIGHUP, and the target starts all
// five daemons.
func TestSystemdUnits(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "systemd")
	units, err := filepath.Glob(filepath.Join(dir, "*.service"))
	if err != nil || len(units) == 0 {
		t.Fatalf("no units in %s: %v", dir, err)
	}
	for _, u := range units {
		kv := unitFile(t, u)
		if len(kv["ExecStart"]) != 1 {
			t.Fatalf("%s: %d ExecStart lines, want 1", u, len(kv["ExecStart"]))
		}
		args := strings.Fields(kv["ExecStart"][0])
		if filepath.Base(args[0]) != "msched" {
			t.Fatalf("%s: ExecStart runs %s", u, args[0])
		}
		instances := []string{""}
		if strings.Contains(u, "@") {
			instances = daemonNames
		}
		for _, inst := range instances {
			a := slices.Clone(args[1:])
			for i := range a {
				a[i] = strings.ReplaceAll(a[i], "%i", inst)
			}
			// --help parses the flags and the sub-command without running it.
			out, err := exec.Command(mschedBin, append(a, "--help")...).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Usage:") {
				t.Errorf("%s: msched %s --help: %v\n%s", u, strings.Join(a, " "), err, out)
			}
		}
		if slices.Contains(args, "daemon") {
			if got := kv["KillMode"]; !slices.Equal(got, []string{"process"}) {
				t.Errorf("%s: KillMode %v, want process (stopping msched must leave jobs running)", u, got)
			}
			if got := kv["ExecReload"]; len(got) != 1 || !strings.Contains(got[0], "-HUP $MAINPID") {
				t.Errorf("%s: ExecReload %v, want kill -HUP $MAINPID", u, got)
			}
		}
	}
	wants := strings.Fields(strings.Join(unitFile(t, filepath.Join(dir, "msched.target"))["Wants"], " "))
	for _, n := range daemonNames {
		if !slices.Contains(wants, "msched@"+n+".service") {
			t.Errorf("msched.target does not want msched@%s.service: %v", n, wants)
		}
	}
}
