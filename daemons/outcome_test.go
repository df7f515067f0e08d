package daemons

import (
	"testing"

	"msched/acct"
	"msched/spool"
)

// An outcome read from an accounting record: whether afterok: is met, the
// exit code a shell would give, and how it is said.
func TestOutcome(t *testing.T) {
	zero, three := 0, 3
	for _, tc := range []struct {
		r      acct.Record
		ok     bool
		code   int
		hasErr bool // no exit code
		say    string
	}{
		{acct.Record{State: spool.OutcomeExited, ExitStatus: &zero}, true, 0, false, "exited with status 0"},
		{acct.Record{State: spool.OutcomeExited, ExitStatus: &three, Reason: "exit status 3"}, false, 3, false, "exited with status 3"},
		{acct.Record{State: spool.OutcomeExited, Signal: "SIGKILL", Reason: "killed by SIGKILL"}, false, 137, false, "killed by SIGKILL"},
		{acct.Record{State: spool.OutcomeExited, Signal: "SIGTERM", Reason: "walltime exceeded"}, false, 143, false, "killed by SIGTERM (walltime exceeded)"},
		{acct.Record{State: spool.OutcomeExited, Reason: "cannot start: no such file"}, false, 0, true, "failed: cannot start: no such file"},
		{acct.Record{State: spool.OutcomeRejected, Reason: "cancelled", Cancelled: true}, false, 0, true, "cancelled"},
		{acct.Record{State: spool.OutcomeRejected, Reason: "job.yaml:2: bad"}, false, 0, true, "rejected: job.yaml:2: bad"},
		{acct.Record{State: spool.OutcomeExited, Signal: "SIGTERM", Cancelled: true}, false, 143, false, "killed by SIGTERM (cancelled)"},
	} {
		o := OutcomeOf(tc.r)
		code, ok := o.ExitCode()
		if o.OK() != tc.ok || ok == tc.hasErr || code != tc.code || o.String() != tc.say {
			t.Errorf("%+v: OK %v, exit code %d %v, %q; want %v, %d, %q", tc.r, o.OK(), code, ok, o.String(), tc.ok, tc.code, tc.say)
		}
	}
}
