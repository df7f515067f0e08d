package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// allocated is the bytes fn allocates (runtime.MemStats.TotalAlloc, the
// whole process: the tests that use it do not run in parallel).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// parseProblem parses data as a submission and returns the reason it is
// rejected for, failing if it is accepted or the reason is over MaxReason.
func parseProblem(t *testing.T, data string) string {
	t.Helper()
	j, err := ParseSubmission("job.yaml", []byte(data))
	if err == nil {
		t.Fatalf("accepted: %d words, %d variables", len(j.Command), len(j.Env))
	}
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("%T %v is not a *ParseError", err, err)
	}
	d := pe.Detail()
	if len(d) > MaxReason {
		t.Fatalf("a reason of %d bytes, over MaxReason (%d): %.300s…", len(d), MaxReason, d)
	}
	return d
}

func words(n, size int) string {
	return "command: [" + strings.Repeat(strings.Repeat("a", size)+", ", n-1) + "a]\n"
}

func env(n, size int) string {
	var b strings.Builder
	b.WriteString("command: [a]\nenv:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  V%d: %s\n", i, strings.Repeat("x", size))
	}
	return b.String()
}

// Issue 13: an argv of 262,144 words made sched use 830 MB. Argv and env
// are bounded (count, bytes, one word) with a reason that says which bound,
// and a submission far over them is refused before yaml.v3 builds its tree.
func TestParse_BoundsArgvAndEnv(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{"argv of 262,144 words", words(262144, 1), "job.yaml: too many items for a job file: 262146 places where a YAML item may begin"},
		{"argv over MaxArgs", words(MaxArgs+1, 1), fmt.Sprintf("job.yaml:1: command: %d words, over the limit of %d", MaxArgs+1, MaxArgs)},
		{"argv over MaxArgBytes", words(300, 1000), "job.yaml:1: command: 299301 bytes, over the limit of 262144 (256 KiB)"},
		{"one word over MaxArgLen", "command: [a, " + strings.Repeat("b", MaxArgLen+1) + "]\n", "job.yaml:1: command[1]: 131072 bytes, over the limit of 131071 for one word"},
		{"env over MaxEnv", env(MaxEnv+1, 1), fmt.Sprintf("job.yaml:2: env: %d entries, over the limit of %d", MaxEnv+1, MaxEnv)},
		{"env over MaxEnvBytes", env(100, 1500), "job.yaml:2: env: 150490 bytes, over the limit of 131072 (128 KiB)"},
		{"model.params over MaxParams", "command: [a]\nmodel: {name: m, params: {" + strings.Repeat("p: 1, ", 1) + params(MaxParams) + "}}\n",
			fmt.Sprintf("job.yaml:2: model.params: %d entries, over the limit of %d", MaxParams+1, MaxParams)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseProblem(t, tc.data); !strings.HasPrefix(got, tc.want) {
				t.Errorf("got  %.300s\nwant %s…", got, tc.want)
			}
		})
	}
	for _, ok := range []string{words(MaxArgs, 1), words(200, 1000), env(MaxEnv, 1), env(80, 1500)} {
		if _, err := ParseSubmission("job.yaml", []byte(ok)); err != nil {
			t.Errorf("a job within the bounds rejected: %.300v", err)
		}
	}
}

func params(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "p%d: 1, ", i)
	}
	return b.String()
}

// The 262,144-word argv (512 KiB, within MaxJobFile) is refused from a
// count of its bytes, before yaml.v3 builds a tree of it: today's parse of
// it allocated 74 MB, and init judges eight claims at once.
func TestParse_HugeArgvRefusedBeforeParsing(t *testing.T) {
	data := []byte(words(262144, 1))
	var err error
	n := allocated(func() { _, err = ParseSubmission("job.yaml", data) })
	if err == nil {
		t.Fatal("accepted")
	}
	if n > 1<<20 {
		t.Errorf("refusing it allocated %d bytes; want under 1 MiB (refused before parsing)", n)
	}
}

// Issue 13, item 6: a 20 KB file nested 10,000 deep was rejected with a
// 30 KB field path as its reason (and its field path cost 156 MB to find).
// The depth is bounded right after yaml.v3 parses (it stops at 10,000
// itself), before anything walks the tree.
func TestParse_DeepNesting(t *testing.T) {
	var block strings.Builder
	block.WriteString("command: [a]\nhosts:\n")
	for i := 1; i < 150; i++ {
		block.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	for _, tc := range []struct{ name, data, want string }{
		{"flow 10,000 deep", "command: [a]\nname: " + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + "\n", "job.yaml:2: nested more than 16 levels deep"},
		{"block 150 deep", block.String(), "job.yaml:17: nested more than 16 levels deep"},
		{"just too deep", "command: [a]\nname: " + strings.Repeat("[", 16) + strings.Repeat("]", 16) + "\n", "job.yaml:2: nested more than 16 levels deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			n := allocated(func() { got = parseProblem(t, tc.data) })
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("got  %.300s\nwant %s…", got, tc.want)
			}
			if n > 32<<20 {
				t.Errorf("rejecting a %d-byte file allocated %d MB", len(tc.data), n>>20)
			}
		})
	}
	// 16 deep is within the bound: rejected for what it is, not its depth.
	got := parseProblem(t, "command: [a]\nname: "+strings.Repeat("[", 15)+strings.Repeat("]", 15)+"\n")
	if !strings.HasPrefix(got, "job.yaml:2: name") || !strings.HasSuffix(got, ": want a string, got a list") {
		t.Errorf("got %s, want name: want a string, got a list", got)
	}
}

// A reason lists the first problems, each on a line of bounded length, and
// counts the rest: a rejection never carries the file back in its reason.
func TestParseError_ReasonIsBounded(t *testing.T) {
	var many strings.Builder
	many.WriteString("command: [a]\n")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&many, "unknown%d: 1\n", i)
	}
	long := strings.Repeat("k", 200000)
	for _, tc := range []struct {
		name, data string
		want       []string // lines of the reason, each a prefix
	}{
		{"200 unknown fields", many.String(), []string{`job.yaml:2: unknown field "unknown0"`, `job.yaml:3: unknown field "unknown1"`,
			`job.yaml:4: `, `job.yaml:5: `, `job.yaml:6: `, `job.yaml:7: `, `job.yaml:8: `, `job.yaml:9: `, `job.yaml:10: `,
			`job.yaml:11: unknown field "unknown9"`, "job.yaml: … and 190 more problems"}},
		{"a long value", "command: [a]\nhosts: {count: \"" + long + "\"}\n", []string{`job.yaml:2: hosts.count: want an integer, got a string "kkkkkkkkk`}},
		{"a long key", "command: [a]\n" + long[:1000] + ": 1\n", []string{`job.yaml:2: unknown field "kkkkkkkk`}},
		{"a long env name", "command: [a]\nenv: {" + long[:1000] + "-: x}\n", []string{`job.yaml:2: env.kkkkkk`}},
		{"a long walltime", "command: [a]\nwalltime: " + long + "\n", []string{`job.yaml:2: walltime: "kkkkkk`}},
		{"many bad env names", env(0, 0) + "  " + strings.Repeat("1: x\n  ", 0) + badEnv(200), []string{"job.yaml:3: env.0X: not a variable name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Split(parseProblem(t, tc.data), "\n")
			if len(got) < len(tc.want) {
				t.Fatalf("got %d lines, want %d: %q", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("line %d: got %.200q, want %q…", i, got[i], w)
				}
			}
			for _, l := range got {
				if len(l) > maxLine {
					t.Errorf("a line of %d bytes: %.200q…", len(l), l)
				}
			}
		})
	}
	if (maxProblems+1)*(maxLine+1) > MaxReason {
		t.Errorf("%d lines of %d bytes can exceed MaxReason", maxProblems+1, maxLine)
	}
	// A reason made elsewhere (a refused claim) is held to the bound too.
	pe := &ParseError{File: strings.Repeat("f", 255), Problems: []Problem{{Msg: long}, {Msg: "x"}}}
	if d := pe.Detail(); len(d) > MaxReason || !strings.HasSuffix(d, "x") {
		t.Errorf("Detail of %d bytes: %.100q…", len(d), d)
	}
}

func badEnv(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%dX: x\n  ", i)
	}
	return b.String()
}

// A job file needs no anchors and aliases, and an alias counts what it
// names again at each use, beyond what the bounds on bytes and items see:
// a job file may not use one (FuzzParse found a history of aliases of a
// large mapping that took Parse minutes and gigabytes).
func TestParse_NoAliases(t *testing.T) {
	for _, data := range []string{
		"x: &w " + strings.Repeat("a", 100000) + "\ncommand: [" + strings.Repeat("*w, ", 2000) + "a]\n",
		"base: &b {count: 2}\ncommand: [a]\nhosts: *b\n",
	} {
		if got := parseProblem(t, data); !strings.Contains(got, "anchors and aliases are not allowed in a job file") {
			t.Errorf("got %s", got)
		}
		if _, err := Parse("job.yaml", []byte(data)); err == nil {
			t.Error("Parse accepted an alias")
		}
	}
	var e strings.Builder
	e.WriteString("command: [a]\nx: &e {")
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&e, "k%d: 1, ", i)
	}
	e.WriteString("}\nhistory: [" + strings.Repeat("*e, ", 3000) + "]\n")
	var err error
	if n := allocated(func() { _, err = Parse("job.yaml", []byte(e.String())) }); err == nil || n > 32<<20 {
		t.Errorf("a history of 3,000 aliases of a 3,000-key mapping: %d MB allocated, %.200v", n>>20, err)
	}
	// An anchor alone is harmless, and a daemon's job files never have one.
	if _, err := ParseSubmission("job.yaml", []byte("command: &c [a]\n")); err != nil {
		t.Errorf("an anchor without an alias: %v", err)
	}
}

// yaml.v3 cuts a value over 10 bytes in its message to 7 and "...": the
// problem still names the field.
func TestParse_LongValueNamesItsField(t *testing.T) {
	got := parseProblem(t, "command: [a]\nhosts: {count: twelve-hosts-please}\n")
	if want := `job.yaml:2: hosts.count: want an integer, got a string "twelve-hosts-please"`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// A configured bound (init.max_job_bytes) holds for Submit and for the
// check msched submit makes, and only a sensible one is taken.
func TestSpool_SetMaxJobFile(t *testing.T) {
	s := newSpool(t)
	if s.JobFileLimit() != MaxJobFile {
		t.Fatalf("default bound %d, want MaxJobFile", s.JobFileLimit())
	}
	for _, n := range []int64{0, MinJobFile - 1, MaxJobFileSetting + 1, -1} {
		if err := s.SetMaxJobFile(n); err == nil {
			t.Errorf("SetMaxJobFile(%d) accepted", n)
		}
	}
	if err := s.SetMaxJobFile(2048); err != nil {
		t.Fatal(err)
	}
	view := s.As(Init)
	if view.JobFileLimit() != 2048 {
		t.Errorf("a view's bound %d, want 2048", view.JobFileLimit())
	}
	big := []byte("command: [a]\n" + strings.Repeat("#\n", 1100))
	if _, err := s.Submit("big.yaml", big); err == nil || !strings.Contains(err.Error(), "over the limit of 2048 bytes") {
		t.Errorf("Submit of %d bytes over a bound of 2048: %v", len(big), err)
	}
	if _, err := s.CheckSubmission("big.yaml", big); err == nil || !strings.Contains(err.Error(), "too large: 2213 bytes, over the limit of 2048 bytes") {
		t.Errorf("CheckSubmission of %d bytes over a bound of 2048: %v", len(big), err)
	}
	if _, err := s.CheckSubmission("ok.yaml", []byte("command: [a]\n")); err != nil {
		t.Error(err)
	}
	if _, err := s.CheckSubmission("forged.yaml", []byte("command: [a]\nuser: root\n")); err == nil {
		t.Error("CheckSubmission accepted a submission that sets user")
	}
}

// msched submit reads the file it is given as init reads a claim: no link
// followed, no FIFO waited on, a regular file within the bound, refused
// before more than that is read.
func TestReadJobFile(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	os.WriteFile(p("job.yaml"), []byte(validJob), 0o644)
	os.Symlink("job.yaml", p("link.yaml"))
	os.Mkdir(p("dir.yaml"), 0o755)
	if err := syscall.Mkfifo(p("fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	big, _ := os.Create(p("big.yaml"))
	big.Truncate(200 << 20) // sparse
	big.Close()

	if b, err := ReadJobFile(p("job.yaml"), MaxJobFile); err != nil || string(b) != validJob {
		t.Errorf("a job file: %q, %v", b, err)
	}
	for name, want := range map[string]string{
		"link.yaml":    "a symbolic link, not a file",
		"dir.yaml":     "a directory, not a regular file",
		"fifo.yaml":    "a FIFO, not a regular file",
		"/dev/null":    "a device, not a regular file",
		"big.yaml":     "too large: 209715200 bytes, over the limit of 1048576 bytes (1 MiB)",
		"missing.yaml": "no such file",
	} {
		path := name
		if !filepath.IsAbs(name) {
			path = p(name)
		}
		var err error
		n := allocated(func() { _, err = ReadJobFile(path, MaxJobFile) })
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming it and saying %q", name, err, want)
		}
		if n > 1<<20 {
			t.Errorf("%s: refusing it allocated %d bytes", name, n)
		}
	}
	if _, err := ReadJobFile(p("missing.yaml"), MaxJobFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v, want os.ErrNotExist", err)
	}
}

// FuzzParse found that yaml.v3 compares every two keys of a mapping and
// adds an error for each equal pair: 3,000 copies of one env name (18 KB)
// took 8 s and 2.6 GB on the code before, with a 189 MB reason. Duplicates
// are found through a set before yaml.v3 decodes, and a mapping has at
// most maxMapping entries.
func TestParse_DuplicateKeysAreCheap(t *testing.T) {
	var got string
	data := "command: [a]\nenv: {" + strings.Repeat("A: x, ", maxMapping) + "}\n"
	if n := allocated(func() { got = parseProblem(t, data) }); n > 8<<20 {
		t.Errorf("rejecting %d duplicate keys allocated %d MB", maxMapping, n>>20)
	}
	lines := strings.Split(got, "\n")
	if len(lines) != maxProblems+1 || lines[0] != "job.yaml:2: env.A: given twice (first at line 2)" ||
		lines[maxProblems] != fmt.Sprintf("job.yaml: … and %d more problems", maxMapping-1-maxProblems) {
		t.Errorf("got %q", lines)
	}
	data = "command: [a]\nenv: {" + strings.Repeat("A: x, ", 3000) + "}\n"
	if n := allocated(func() { got = parseProblem(t, data) }); n > 8<<20 {
		t.Errorf("rejecting 3,000 duplicate keys allocated %d MB", n>>20)
	}
	if want := fmt.Sprintf("job.yaml:2: env: 3000 entries, over the limit of %d", maxMapping); !strings.HasPrefix(got, want) {
		t.Errorf("got %s, want %s…", got, want)
	}
}
