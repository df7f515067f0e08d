package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"msched/acct"
	"msched/spool"
	"msched/web"
)

// nowhere are places where no spool is: a test's command line finds only
// the spool it is given, whatever the machine has installed.
func nowhere(t *testing.T) places {
	d := t.TempDir()
	return places{SystemConfig: filepath.Join(d, "etc/msched.yaml"), SystemSpool: filepath.Join(d, "sys/spool"),
		LocalSpool: filepath.Join(d, "local/spool")}
}

// cliAt runs the command line args in this process, as main does, with
// the spool found in pl; it returns stdout, stderr and the exit code.
func cliAt(t *testing.T, pl places, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	root := newRootAt(pl)
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code = execute(ctx, root)
	return out.String(), errOut.String(), code
}

// cli runs args on the spool sp.
func cli(t *testing.T, sp *spool.Spool, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return cliAt(t, nowhere(t), append([]string{"--spool", sp.Root()}, args...)...)
}

// put writes j into state st of sp, as the daemons would have.
func put(t *testing.T, sp *spool.Spool, st spool.State, j *spool.Job) {
	t.Helper()
	b, err := j.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	name := j.JID
	if st == spool.Submitted {
		name = j.Name + ".yaml"
	}
	if err := spool.WriteAtomic(sp.Dir(st), name, b); err != nil {
		t.Fatal(err)
	}
}

// queuedJob is a job as sched finds it in queued/: user's, submitted at.
func queuedJob(n int64, name, user string, uid int, at time.Time) *spool.Job {
	return &spool.Job{JID: spool.FormatJID(n), Name: name, Command: []string{"true"}, User: user, UID: &uid,
		SubmittedAt: at, History: []spool.Event{{State: spool.Submitted, At: at}, {State: spool.Queued, At: at}}}
}

// emptySpool is a new spool without hosts or daemons.
func emptySpool(t *testing.T) *spool.Spool {
	t.Helper()
	sp, err := spool.Create(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// statusJSON is what status --json prints for the list.
type statusJSON struct {
	Daemons []daemonRow   `json:"daemons"`
	Jobs    []web.JobView `json:"jobs"`
}

func jids(vs []web.JobView) []string {
	out := []string{}
	for _, v := range vs {
		out = append(out, v.JID)
	}
	return out
}

// A JID is read as users type it wherever a command takes one: 10, J10 and
// j000010 are J000010.
func TestStatus_JIDForms(t *testing.T) {
	sp := emptySpool(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	put(t, sp, spool.Queued, queuedJob(10, "ten", "alice", 1001, at))
	for _, arg := range []string{"10", "J10", "j000010", "J000010"} {
		out, errOut, code := cli(t, sp, "status", arg, "--json")
		var v web.JobView
		if code != exitOK || json.Unmarshal([]byte(out), &v) != nil || v.JID != "J000010" || v.State != spool.Queued {
			t.Errorf("status %s --json: code %d, %q %q", arg, code, out, errOut)
		}
	}
	if _, errOut, code := cli(t, sp, "status", "J1O"); code != exitUsage || !strings.Contains(errOut, `"J1O" is not a job id`) {
		t.Errorf("status J1O: code %d, %q; want a usage error", code, errOut)
	}
	if _, errOut, code := cli(t, sp, "status", "11"); code != exitNotFound || !strings.Contains(errOut, "no job J000011") {
		t.Errorf("status 11: code %d, %q; want not found", code, errOut)
	}
}

// status --user, --state and --name keep some jobs; they combine.
func TestStatus_Filters(t *testing.T) {
	sp := emptySpool(t)
	at := time.Now().UTC()
	put(t, sp, spool.Queued, queuedJob(1, "sim-a", "alice", 1001, at))
	put(t, sp, spool.Queued, queuedJob(2, "sim-b", "bob", 1002, at))
	put(t, sp, spool.Queued, queuedJob(3, "post", "alice", 1001, at))
	running := queuedJob(4, "sim-c", "alice", 1001, at)
	running.Schedule = &spool.Schedule{Hosts: []string{"h1"}, PredictedSeconds: 10, DecidedAt: at}
	running.Run = &spool.RunInfo{StartedAt: at, Attempts: 1}
	put(t, sp, spool.Running, running)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"J000001", "J000002", "J000003", "J000004"}},
		{[]string{"--user", "alice"}, []string{"J000001", "J000003", "J000004"}},
		{[]string{"--user", "bob,alice", "--name", "sim-*"}, []string{"J000001", "J000002", "J000004"}},
		{[]string{"-u", "alice", "--name", "sim-*", "--state", "queued"}, []string{"J000001"}},
		{[]string{"--state", "pending"}, []string{"J000001", "J000002", "J000003"}},
		{[]string{"--state", "running"}, []string{"J000004"}},
		{[]string{"--user", "carol"}, []string{}},
	} {
		out, errOut, code := cli(t, sp, append([]string{"status", "--json"}, c.args...)...)
		var st statusJSON
		if code != exitOK || json.Unmarshal([]byte(out), &st) != nil {
			t.Fatalf("status %v: code %d %q %q", c.args, code, out, errOut)
		}
		if got := jids(st.Jobs); !reflect.DeepEqual(got, c.want) {
			t.Errorf("status %v: %v; want %v", c.args, got, c.want)
		}
	}
	table, _, _ := cli(t, sp, "status", "--user", "bob")
	if !strings.Contains(table, "J000002") || strings.Contains(table, "J000001") {
		t.Errorf("status --user bob, table:\n%s", table)
	}
	if _, errOut, code := cli(t, sp, "status", "--state", "done"); code != exitUsage || !strings.Contains(errOut, `"done" is not one of`) {
		t.Errorf("status --state done: code %d %q; want a usage error naming the states", code, errOut)
	}
}

// A waiting job says why it waits and, when the published schedule plans
// it, when it is expected to start, in the table and in JSON.
func TestStatus_PendingReasonAndExpectedStart(t *testing.T) {
	sp := emptySpool(t)
	now := time.Now().UTC()
	put(t, sp, spool.Queued, queuedJob(1, "planned", "alice", 1001, now.Add(-time.Minute)))
	put(t, sp, spool.Queued, queuedJob(2, "unplanned", "alice", 1001, now.Add(-time.Minute)))
	put(t, sp, spool.Queued, queuedJob(3, "held", "alice", 1001, now.Add(-time.Minute)))
	start := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	plan := spool.PublishedSchedule{GeneratedAt: now, Policy: "easy", Jobs: []spool.PublishedJob{
		{JID: "J000001", State: "planned", Hosts: []string{"h1", "h2"}, Start: start, End: start.Add(time.Hour), PredictedSeconds: 3600},
	}, Held: []spool.PublishedHold{{Reason: "waiting for J000001", JIDs: []string{"J000003"}}}}
	b, _ := json.Marshal(plan)
	if err := os.WriteFile(filepath.Join(sp.Path(spool.DirDB), spool.ScheduleFile), b, 0o644); err != nil {
		t.Fatal(err)
	}

	// sched has never run: nothing is scheduled, whatever the old plan says.
	out, _, _ := cli(t, sp, "status", "--json")
	var st statusJSON
	if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Jobs) != 3 {
		t.Fatalf("status --json: %v %q", err, out)
	}
	if r := st.Jobs[1].PendingReason; r != "sched has never run on this spool: nothing is scheduled" {
		t.Errorf("pending reason with sched never started: %q", r)
	}

	if err := sp.As(spool.Sched).Heart(spool.Sched).Beat(); err != nil {
		t.Fatal(err)
	}
	out, _, _ = cli(t, sp, "status", "--json")
	st = statusJSON{}
	if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Jobs) != 3 {
		t.Fatalf("status --json: %v %q", err, out)
	}
	if j := st.Jobs[0]; j.PendingReason != "waiting for hosts h1,h2" || !j.ExpectedStart.Equal(start) {
		t.Errorf("planned job: pending %q, expected start %v; want waiting for hosts h1,h2 at %v", j.PendingReason, j.ExpectedStart, start)
	}
	if j := st.Jobs[1]; !strings.HasPrefix(j.PendingReason, "not in easy's plan") || !j.ExpectedStart.IsZero() {
		t.Errorf("unplanned job: pending %q, expected start %v", j.PendingReason, j.ExpectedStart)
	}
	if j := st.Jobs[2]; j.PendingReason != "waiting for J000001" {
		t.Errorf("held job (a dependency): pending %q; want sched's reason", j.PendingReason)
	}
	if !strings.Contains(out, `"pending_reason":"waiting for hosts h1,h2","expected_start":"2031-05-06T07:08:09Z"`) {
		t.Errorf("the JSON keys: %s", out)
	}
	table, _, _ := cli(t, sp, "status")
	if !strings.Contains(table, "~2031-05-06 07:08:09") || !strings.Contains(table, "waiting for hosts h1,h2") {
		t.Errorf("table without the expected start and reason:\n%s", table)
	}
	one, _, _ := cli(t, sp, "status", "1")
	if !strings.Contains(one, "pending: waiting for hosts h1,h2\nexpected start: 2031-05-06 07:08:09 UTC\n") {
		t.Errorf("status 1:\n%s", one)
	}
}

// status JID --json prints the job object, in the spool and once reaped
// (from the accounting log, rotated generations too).
func TestStatus_JSONIsTheJobObject(t *testing.T) {
	sp := emptySpool(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	put(t, sp, spool.Queued, queuedJob(1, "here", "alice", 1001, at))
	zero := 0
	rec := acct.Record{JID: "J000002", Name: "gone", User: "bob", Executable: "/bin/true", SubmittedAt: at,
		StartedAt: at.Add(time.Second), EndedAt: at.Add(time.Minute), ExitStatus: &zero, State: spool.OutcomeExited, SWFStatus: 1}
	writeRecords(t, sp, acct.JSONL+".1", rec)

	out, errOut, code := cli(t, sp, "status", "J1", "--json")
	var here map[string]any
	if code != exitOK || json.Unmarshal([]byte(out), &here) != nil {
		t.Fatalf("status J1 --json: %d %q %q", code, out, errOut)
	}
	if here["jid"] != "J000001" || here["state"] != "queued" || here["submitted_at"] != "2026-01-02T03:04:05Z" || here["job"] != nil {
		t.Errorf("status J1 --json is not the job object: %s", out)
	}
	out, errOut, code = cli(t, sp, "status", "2", "--json")
	var gone web.JobView
	if code != exitOK || json.Unmarshal([]byte(out), &gone) != nil {
		t.Fatalf("status 2 --json: %d %q %q", code, out, errOut)
	}
	if !gone.Reaped || gone.State != "exited" || gone.User != "bob" || gone.ExitStatus == nil || *gone.ExitStatus != 0 || !gone.EndedAt.Equal(at.Add(time.Minute)) {
		t.Errorf("reaped job's object: %+v", gone)
	}
	// Without its report (retention), the text form shows the record.
	out, _, code = cli(t, sp, "status", "2")
	if code != exitOK || !strings.Contains(out, "J000002: exited") || !strings.Contains(out, "ended:") || !strings.Contains(out, "2026-01-02 03:05:05 UTC") {
		t.Errorf("status 2 without a report: %d\n%s", code, out)
	}
	out, _, _ = cli(t, sp, "status", "1", "2", "--json")
	var both []web.JobView
	if err := json.Unmarshal([]byte(out), &both); err != nil || len(both) != 2 || both[1].JID != "J000002" {
		t.Errorf("status 1 2 --json: %v %s", err, out)
	}
}

// writeRecords writes rs as the accounting log file name in sp's db/.
func writeRecords(t *testing.T, sp *spool.Spool, name string, rs ...acct.Record) {
	t.Helper()
	var b []byte
	for _, r := range rs {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, line...), '\n')
	}
	if err := os.WriteFile(filepath.Join(sp.Path(spool.DirDB), name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every time the command line prints is UTC and says so, whatever the
// local zone.
func TestStatus_TimesAreUTC(t *testing.T) {
	local := time.Local
	time.Local = time.FixedZone("XST", 5*3600)
	t.Cleanup(func() { time.Local = local })
	sp := emptySpool(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j := queuedJob(1, "r", "alice", 1001, at)
	j.Schedule = &spool.Schedule{Hosts: []string{"h1"}, PredictedSeconds: 10, DecidedAt: at}
	j.Run = &spool.RunInfo{StartedAt: at.Add(time.Hour), Attempts: 1}
	put(t, sp, spool.Running, j)
	out, _, _ := cli(t, sp, "status")
	if !strings.Contains(out, "SUBMITTED (UTC)") || !strings.Contains(out, "2026-01-02 03:04:05") || !strings.Contains(out, "2026-01-02 04:04:05") {
		t.Errorf("status table not in UTC:\n%s", out)
	}
	if strings.Contains(out, "08:04:05") {
		t.Errorf("status table in local time:\n%s", out)
	}
	out, _, _ = cli(t, sp, "status", "--json")
	if !strings.Contains(out, `"submitted_at":"2026-01-02T03:04:05Z"`) || !strings.Contains(out, `"started_at":"2026-01-02T04:04:05Z"`) {
		t.Errorf("status --json times not in UTC: %s", out)
	}
	if !strings.Contains(out, `"elapsed_seconds":`) {
		t.Errorf("status --json: a running job without its clock: %s", out)
	}
}
