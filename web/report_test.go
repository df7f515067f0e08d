package web

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"msched/notify"
	"msched/spool"
)

// The command line, workdir and stdout read back from a report are the
// job's own, however its arguments are quoted; a clipped command is
// marked, and a co-allocated job is noticed.
func TestReportHead_RoundTripThroughNotify(t *testing.T) {
	at := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		job  spool.Job
	}{
		{"plain", spool.Job{Command: []string{"/bin/sleep", "3"}}},
		{"quoted", spool.Job{Command: []string{"/usr/bin/env", "a b", `"q"`, "it's", "tab\there", "nl\nx", "", `back\slash`, "$HOME", "ü"},
			Workdir: "/home/alice/my runs", Stdout: "/tmp/out put.txt"}},
		{"clipped", spool.Job{Command: []string{"/bin/echo", strings.Repeat("x", 2*notify.FieldLimit)}}},
		{"co-allocated", spool.Job{Command: []string{"/bin/true"}, Components: []int{2, 2}}},
		// Found in review: line breaks in what a user writes forged header
		// lines (a name in the Subject, a workdir in the body).
		{"forged name", spool.Job{Command: []string{"/bin/true"}, Name: "x\nJob: x\nCommand: /bin/evil\n\nStandard output went to /etc/x."}},
		{"forged workdir", spool.Job{Command: []string{"/bin/true"}, Workdir: "/w\nCommand: /bin/evil"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := c.job
			j.JID, j.User, j.SubmittedAt = "J000007", "alice", at
			if j.Name == "" {
				j.Name = "n: with colon"
			}
			j.Schedule = &spool.Schedule{Hosts: []string{"a", "b"}, PredictedSeconds: 10}
			j.Run = &spool.RunInfo{StartedAt: at, EndedAt: at.Add(time.Minute), ExitStatus: ptr(0)}
			j.Reason = "first line\nsecond line: Command: fake"
			rep := notify.Render(&j, t.TempDir())
			h := parseReportHead(fmt.Sprintf("To: %s\nSubject: %s\n\n%s", rep.To, rep.Subject, rep.Body)) // as daemons.Reaper writes it
			switch c.name {
			case "clipped":
				if !h.Clipped {
					t.Errorf("a clipped command not marked: %+v", h)
				}
				return
			case "co-allocated":
				if !h.Coallocated {
					t.Errorf("components not noticed: %+v", h)
				}
			}
			if h.Clipped || !reflect.DeepEqual(h.Command, j.Command) || h.Workdir != j.Workdir || h.Stdout != j.Stdout {
				t.Errorf("read back %+v\nfrom job   command %q workdir %q stdout %q", h, j.Command, j.Workdir, j.Stdout)
			}
		})
	}
}

func TestParseArgv_Malformed(t *testing.T) {
	for _, s := range []string{`"unterminated`, `"a"b`} {
		if _, err := parseArgv(s); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}
