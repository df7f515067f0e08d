package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// e2eJob is one job file of the end-to-end test and how it must end.
type e2eJob struct {
	name string // job name (unique); "" for files that do not parse
	body string
	// For valid jobs: the exit status (nil: none, e.g. killed), the signal,
	// and a fragment of the reason.
	exit   *int
	signal string
	reason string
	// For submissions that must be rejected: a fragment of the reason.
	rejected string
}

func intp(i int) *int { return &i }

// e2eJobs returns the 50 job files: sequential and parallel jobs with
// various exit statuses, invalid files, one that cannot start, one to be
// cancelled while running, one over its walltime.
func e2eJobs(t *testing.T) []e2eJob {
	// The exit status of a failing command, as this system's ls gives it.
	lsStatus := 0
	if err := exec.Command("ls", "/nonexistent-msched-e2e").Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("ls: %v", err)
		}
		lsStatus = ee.ExitCode()
	}
	var js []e2eJob
	add := func(n int, prefix, body string, exit int) {
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("%s-%d", prefix, i)
			js = append(js, e2eJob{name: name, body: "name: " + name + "\n" + body, exit: intp(exit)})
		}
	}
	add(20, "true", "command: [\"true\"]\n", 0)
	add(6, "false", "command: [\"false\"]\n", 1)
	add(4, "sleep", "command: [\"sleep\", \"0.3\"]\nwalltime: 1m\n", 0)
	add(3, "ls-missing", "command: [\"ls\", \"/nonexistent-msched-e2e\"]\n", lsStatus)
	add(4, "pair", "command: [\"sleep\", \"0.2\"]\nhosts: {count: 2}\n", 0)
	add(3, "moldable", "command: [\"true\"]\nhosts: {min: 1, max: 4}\n", 0)
	add(1, "all4", "command: [\"true\"]\nhosts: {count: 4}\n", 0)
	js = append(js,
		e2eJob{name: "cannot-start", body: "name: cannot-start\ncommand: [\"/nonexistent/msched-e2e-prog\"]\n", reason: "cannot start"},
		e2eJob{name: "cancel-me", body: "name: cancel-me\ncommand: [\"sleep\", \"30\"]\nwalltime: 1m\n", signal: "SIGTERM"},
		e2eJob{name: "too-long", body: "name: too-long\ncommand: [\"sleep\", \"30\"]\nwalltime: 1s\n", signal: "SIGTERM", reason: "walltime"},
		e2eJob{body: "comand: [\"true\"]\n", rejected: `unknown field "comand"`},
		e2eJob{body: "name: no-command\n", rejected: "command: required"},
		e2eJob{body: "command: [\"true\"]\nhosts: {min: 3, max: 2}\n", rejected: "hosts.max"},
		e2eJob{body: "command: [\"true\"]\nwalltime: soon\n", rejected: `"soon" is not a duration`},
		e2eJob{body: "command: [\"true\"\n", rejected: "not YAML"},
		e2eJob{name: "too-wide", body: "name: too-wide\ncommand: [\"true\"]\nhosts: {count: 8}\n", rejected: "8"},
	)
	if len(js) != 50 {
		t.Fatalf("%d jobs, want 50", len(js))
	}
	return js
}

// TestE2E_FiftyJobs is the end-to-end acceptance test: all five
// daemons in one process on a temporary spool with 4 local hosts, 50 job
// files; every valid job ends in a report with the right exit status, every
// invalid one in a rejection report with its reason, nothing is left in
// intermediate directories, no JID is reused.
func TestE2E_FiftyJobs(t *testing.T) {
	sp, hosts := testSpool(t, 4)
	cfg := testConfig(t, sp)
	log, _ := logFile(t, "daemons")
	d := startInProcess(t, cfg, hosts, log, daemonNames...)
	stopped := false
	defer func() {
		if !stopped {
			d.stop(t)
		}
	}()

	jobs := e2eJobs(t)
	for i, j := range jobs {
		submit(t, sp, fmt.Sprintf("job%02d.yaml", i), j.body)
	}
	running := waitRunning(t, sp, "cancel-me", 30*time.Second)
	if err := sp.RequestCancel(running.JID); err != nil {
		t.Fatal(err)
	}
	waitReports(t, sp, len(jobs), 60*time.Second)
	d.stop(t)
	stopped = true

	rs := checkOneReportEach(t, sp, len(jobs))
	checkDrained(t, sp, false)
	byName := map[string]record{}
	for _, r := range rs {
		if r.Name != "" {
			byName[r.Name] = r
		}
	}
	for _, j := range jobs {
		if j.rejected != "" {
			continue
		}
		r, ok := byName[j.name]
		if !ok {
			t.Errorf("%s: no report", j.name)
			continue
		}
		report := readReport(t, sp.Path("reports"), r.JID)
		switch {
		case r.State != "exited":
			t.Errorf("%s (%s): state %s (reason %q), want exited", j.name, r.JID, r.State, r.Reason)
		case j.exit != nil && (r.ExitStatus == nil || *r.ExitStatus != *j.exit):
			t.Errorf("%s (%s): exit status %v (signal %q, reason %q), want %d", j.name, r.JID, deref(r.ExitStatus), r.Signal, r.Reason, *j.exit)
		case j.exit != nil && !strings.Contains(report, fmt.Sprintf("Exit status: %d", *j.exit)):
			t.Errorf("%s (%s): report does not give exit status %d:\n%s", j.name, r.JID, *j.exit, report)
		case j.exit == nil && r.ExitStatus != nil:
			t.Errorf("%s (%s): exit status %d, want none (reason %q)", j.name, r.JID, *r.ExitStatus, r.Reason)
		case r.Signal != j.signal:
			t.Errorf("%s (%s): signal %q, want %q", j.name, r.JID, r.Signal, j.signal)
		case !strings.Contains(r.Reason, j.reason):
			t.Errorf("%s (%s): reason %q, want it to contain %q", j.name, r.JID, r.Reason, j.reason)
		}
	}
	if r := byName["cancel-me"]; !r.Cancelled {
		t.Errorf("cancel-me: not recorded as cancelled: %+v", r)
	}
	// Each rejection is reported with its reason, in the record and in the
	// report the user receives.
	for _, j := range jobs {
		if j.rejected == "" {
			continue
		}
		var found []record
		for _, r := range rs {
			if r.State == "rejected" && strings.Contains(r.Reason, j.rejected) && (j.name == "" || r.Name == j.name) {
				found = append(found, r)
			}
		}
		if len(found) == 0 {
			t.Errorf("no rejection with reason containing %q for\n%s", j.rejected, j.body)
			continue
		}
		if rep := readReport(t, sp.Path("reports"), found[0].JID); !strings.Contains(rep, j.rejected) {
			t.Errorf("rejection report %s does not give the reason %q:\n%s", found[0].JID, j.rejected, rep)
		}
	}
	rejected := 0
	for _, r := range rs {
		if r.State == "rejected" {
			rejected++
		}
	}
	if rejected != 6 {
		t.Errorf("%d rejections, want 6", rejected)
	}
}

func readReport(t *testing.T, dir, jid string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, jid+".txt"))
	if err != nil {
		t.Error(err)
	}
	return string(b)
}

func deref(p *int) any {
	if p == nil {
		return "none"
	}
	return *p
}
