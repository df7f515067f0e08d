package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"msched/acct"
	"msched/spool"
	"msched/web"
)

// historyLog writes an accounting log of five jobs, in two generations.
func historyLog(t *testing.T, sp *spool.Spool, now time.Time) {
	t.Helper()
	zero, one := 0, 1
	rec := func(n int64, name, user string, ended time.Time, exit *int, state string, cancelled bool) acct.Record {
		r := acct.Record{JID: spool.FormatJID(n), Name: name, User: user, SubmittedAt: ended.Add(-time.Hour),
			StartedAt: ended.Add(-time.Minute), EndedAt: ended, ExitStatus: exit, State: state, Cancelled: cancelled}
		if state == spool.OutcomeRejected {
			r.StartedAt, r.EndedAt, r.Reason = time.Time{}, time.Time{}, "no host can ever hold it"
		}
		return r
	}
	writeRecords(t, sp, acct.JSONL+".1",
		rec(1, "sim-a", "alice", now.Add(-48*time.Hour), &zero, spool.OutcomeExited, false),
		rec(2, "sim-b", "bob", now.Add(-3*time.Hour), &one, spool.OutcomeExited, false))
	writeRecords(t, sp, acct.JSONL,
		rec(2, "sim-b", "bob", now.Add(-3*time.Hour), &one, spool.OutcomeExited, false), // carried by the rotation
		rec(3, "post", "alice", now.Add(-90*time.Minute), nil, spool.OutcomeExited, true),
		rec(4, "sim-c", "alice", now.Add(-30*time.Minute), &zero, spool.OutcomeExited, false),
		rec(5, "big", "bob", now.Add(-10*time.Minute), nil, spool.OutcomeRejected, false))
}

// history lists the accounting log's jobs (rotated generations too, each
// once), kept by --user, --state, --name, --since and --until.
func TestHistory_Filters(t *testing.T) {
	sp := emptySpool(t)
	now := time.Now().UTC().Truncate(time.Second)
	historyLog(t, sp, now)
	day := now.Add(-24 * time.Hour).Format(time.RFC3339)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"J000001", "J000002", "J000003", "J000004", "J000005"}},
		{[]string{"--user", "alice"}, []string{"J000001", "J000003", "J000004"}},
		{[]string{"--name", "sim-*", "--user", "alice"}, []string{"J000001", "J000004"}},
		{[]string{"--state", "completed"}, []string{"J000001", "J000004"}},
		{[]string{"--state", "failed"}, []string{"J000002", "J000005"}},
		{[]string{"--state", "cancelled"}, []string{"J000003"}},
		{[]string{"--state", "rejected,cancelled"}, []string{"J000003", "J000005"}},
		{[]string{"--since", "2h"}, []string{"J000003", "J000004", "J000005"}},
		{[]string{"--since", "4h", "--until", "1h"}, []string{"J000002", "J000003", "J000005"}}, // J000005 never ran: its submission, 70 min ago
		{[]string{"--since", day}, []string{"J000002", "J000003", "J000004", "J000005"}},
		{[]string{"--until", day}, []string{"J000001"}},
		{[]string{"--since", "1d", "--state", "exited", "--user", "bob"}, []string{"J000002"}},
	} {
		out, errOut, code := cli(t, sp, append([]string{"history", "--json"}, c.args...)...)
		if code != exitOK {
			t.Fatalf("history %v: code %d %s", c.args, code, errOut)
		}
		got := []string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line == "" {
				continue
			}
			var v web.JobView
			if err := json.Unmarshal([]byte(line), &v); err != nil || !v.Reaped {
				t.Fatalf("history %v --json: a line that is no reaped job object: %v %q", c.args, err, line)
			}
			got = append(got, v.JID)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("history %v: %v; want %v", c.args, got, c.want)
		}
	}
	table, _, _ := cli(t, sp, "history", "--user", "alice", "--state", "cancelled")
	if !strings.Contains(table, "ENDED") || !strings.Contains(table, "J000003") || !strings.Contains(table, "cancelled") || strings.Contains(table, "J000001") {
		t.Errorf("history table:\n%s", table)
	}
	if _, errOut, code := cli(t, sp, "history", "--state", "running"); code != exitUsage || !strings.Contains(errOut, `"running" is not one of exited, rejected, completed, failed, cancelled`) {
		t.Errorf("history --state running: code %d %s", code, errOut)
	}
}

// history's times: RFC 3339, a UTC date and time, or a duration before
// now with its unit; a bare number or a clock time is refused.
func TestHistory_ParseWhen(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Time
	}{
		{"", time.Time{}},
		{"2026-11-24T10:00:00+01:00", time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)},
		{"2026-11-24T09:00:00Z", time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)},
		{"2026-11-24 09:30", time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)},
		{"2026-11-24", time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)},
		{"2h", now.Add(-2 * time.Hour)},
		{"90m", now.Add(-90 * time.Minute)},
		{"7d", now.Add(-7 * 24 * time.Hour)},
		{"1d12h", now.Add(-36 * time.Hour)},
	} {
		got, err := parseWhen("--since", c.in, now)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"3600", "10:00", "yesterday", "-2h", "2026-13-01"} {
		if _, err := parseWhen("--since", in, now); err == nil || exitCode(err) != exitUsage {
			t.Errorf("parseWhen(%q): %v; want a usage error", in, err)
		}
	}
}
