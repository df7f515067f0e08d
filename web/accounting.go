package web

import (
	"context"
	"fmt"
	"path/filepath"

	"msched/acct"
	"msched/spool"
)

// The accounting log (db/accounting.jsonl), which the reaper appends a line
// to for every job that leaves the spool, is where the page finds the jobs
// that have ended: the reaper removes a job file as soon as it has written
// the job's report and record, so finished/ and rejected/ are almost always
// empty. The log grows to retention.accounting_bytes (64 MiB by default,
// about 200,000 jobs) before it is rotated, and a CGI program reads it on
// every request: the overview and the recent jobs list therefore read it
// backwards from its end, as far as they need (acct.ScanBack), and only the
// model accuracy page and /metrics read it whole.

func accountingPath(sp *spool.Spool) string {
	return filepath.Join(sp.Path(spool.DirDB), acct.JSONL)
}

// readAccounting reads every whole line of the accounting log; unreadable
// lines (a torn last append) are skipped, as the reaper skips them.
func readAccounting(sp *spool.Spool) ([]acct.Record, error) {
	var rs []acct.Record
	err := acct.ReadFile(context.Background(), accountingPath(sp), nil, func(r acct.Record) bool {
		rs = append(rs, r)
		return true
	})
	if err != nil {
		return rs, fmt.Errorf("web: accounting: %w", err)
	}
	return rs, nil
}

// scanBack is acct.ScanBack of the accounting log.
func scanBack(sp *spool.Spool, limit int64, fn func(line []byte) bool) (complete bool, err error) {
	return acct.ScanBack(accountingPath(sp), limit, fn)
}

// findRecord is the accounting record of one JID (the job left the spool),
// nil if no generation of the log has it (acct.FindRecord). Any visitor
// may ask for any JID, and a miss reads every generation: a JID that is
// not one, or is above the last one given (spool.LastJID, which is written
// before a job exists), is answered nil without reading the log. If the
// counter cannot be read, the log is.
func findRecord(sp *spool.Spool, jid string) (*acct.Record, error) {
	n, ok := spool.JIDNumber(jid)
	if !ok {
		return nil, nil
	}
	if last, err := sp.LastJID(); err == nil && n > last {
		return nil, nil
	}
	r, found, err := acct.FindRecord(context.Background(), sp.Path(spool.DirDB), jid)
	if !found || err != nil {
		return nil, err
	}
	return &r, nil
}
