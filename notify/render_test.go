package notify

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"msched/spool"
)

func finished(jid string) *spool.Job {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return &spool.Job{JID: jid, Name: "sim", User: "bob", Command: []string{"./sim", "two words"}, SubmittedAt: t0,
		Schedule: &spool.Schedule{Hosts: []string{"a", "b", "c"}, PredictedSeconds: 90},
		Run:      &spool.RunInfo{StartedAt: t0.Add(time.Minute), EndedAt: t0.Add(3 * time.Minute), Signal: "SIGKILL"},
		Reason:   "walltime exceeded"}
}

func TestRender_FinishedJob(t *testing.T) {
	out := t.TempDir()
	r := Render(finished("J000007"), out)
	if r.To != "bob" || r.State != "exited" || r.Subject != "msched: job J000007 (sim) ended: walltime exceeded" {
		t.Errorf("report header %+v", r)
	}
	for _, want := range []string{
		`Command:     ./sim "two words"`, "Hosts:       a, b, c (3)", "Wait:        1m0s",
		"Predicted:   1m30s", "Actual:      2m0s (prediction error -25.0%)", "Signal:      SIGKILL",
		"Reason:      walltime exceeded", "Standard output: none captured.",
	} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, r.Body)
		}
	}
	if strings.Contains(r.Body, "Exit status") || strings.Contains(r.Body, "Standard error") {
		t.Errorf("body shows what the job does not have:\n%s", r.Body)
	}
}

// A co-allocated job's report lists its components as they ran, and a
// placement's reason (a moldable job's size) is given.
func TestRender_ComponentsAndWhy(t *testing.T) {
	j := finished("J000008")
	j.Components, j.Request = []int{2, 1}, spool.RequestUnordered
	j.Schedule.Why = "2 of 1–4 hosts: the predicted load"
	r := Render(j, t.TempDir())
	if want := "Components:  [2, 1], unordered\n"; !strings.Contains(r.Body, want) {
		t.Errorf("before the start, body lacks %q:\n%s", want, r.Body)
	}
	j.Run.Components = []spool.Component{{Cluster: "x", Hosts: []string{"a", "b"}}, {Cluster: "y", Hosts: []string{"c"}}}
	r = Render(j, t.TempDir())
	for _, want := range []string{
		"Components:  1: cluster x, a, b (2)\n             2: cluster y, c (1)\n",
		"Placement:   2 of 1–4 hosts: the predicted load\n",
	} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, r.Body)
		}
	}
}

// Only the last OutputLimit bytes of a long output are carried, with a
// note saying so and where the rest is.
func TestRender_TruncatesOutput(t *testing.T) {
	out := t.TempDir()
	stdout, stderr := spool.CapturedPaths(out, "J000001")
	if err := os.MkdirAll(filepath.Dir(stdout), 0o755); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("early line\n", OutputLimit/5) + "THE END\n"
	if err := os.WriteFile(stdout, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stderr, []byte("oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Render(finished("J000001"), out)
	if !strings.Contains(r.Body, "Standard output (truncated: the last 64 KiB; all of it is in "+stdout+")") ||
		!strings.HasSuffix(strings.Split(r.Body, "Standard error")[0], "    THE END\n\n") {
		t.Errorf("truncation note or tail missing:\n%s", r.Body[:200])
	}
	if n := strings.Count(r.Body, "early line"); n > OutputLimit/len("early line\n")+1 {
		t.Errorf("%d early lines: not truncated", n)
	}
	if !strings.Contains(r.Body, "Standard error:\n\n    oops\n") {
		t.Errorf("stderr missing")
	}
}

func TestRender_Rejection(t *testing.T) {
	j := &spool.Job{JID: "J000002", Name: "bad", User: "carol", Notify: "c@example.org",
		Reason:   "bad.yaml:1: command: required\nbad.yaml:2: hosts.min: must be ≥ 1, got 0",
		Original: "name: bad\nhosts: {min: 0}\n"}
	r := Render(j, t.TempDir())
	if r.To != "c@example.org" || r.State != "rejected" || r.Subject != "msched: job J000002 (bad) rejected: bad.yaml:1: command: required" {
		t.Errorf("header %+v", r)
	}
	for _, want := range []string{"Reason:      bad.yaml:1: command: required\n             bad.yaml:2: hosts.min",
		"The submitted file, as received:\n\n    name: bad\n    hosts: {min: 0}\n"} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, r.Body)
		}
	}
	if strings.Contains(r.Body, "Standard output") {
		t.Error("a job that never ran has no output section")
	}
}

// A job whose last start failed never ran: its report gives the reason, and
// no run time or prediction error for the failed attempt's few milliseconds.
func TestRender_NeverStarted(t *testing.T) {
	j := finished("J000008")
	j.Run.Signal = ""
	j.Run.EndedAt = j.Run.StartedAt.Add(70 * time.Millisecond)
	j.Reason = `cannot start: fork/exec ./sim: no such file or directory (attempt 3 of 3; giving up)`
	r := Render(j, t.TempDir())
	if strings.Contains(r.Body, "Actual:") || strings.Contains(r.Body, "prediction error") {
		t.Errorf("never-started job reports a run time:\n%s", r.Body)
	}
	if !strings.Contains(r.Body, "Reason:      cannot start") {
		t.Errorf("body lacks the reason:\n%s", r.Body)
	}
}

// output/<JID>/ is the job's user's directory, and the reaper renders as
// root a report that the user reads: a stdout the user replaced with a
// symbolic link to a file only root may read must not bring that file into
// the report, and a FIFO must not block the reaper.
func TestRender_OutputNotALinkOrFIFO(t *testing.T) {
	out := t.TempDir()
	stdout, stderr := spool.CapturedPaths(out, "J000003")
	if err := os.MkdirAll(filepath.Dir(stdout), 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(secret, []byte("root:SECRET-HASH\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, stdout); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(stderr, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan Report, 1)
	go func() { done <- Render(finished("J000003"), out) }()
	var r Report
	select {
	case r = <-done:
	case <-time.After(30 * time.Second): // Render takes milliseconds; CI is loaded
		// Unblock Render so the test can end.
		if f, err := os.OpenFile(stderr, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("Render blocked on a FIFO in output/")
	}
	if strings.Contains(r.Body, "SECRET") {
		t.Errorf("the link's target is in the report:\n%s", r.Body)
	}
	for _, want := range []string{"Standard output: cannot read", "a symbolic link", "Standard error: cannot read", "a FIFO"} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, r.Body)
		}
	}
}
