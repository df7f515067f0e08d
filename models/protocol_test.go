package models_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"msched/models"
)

// converse runs a whole session: the requests, one per line, then end of
// input. It returns the reply lines.
func converse(t *testing.T, s *models.Session, requests ...string) []string {
	t.Helper()
	var out strings.Builder
	in := strings.NewReader(strings.Join(requests, "\n") + "\n")
	if err := s.Serve(ctxFor(t, 30*time.Second), in, &out); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
}

func checkReplies(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("replies\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if strings.HasSuffix(want[i], "…") {
			if !strings.HasPrefix(got[i], strings.TrimSuffix(want[i], "…")) {
				t.Errorf("reply %d: %q, want it to start %q", i+1, got[i], strings.TrimSuffix(want[i], "…"))
			}
		} else if got[i] != want[i] {
			t.Errorf("reply %d: %q, want %q", i+1, got[i], want[i])
		}
	}
}

// TestSession_BuiltInModel serves the testdata solver (amdahl, T1 600,
// f 0.1): the paper's Fig. 5 session, and every error.
func TestSession_BuiltInModel(t *testing.T) {
	lib := loadLib(t, filepath.Join("testdata", "models"))
	s, err := lib.Session(context.Background(), "solver")
	if err != nil {
		t.Fatal(err)
	}
	got := converse(t, s,
		"list",
		"set f 0.25",
		"",     // ignored
		"eval", // no hosts yet
		"hrduse SunUltra1:hardware/CPU_LOAD=0 SunUltra1:hardware/CPU_LOAD=1",
		"eval",                        // 600·(0.25 + 0.75/2)/0.5 = 750
		"hrduse SunUltra10 generic:0", // the short forms
		"eval",                        // 600·(0.25 + 0.375)/1 = 375
		"set N 20000",
		"set f x",
		"set f Inf",
		"set f",
		"set f 2",
		"eval", // the model's own check
		"hrduse Cray",
		"hrduse generic:-1",
		"hrduse",
		"frobnicate",
		"list",
		"quit",
		"eval", // after quit: never read
	)
	checkReplies(t, got,
		"T1 600", "f 0.1", ".",
		"ok",
		"error: no hosts: send hrduse first",
		"ok",
		"750",
		"ok",
		"375",
		`error: unknown parameter "N" (parameters: T1 f)`,
		`error: set f: "x" is not a finite number`,
		`error: set f: "Inf" is not a finite number`,
		"error: usage: set NAME VALUE",
		"ok",
		`error: models: model "solver" (amdahl): parameter f = 2, want in [0, 1]`,
		`error: host 1: unknown architecture "Cray" (known: …`,
		`error: host "generic:-1": load must be a number ≥ 0`,
		"error: usage: hrduse ARCH[:hardware/CPU_LOAD=L] (one per host)",
		`error: unknown request "frobnicate" (requests: list, set, hrduse, eval, quit)`,
		"T1 600", "f 2", ".",
	)
}

func TestSession_ListsUnsetAndTableParameters(t *testing.T) {
	lib := loadLib(t, filepath.Join("testdata", "models"))
	s, err := lib.Session(context.Background(), "nodefaults")
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := lib.Spec("nodefaults")
	got := converse(t, s, "list")
	if got[len(got)-1] != "." || !strings.Contains(strings.Join(got, "\n"), " -") {
		t.Errorf("%s model without defaults lists %q, want its parameters with \"-\" values", spec.Kind, got)
	}
	s, err = lib.Session(context.Background(), "measured")
	if err != nil {
		t.Fatal(err)
	}
	checkReplies(t, converse(t, s, "list", "set x 1"), ".", `error: unknown parameter "x" (parameters: )`)
}

// TestSession_ExternalModel serves the example program through msched:
// msched is the server, and the program behind it.
func TestSession_ExternalModel(t *testing.T) {
	lib := exampleLib(t, nil)
	s, err := lib.Session(context.Background(), "amdahl-sh")
	if err != nil {
		t.Fatal(err)
	}
	checkReplies(t, converse(t, s,
		"list", "set f 0.1", "hrduse SunUltra1:hardware/CPU_LOAD=0 SunUltra1:hardware/CPU_LOAD=1", "eval",
		"set N 1", "hrduse Cray", "set f 3", "eval"),
		"C_com 0.25", "T1 8", "f 0", ".", "ok", "ok", "9.3",
		`error: unknown parameter "N" (parameters: C_com T1 f)`,
		`error: host 1: unknown architecture "Cray" (known: …`,
		"ok",
		`error: models: model "amdahl-sh" (external): set f 3: f = 3, want 0 <= f <= 1`,
	)
}

// TestSession_PipelinedAndCRLF: a client may send requests ahead of the
// replies, with "\r\n" line ends; the last line needs no newline.
func TestSession_PipelinedAndCRLF(t *testing.T) {
	lib := loadLib(t, filepath.Join("testdata", "models"))
	s, _ := lib.Session(context.Background(), "particles")
	var out strings.Builder
	in := strings.NewReader("hrduse generic\r\nset C_com 0\r\neval")
	if err := s.Serve(context.Background(), in, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "ok\nok\n1000\n" {
		t.Errorf("replies %q", out.String())
	}
	// A line over the limit ends the session with an error.
	err := s.Serve(context.Background(), io.MultiReader(strings.NewReader("set "), strings.NewReader(strings.Repeat("x", 70<<10))), io.Discard)
	if err == nil {
		t.Error("a 70 KiB line was accepted")
	}
}

func TestParseHost(t *testing.T) {
	cases := []struct {
		in   string
		want models.HostSpec
		err  bool
	}{
		{"SunUltra1:hardware/CPU_LOAD=0", models.HostSpec{Arch: "SunUltra1"}, false},
		{"x86_64:hardware/CPU_LOAD=1.5", models.HostSpec{Arch: "x86_64", Load: 1.5}, false},
		{"generic:2", models.HostSpec{Arch: "generic", Load: 2}, false},
		{"generic", models.HostSpec{Arch: "generic"}, false},
		{"generic:", models.HostSpec{}, true},
		{"generic:NaN", models.HostSpec{}, true},
		{"generic:hardware/CPU_LOAD=-1", models.HostSpec{}, true},
		{"9lives", models.HostSpec{}, true},
		{":1", models.HostSpec{}, true},
	}
	for _, c := range cases {
		got, err := models.ParseHost(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseHost(%q) = %+v, %v", c.in, got, err)
		}
		if err == nil {
			if back, _ := models.ParseHost(models.FormatHost(got)); back != got {
				t.Errorf("FormatHost(%+v) = %q does not read back", got, models.FormatHost(got))
			}
		}
	}
}

func ExampleSession_Serve() {
	lib, err := models.LoadDir("testdata/models", models.DefaultHardware())
	if err != nil {
		panic(err)
	}
	s, _ := lib.Session(context.Background(), "particles") // warwick: C_cpu 1000, C_com 10
	requests := "list\nset C_com 4\nhrduse SunUltra1:hardware/CPU_LOAD=0 SunUltra1:hardware/CPU_LOAD=0\neval\nquit\n"
	var out strings.Builder
	_ = s.Serve(context.Background(), strings.NewReader(requests), &out)
	fmt.Print(out.String())
	// Output:
	// C_com 10
	// C_cpu 1000
	// .
	// ok
	// ok
	// 508
}
