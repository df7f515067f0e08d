package daemons

import (
	"context"
	"fmt"
	"path/filepath"

	"msched/acct"
	"msched/spool"
)

// reapedJIDs is init's answer to "has this JID left the system?"
// (spool.Reaped), for the claims its recovery finds with a JID in no state
// directory: the reaper appends a job's accounting record, fsynced, before
// it removes the job file, so a JID in no state directory and in the
// accounting log has been reported and is done; one in neither was never
// moved out of its claim.
//
// The accounting log is the done-marker, rather than a second record kept
// for init: it is written by the one daemon that knows a job is done, at
// the instant it is done. Retention (retention.go) rotates accounting.jsonl,
// and keeps in the new log the records of the JIDs that still have a claim
// in tmp/ (claim.<JID>.…) or a file in finished/ or rejected/, so this
// reader of the live log alone still answers for every JID that asks. Claims outlive their move only when init dies in
// a batch's last milliseconds, so there are at most a batch of them, and
// only while init is down.
//
// The log is read from the start once per recovery that has such claims,
// which is rare; a line is decoded only if it names one of the JIDs asked.
func reapedJIDs(sp *spool.Spool) spool.Reaped {
	path := filepath.Join(sp.Path(spool.DirDB), acct.JSONL)
	return func(ctx context.Context, jids []string) (map[string]bool, error) {
		return jidsInLog(ctx, path, jids)
	}
}

func jidsInLog(ctx context.Context, path string, jids []string) (map[string]bool, error) {
	want := make(map[string]bool, len(jids))
	for _, j := range jids {
		want[j] = true
	}
	found := map[string]bool{}
	// Whole records only (as the reaper reads the log), not a line torn by
	// a crash in an append: its job file was not removed then, so it is in
	// a state.
	err := acct.ReadFile(ctx, path, func(line []byte) bool { return acct.Mentions(line, want) }, func(r acct.Record) bool {
		if want[r.JID] {
			found[r.JID] = true
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("daemons: accounting: %w", err)
	}
	return found, nil
}
