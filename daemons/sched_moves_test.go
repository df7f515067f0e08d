package daemons

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"msched/policy"
	"msched/spool"
)

// planMoves, without a spool: which job files move where, with what, for a
// checked plan.
func TestPlanMoves(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	q := func(jid string) waitingJob { return waitingJob{JID: jid, State: spool.Queued} }
	sc := func(jid string) waitingJob { return waitingJob{JID: jid, State: spool.Scheduling} }
	start := func(jid string, hosts ...string) policy.Placement {
		return policy.Placement{Job: jid, Hosts: hosts, Start: now, Predicted: 90 * time.Second}
	}
	later := func(jid string) policy.Placement {
		return policy.Placement{Job: jid, Hosts: []string{"h0"}, Start: now.Add(time.Minute), Predicted: time.Minute}
	}
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, tc := range []struct {
		name     string
		in       movesIn
		moves    []string // "JID from→to: note | reason or hosts"
		later    []string
		admitted map[string]time.Duration // JID → read for this long
	}{
		{
			name: "start, reject, wait",
			in: movesIn{Read: []waitingJob{q("1"), sc("2"), q("3")},
				Plan: policy.Plan{StartNow: []policy.Placement{start("1", "h0", "h1")}, Later: []policy.Placement{later("3")},
					Reject: []policy.Rejection{{Job: "2", Reason: "needs 9 hosts"}}}},
			moves: []string{
				"2 scheduling→rejected: cannot be placed: needs 9 hosts | reason needs 9 hosts",
				"1 queued→runnable: placed by easy on h0,h1, predicted 1m30s | on h0,h1 for 90s",
			},
			later:    []string{"3"},
			admitted: map[string]time.Duration{"3": 0},
		},
		{
			name: "admitted to scheduling/ after admitAfter",
			in: movesIn{Read: []waitingJob{q("1"), q("2"), sc("3"), q("4")}, Window: true,
				Admitted: map[string]time.Time{"1": ago(admitAfter), "2": ago(admitAfter - time.Millisecond), "3": ago(time.Hour), "gone": ago(time.Hour)}},
			moves:    []string{"1 queued→scheduling: read by easy"},
			admitted: map[string]time.Duration{"1": admitAfter, "2": admitAfter - time.Millisecond, "3": time.Hour, "4": 0},
		},
		{
			name: "no window: the jobs read stay in queued/",
			in: movesIn{Read: []waitingJob{q("1"), sc("3")},
				Admitted: map[string]time.Time{"1": ago(time.Hour), "3": ago(time.Hour)}},
			admitted: map[string]time.Duration{"1": time.Hour, "3": time.Hour},
		},
		{
			name:     "evicted first",
			in:       movesIn{Read: []waitingJob{q("1")}, Evict: []string{"7", "8"}},
			moves:    []string{"7 scheduling→queued: evicted by an older job from the jobs easy reads", "8 scheduling→queued: evicted by an older job from the jobs easy reads"},
			admitted: map[string]time.Duration{"1": 0},
		},
		{
			name: "refused parts leave their jobs waiting",
			in: movesIn{Read: []waitingJob{q("1"), q("2"), q("3")},
				Plan: policy.Plan{StartNow: []policy.Placement{start("1", "h0"), start("2", "h1")}, Later: []policy.Placement{later("3"), later("1")},
					Reject: []policy.Rejection{{Job: "3", Reason: "no"}}},
				Faults: []policy.Fault{{Job: "1", Part: "start", Index: 0}, {Job: "3", Part: "reject", Index: 0}, {Job: "1", Part: "later", Index: 1}}},
			moves:    []string{"2 queued→runnable: placed by easy on h1, predicted 1m30s | on h1 for 90s"},
			later:    []string{"3"},
			admitted: map[string]time.Duration{"1": 0, "3": 0},
		},
		{
			name: "a job not read, or decided twice, is passed over",
			in: movesIn{Read: []waitingJob{q("1")},
				Plan: policy.Plan{StartNow: []policy.Placement{start("9", "h0"), start("1", "h1")},
					Reject: []policy.Rejection{{Job: "1", Reason: "first"}, {Job: "1", Reason: "second"}}}},
			moves:    []string{"1 queued→rejected: cannot be placed: first | reason first"},
			admitted: map[string]time.Duration{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now, tc.in.Policy = now, "easy"
			out := planMoves(tc.in)
			var moves []string
			for _, m := range out.Moves {
				s := fmt.Sprintf("%s %s→%s: %s", m.JID, m.From, m.To, m.Note)
				switch {
				case m.To == spool.Rejected:
					s += " | reason " + m.Reason
				case m.To == spool.Runnable:
					sch := m.Schedule
					if sch.DecidedAt != now || sch.Policy != "easy" || m.Placement.Job != m.JID || !slices.Equal(m.Placement.Hosts, sch.Hosts) {
						t.Errorf("%s: schedule %+v, placement %+v", m.JID, sch, m.Placement)
					}
					s += fmt.Sprintf(" | on %s for %gs", strings.Join(sch.Hosts, ","), sch.PredictedSeconds)
				}
				moves = append(moves, s)
			}
			if !slices.Equal(moves, tc.moves) {
				t.Errorf("moves:\n  %s\nwant:\n  %s", strings.Join(moves, "\n  "), strings.Join(tc.moves, "\n  "))
			}
			var later []string
			for _, pl := range out.Later {
				later = append(later, pl.Job)
			}
			if !slices.Equal(later, tc.later) {
				t.Errorf("later %v, want %v", later, tc.later)
			}
			admitted := map[string]time.Duration{}
			for jid, since := range out.Admitted {
				admitted[jid] = now.Sub(since)
			}
			if !maps.Equal(admitted, tc.admitted) {
				t.Errorf("admitted %v, want %v", admitted, tc.admitted)
			}
		})
	}
}
