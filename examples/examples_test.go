package examples_test

import (
	"context"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"msched/examples"
	"msched/models"
	"msched/spool"
)

// TestJobs_ParseAndModelsPredict checks what README promises of the
// examples: the valid job files parse, their models load from the embedded
// files, and each prediction on idle generic hosts is the run time the job's
// command really takes.
func TestJobs_ParseAndModelsPredict(t *testing.T) {
	dir := t.TempDir()
	names, err := fs.Glob(examples.Models, "models/*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatalf("embedded models: %v %v", names, err)
	}
	for _, n := range names {
		b, _ := fs.ReadFile(examples.Models, n)
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(n)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lib, err := models.LoadDir(dir, models.DefaultHardware())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		file  string
		hosts int
		want  float64 // seconds the command runs on that many hosts
	}{
		{"jobs/sleep.yaml", 1, 3},
		{"jobs/eq2.yaml", 1, 8.25},
		{"jobs/eq2.yaml", 4, 3},
		{"jobs/eq2-rigid.yaml", 2, 4.5},
	}
	for _, c := range cases {
		data, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		j, err := spool.Parse(filepath.Base(c.file), data)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		m, err := lib.Get(j.Model.Name)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		hs := make([]models.HostSpec, c.hosts)
		for i := range hs {
			hs[i] = models.HostSpec{Arch: "generic"}
		}
		got, err := m.Predict(context.Background(), models.Scenario{Params: j.Model.Params, Hosts: hs})
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s on %d hosts: predicted %v s, want %v", c.file, c.hosts, got, c.want)
		}
	}
}

func TestJobs_InvalidIsRejectedWithEveryProblem(t *testing.T) {
	data, err := os.ReadFile("jobs/invalid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = spool.Parse("invalid.yaml", data)
	if err == nil {
		t.Fatal("invalid.yaml parsed")
	}
	for _, want := range []string{`unknown field "comand"`, "walltime"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestEq2_RunsForEq2Time runs the example program with small parameters:
// on 2 hosts, t = 0.4/2 + 0.05·2 = 0.3 s.
func TestEq2_RunsForEq2Time(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "eq2")
	if out, err := exec.Command("go", "build", "-o", bin, "./eq2").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-cpu", "0.4", "-com", "0.05")
	cmd.Env = append(os.Environ(), "MSCHED_NHOSTS=2")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("eq2: %v\n%s", err, out)
	}
	if took < 300*time.Millisecond || took > 2*time.Second {
		t.Errorf("eq2 on 2 hosts took %v, want about 0.3 s", took)
	}
	if !strings.Contains(string(out), "2 hosts") {
		t.Errorf("eq2 output %q does not name its host count", out)
	}
}
