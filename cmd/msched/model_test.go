package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// modelsDir copies the example models that the tests use: amdahl-sh (an
// external sh/awk program) and eq2 (built in).
func modelsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"amdahl-sh.sh", "amdahl-sh.yaml", "eq2.yaml"} {
		src := filepath.Join("..", "..", "examples", "models", f)
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(src)
		if err := os.WriteFile(filepath.Join(dir, f), b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runMsched runs msched in this process, on a spool of its own, with stdin,
// and returns stdout.
func runMsched(t *testing.T, ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetArgs(append([]string{"--spool", filepath.Join(t.TempDir(), "spool")}, args...))
	root.SetIn(stdin)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

// processesUnder lists the live processes whose command line names a path
// under dir.
func processesUnder(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(dir)) {
			continue
		}
		if st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); containsState(st, 'Z') {
			continue // a zombie is not running
		}
		found = append(found, e.Name()+": "+string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
	}
	return found
}

// TestModelServe_RoundTrip drives `msched model serve` interactively over
// pipes: each request is answered before the next is written, so replies
// must be flushed one by one. The model is the external sh/awk program, so
// the session goes client → msched → program and back.
func TestModelServe_RoundTrip(t *testing.T) {
	dir := modelsDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		root := newRoot()
		root.SetArgs([]string{"--spool", filepath.Join(t.TempDir(), "spool"), "model", "serve", "amdahl-sh", "--models", dir})
		root.SetIn(inR)
		root.SetOut(outW)
		err := root.ExecuteContext(ctx)
		outW.Close()
		done <- err
	}()
	// Bound every read: a missing flush would block forever.
	stop := context.AfterFunc(ctx, func() { outR.CloseWithError(ctx.Err()) })
	defer stop()
	replies := bufio.NewReader(outR)
	ask := func(req string, lines int) []string {
		t.Helper()
		if _, err := io.WriteString(inW, req+"\n"); err != nil {
			t.Fatalf("write %q: %v", req, err)
		}
		var got []string
		for range lines {
			l, err := replies.ReadString('\n')
			if err != nil {
				t.Fatalf("reply to %q: %v (so far %q)", req, err, got)
			}
			got = append(got, strings.TrimSuffix(l, "\n"))
		}
		return got
	}
	steps := []struct {
		req  string
		want []string
	}{
		{"list", []string{"C_com 0.25", "T1 8", "f 0", "."}},
		{"set f 0.1", []string{"ok"}},
		{"hrduse SunUltra1:hardware/CPU_LOAD=0 SunUltra1:hardware/CPU_LOAD=1", []string{"ok"}},
		{"eval", []string{"9.3"}},
		{"set N 20000", []string{`error: unknown parameter "N" (parameters: C_com T1 f)`}},
		{"set f many", []string{`error: set f: "many" is not a finite number`}},
		{"hrduse Cray:hardware/CPU_LOAD=0", []string{`error: host 1: unknown architecture "Cray" (known: SunSPARC10 SunUltra1 SunUltra10 SunUltra5 aarch64 generic x86_64)`}},
		{"set f 3", []string{"ok"}},
		{"eval", []string{`error: models: model "amdahl-sh" (external): set f 3: f = 3, want 0 <= f <= 1`}},
		{"set f 0", []string{"ok"}},
		{"hrduse generic generic", []string{"ok"}},
		{"eval", []string{"4.5"}},
	}
	for _, s := range steps {
		got := ask(s.req, len(s.want))
		if strings.Join(got, "\n") != strings.Join(s.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", s.req, got, s.want)
		}
	}
	if _, err := io.WriteString(inW, "quit\n"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	inW.Close()
	if rest, _ := io.ReadAll(replies); len(rest) != 0 {
		t.Errorf("output after quit: %q", rest)
	}
	// serve closed the library: the model program is gone.
	deadline := time.Now().Add(10 * time.Second) // a bound for a loaded machine; gone long before
	for len(processesUnder(dir)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if left := processesUnder(dir); len(left) > 0 {
		t.Errorf("model processes left after serve: %v", left)
	}
}

func TestModelEval(t *testing.T) {
	dir := modelsDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cases := []struct {
		args []string
		want string // stdout, or the error's text
		err  bool
	}{
		{[]string{"amdahl-sh", "--param", "f=0.1", "--hosts", "SunUltra1,SunUltra1:1"}, "9.3\n", false},
		{[]string{"amdahl-sh", "--hosts", "generic, generic:hardware/CPU_LOAD=0"}, "4.5\n", false},
		{[]string{"eq2", "--param", "C_cpu=100", "--param", "C_com=1", "--hosts", "x86_64:3"}, "17\n", false},
		{[]string{"eq2", "--hosts", "Cray"}, `unknown architecture "Cray"`, true},
		{[]string{"eq2", "--param", "C_cpu", "--hosts", "generic"}, `--param "C_cpu": want NAME=NUMBER`, true},
		{[]string{"amdahl-sh", "--param", "N=1", "--hosts", "generic"}, `unknown parameter "N"`, true},
		{[]string{"nope", "--hosts", "generic"}, `unknown model "nope"`, true},
		{[]string{"eq2"}, `"hosts" not set`, true},
	}
	for _, c := range cases {
		out, err := runMsched(t, ctx, strings.NewReader(""), append([]string{"model", "eval", "--models", dir}, c.args...)...)
		switch {
		case c.err && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: %q, %v; want an error containing %q", c.args, out, err, c.want)
		case !c.err && (err != nil || out != c.want):
			t.Errorf("%v: %q, %v; want %q", c.args, out, err, c.want)
		}
	}
}

func TestModelList(t *testing.T) {
	dir := modelsDir(t)
	out, err := runMsched(t, context.Background(), nil, "model", "list", "--models", dir)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := [][]string{
		{"NAME", "KIND", "PARAMS", "DESCRIPTION"},
		{"amdahl-sh", "external", "C_com=0.25", "T1=8", "f=0"},
		{"eq2", "warwick", "C_com=0.25", "C_cpu=8"},
	}
	if len(lines) != len(want) {
		t.Fatalf("list:\n%s", out)
	}
	for i, w := range want {
		f := strings.Fields(lines[i])
		if len(f) < len(w) || strings.Join(f[:len(w)], " ") != strings.Join(w, " ") {
			t.Errorf("line %d: %q, want it to start %q", i+1, lines[i], w)
		}
	}
	// Listing does not start model programs.
	if left := processesUnder(dir); len(left) > 0 {
		t.Errorf("model processes after list: %v", left)
	}
}

// TestModelServe_Binary runs the built msched, as a user would: the
// session over its real stdin and stdout, and no model process outlives it.
func TestModelServe_Binary(t *testing.T) {
	dir := modelsDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, mschedBin, "--spool", filepath.Join(t.TempDir(), "spool"), "model", "serve", "amdahl-sh", "--models", dir)
	cmd.Stdin = strings.NewReader("hrduse x86_64 x86_64:1\nset T1 100\neval\nhrduse generic:-2\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("msched model serve: %v", err)
	}
	// 100·(1/2)/(25/2) + 0.25·2 = 4.5
	want := "ok\nok\n4.5\nerror: host \"generic:-2\": load must be a number ≥ 0\n"
	if string(out) != want {
		t.Errorf("replies %q, want %q", out, want)
	}
	if left := processesUnder(dir); len(left) > 0 {
		t.Errorf("model processes left after msched exited: %v", left)
	}
}
