package web

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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
// backwards from its end, as far as they need (scanBack), and only the
// model accuracy page and /metrics read it whole.

func accountingPath(sp *spool.Spool) string {
	return filepath.Join(sp.Path(spool.DirDB), acct.JSONL)
}

// readAccounting reads every whole line of the accounting log; unreadable
// lines (a torn last append) are skipped, as the reaper skips them.
func readAccounting(sp *spool.Spool) ([]acct.Record, error) {
	f, err := os.Open(accountingPath(sp))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("web: accounting: %w", err)
	}
	defer f.Close()
	var rs []acct.Record
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		// acct.ReadLine: a line over acct.MaxRecordLine is skipped, not
		// the end of the page.
		line, err := acct.ReadLine(br)
		if r, ok := acct.ParseRecordLine(line); ok {
			rs = append(rs, r)
		}
		if err == io.EOF {
			return rs, nil
		} else if err != nil {
			return rs, fmt.Errorf("web: accounting: %w", err)
		}
	}
}

// scanChunk is how much of the log scanBack reads at a time: a hundred or
// so records.
const scanChunk = 64 << 10

// scanBack calls fn with the whole lines of the accounting log, the last
// first, until fn returns false, the start of the log, or limit bytes read
// (limit ≤ 0: no limit). A last line without its newline is an append in
// progress and is skipped. complete says the scan stopped because fn or
// the log's start said so, not the limit. A missing log is empty.
func scanBack(sp *spool.Spool, limit int64, fn func(line []byte) bool) (complete bool, err error) {
	f, err := os.Open(accountingPath(sp))
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	} else if err != nil {
		return false, fmt.Errorf("web: accounting: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("web: accounting: %w", err)
	}
	pos, read := fi.Size(), int64(0)
	var head []byte  // the end of a line that begins in the next chunk read
	skipping := true // still inside a last line that has no newline yet
	for pos > 0 {
		if limit > 0 && read >= limit {
			return false, nil
		}
		n := min(int64(scanChunk), pos)
		pos -= n
		read += n
		buf := make([]byte, n, n+int64(len(head)))
		if _, err := f.ReadAt(buf, pos); err != nil && !errors.Is(err, io.EOF) {
			return false, fmt.Errorf("web: accounting: %w", err)
		}
		buf = append(buf, head...)
		if skipping {
			i := bytes.LastIndexByte(buf, '\n')
			if i < 0 {
				continue
			}
			buf, skipping = buf[:i], false
		}
		// buf ends where a line ends (its newline cut off); its first
		// segment began in the chunk before, unless this is the log's start.
		for {
			i := bytes.LastIndexByte(buf, '\n')
			if i < 0 {
				break
			}
			if line := buf[i+1:]; len(line) > 0 && !fn(line) {
				return true, nil
			}
			buf = buf[:i]
		}
		if pos == 0 {
			if len(buf) > 0 {
				fn(buf)
			}
			return true, nil
		}
		head = bytes.Clone(buf)
	}
	return true, nil
}

// findRecord is the accounting record of one JID (the job left the spool):
// the log is read from its end, where recently reaped jobs are, and only
// lines that name the JID are decoded.
func findRecord(sp *spool.Spool, jid string) (*acct.Record, error) {
	needle := []byte(`"jid":"` + jid + `"`)
	var found *acct.Record
	_, err := scanBack(sp, 0, func(line []byte) bool {
		if !bytes.Contains(line, needle) {
			return true
		}
		if r, ok := acct.ParseRecordLine(line); ok && r.JID == jid {
			found = &r
			return false
		}
		return true
	})
	if found != nil || err != nil {
		return found, err
	}
	// Not in the live log: an older job, in a rotated generation.
	err = acct.ReadRecords(context.Background(), sp.Path(spool.DirDB), func(r acct.Record) bool {
		if r.JID == jid {
			found = &r
			return false
		}
		return true
	})
	return found, err
}
