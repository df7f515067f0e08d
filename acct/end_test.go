package acct_test

import (
	"testing"

	"msched/acct"
	"msched/spool"
)

// Every reader of a record reads its end here; the precedence is cancelled,
// rejected, completed, killed, failed. (The cases use spool.OutcomeExited and
// spool.OutcomeRejected: acct's own copies must agree with them.)
func TestEndOf(t *testing.T) {
	zero, one := 0, 1
	for _, c := range []struct {
		state     string
		cancelled bool
		exit      *int
		signal    string
		reason    string
		want      acct.End
	}{
		{spool.OutcomeExited, false, &zero, "", "", acct.EndCompleted},
		{spool.OutcomeExited, false, &one, "", "exit status 1", acct.EndFailed},
		{spool.OutcomeExited, false, &zero, "", "output lost", acct.EndFailed}, // status 0, but given up on
		{spool.OutcomeExited, false, nil, "SIGKILL", "walltime exceeded", acct.EndKilled},
		{spool.OutcomeExited, false, nil, "", "its hosts were lost", acct.EndFailed},
		{spool.OutcomeExited, true, nil, "SIGTERM", "", acct.EndCancelled},
		{spool.OutcomeExited, false, &zero, "", "cancelled", acct.EndCancelled},
		{spool.OutcomeRejected, false, nil, "", "no such model", acct.EndRejected},
		{spool.OutcomeRejected, true, nil, "", "cancelled", acct.EndCancelled},
		{spool.OutcomeRejected, false, &zero, "", "", acct.EndRejected},
	} {
		if got := acct.EndOf(c.state, c.cancelled, c.exit, c.signal, c.reason); got != c.want {
			t.Errorf("EndOf(%s, cancelled %v, exit %v, %q, %q) = %s, want %s", c.state, c.cancelled, c.exit, c.signal, c.reason, got, c.want)
		}
		r := acct.Record{State: c.state, Cancelled: c.cancelled, ExitStatus: c.exit, Signal: c.signal, Reason: c.reason}
		if got := r.End(); got != c.want {
			t.Errorf("Record.End = %s, want %s", got, c.want)
		}
	}
}
