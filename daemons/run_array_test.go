package daemons

import (
	"testing"

	"msched/spool"
)

// The run daemon gives an array member its array's JID and its index
// (launch.Spec.ArrayJob, ArrayIndex: MSCHED_ARRAY_JOB_ID and
// MSCHED_ARRAY_INDEX).
func TestRun_ArrayMemberEnv(t *testing.T) {
	sp := newTestSpool(t)
	jid := runnable(t, sp, []string{"/bin/sh", "-c", `echo "$MSCHED_ARRAY_JOB_ID|$MSCHED_ARRAY_INDEX|$MSCHED_JID"`}, func(j *spool.Job) {
		i := 42
		j.Array, j.ArrayJob, j.ArrayIndex = "40-50", "J000007", &i
	})
	startDaemon(t, newRun(t, sp, 0).Run)
	inState(t, sp, jid, spool.Finished)
	out, _ := spool.CapturedPaths(sp.Path(spool.DirOutput), jid)
	if got, want := readText(t, out), "J000007|42|"+jid+"\n"; got != want {
		t.Errorf("the member's output %q, want %q", got, want)
	}
}
