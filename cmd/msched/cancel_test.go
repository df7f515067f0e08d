package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"msched/spool"
)

// requested lists the JIDs with a cancel request in control/.
func requested(t *testing.T, sp *spool.Spool) []string {
	t.Helper()
	cs, err := sp.Controls()
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, c := range cs {
		out = append(out, c.JID)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// cancel takes several JIDs in any form; it asks for each it may, and an
// unknown one makes it exit 3 after the others.
func TestCancel_SeveralJIDs(t *testing.T) {
	sp := emptySpool(t)
	at := time.Now().UTC()
	put(t, sp, spool.Queued, queuedJob(1, "a", "root", 0, at))
	put(t, sp, spool.Queued, queuedJob(2, "b", "root", 0, at))
	out, errOut, code := cli(t, sp, "cancel", "1", "J2", "j000009")
	if code != exitNotFound {
		t.Errorf("cancel 1 J2 j000009: code %d; want %d (J000009 not found)\n%s%s", code, exitNotFound, out, errOut)
	}
	if got := requested(t, sp); !slices.Equal(got, []string{"J000001", "J000002"}) {
		t.Errorf("requests %v; want J000001 and J000002", got)
	}
	if !strings.Contains(out, "J000001: cancel requested (queued)") || !strings.Contains(out, "J000002: cancel requested (queued)") ||
		!strings.Contains(errOut, "J000009: no such job") {
		t.Errorf("cancel's words:\n%s%s", out, errOut)
	}
}

// cancel --user, --name and --state choose jobs as scancel does (the
// filters combine); without --user a user's choice is their own jobs; a
// job of another user named by them is refused, with exit code 4.
func TestCancel_Filters(t *testing.T) {
	const alice, bob = 1001, 1002
	sp := emptySpool(t)
	at := time.Now().UTC()
	put(t, sp, spool.Queued, queuedJob(1, "sim-1", "alice", alice, at))
	put(t, sp, spool.Queued, queuedJob(2, "sim-2", "bob", bob, at))
	put(t, sp, spool.Queued, queuedJob(3, "post", "alice", alice, at))
	r := queuedJob(4, "sim-3", "alice", alice, at)
	r.Run = &spool.RunInfo{StartedAt: at, Attempts: 1}
	put(t, sp, spool.Running, r)
	put(t, sp, spool.Finished, queuedJob(5, "sim-4", "alice", alice, at))

	run := func(uid int, args ...string) (string, error) {
		t.Helper()
		removeControls(t, sp)
		var f jobFilter
		var jidList []string
		for i := 0; i < len(args); i++ {
			switch args[i] {
			case "--user":
				i++
				f.users = append(f.users, args[i])
			case "--name":
				i++
				f.names = append(f.names, args[i])
			case "--state":
				i++
				f.states = append(f.states, args[i])
			default:
				jidList = append(jidList, args[i])
			}
		}
		if err := f.check(pendingStates, cancelStates); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		err := cancelJobs(&out, &out, sp, jidList, f, uid)
		return out.String(), err
	}
	for _, c := range []struct {
		who  int
		args []string
		want []string
		code int
	}{
		{alice, []string{"--name", "sim-*"}, []string{"J000001", "J000004"}, exitOK},
		{alice, []string{"--name", "sim-*", "--state", "queued"}, []string{"J000001"}, exitOK},
		{alice, []string{"--state", "pending"}, []string{"J000001", "J000003"}, exitOK},
		{0, []string{"--name", "sim-*", "--state", "pending"}, []string{"J000001", "J000002"}, exitOK},
		{alice, []string{"--user", "bob"}, []string{}, exitRefused},
		{alice, []string{"--user", "*", "--state", "queued", "--name", "sim-*"}, []string{"J000001"}, exitRefused},
		{alice, []string{"J000002"}, []string{}, exitRefused},
		{alice, []string{"J000005"}, []string{}, exitRefused},
		{alice, []string{"J000001", "J000003", "--name", "post"}, []string{"J000003"}, exitOK},
		{bob, []string{"--name", "post"}, []string{}, exitNotFound},
	} {
		out, err := run(c.who, c.args...)
		code := exitOK
		if err != nil {
			code = exitCode(err)
		}
		if got := requested(t, sp); !slices.Equal(got, c.want) || code != c.code {
			t.Errorf("uid %d: cancel %v: asked %v, exit %d; want %v, exit %d\n%s%v", c.who, c.args, got, code, c.want, c.code, out, err)
		}
	}
	out, _ := run(alice, "--user", "*", "--state", "queued", "--name", "sim-*")
	if !strings.Contains(out, "J000002: refused: spool: J000002 belongs to bob; only bob or root may cancel it") ||
		!strings.Contains(out, "cancel requested for 1 job(s), 1 refused") {
		t.Errorf("cancel's account of a refusal:\n%s", out)
	}
}

// removeControls empties control/ between cases.
func removeControls(t *testing.T, sp *spool.Spool) {
	t.Helper()
	cs, err := sp.Controls()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if _, err := sp.DiscardControl(c); err != nil {
			t.Fatal(err)
		}
	}
}

// cancel with neither JIDs nor filters is a usage error.
func TestCancel_NothingNamed(t *testing.T) {
	sp := emptySpool(t)
	_, errOut, code := cli(t, sp, "cancel")
	if code != exitUsage || !strings.Contains(errOut, "name the jobs to cancel") || !strings.Contains(errOut, "usage: msched cancel") {
		t.Errorf("cancel alone: code %d\n%s", code, errOut)
	}
}
