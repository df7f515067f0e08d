package acct

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// The live log grows to retention.accounting_bytes (64 MiB by default,
// about 200,000 jobs) before it is rotated, and the web page, a CGI
// program, reads it on every request: readers that want recent records
// read it backwards from its end, as far as they need (ScanBack).

// scanChunk is how much of the log ScanBack reads at a time: a hundred or
// so records.
const scanChunk = 64 << 10

// ScanBack calls fn with the whole lines of the log file at path, the last
// first, until fn returns false, the start of the file, or limit bytes read
// (limit ≤ 0: no limit). A last line without its newline is an append in
// progress and is skipped. complete says the scan stopped because fn or
// the file's start said so, not the limit. A missing file is empty.
func ScanBack(path string, limit int64, fn func(line []byte) bool) (complete bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	} else if err != nil {
		return false, fmt.Errorf("acct: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("acct: %w", err)
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
			return false, fmt.Errorf("acct: %w", err)
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
		// segment began in the chunk before, unless this is the file's start.
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

// FindRecord is the accounting record of jid (canonical, spool.ParseJID)
// in the log in db (a spool's db/); found is false when no generation has
// it. It reads the newest first, each file once and backwards from its
// end (ScanBack), where recently reaped jobs are: the live log, then the
// rotated generations .1, .2, … that are there (as ReadRecords finds
// them), and decodes only the lines that name jid (Mentions). A JID in two
// generations (a rotation's copy) is given from the newer; within a file,
// the last record of jid. A last line without its newline is an append in
// progress (or torn, and its job still in the spool) and is not looked at.
// As with ReadRecords, a rotation while it reads may make it miss a
// record; read again for it.
func FindRecord(ctx context.Context, db, jid string) (rec Record, found bool, err error) {
	want := map[string]bool{jid: true}
	gens, err := Generations(db, JSONL)
	if err != nil {
		return Record{}, false, err
	}
	for _, g := range gens { // newest first
		file := g.Path
		n := 0
		_, err := ScanBack(file, 0, func(line []byte) bool {
			if n++; n%4096 == 0 && ctx.Err() != nil {
				return false
			}
			if !Mentions(line, want) {
				return true
			}
			if r, ok := ParseRecordLine(line); ok && r.JID == jid {
				rec, found = r, true
				return false
			}
			return true
		})
		switch {
		case err != nil:
			return Record{}, false, err
		case found:
			return rec, true, nil
		case ctx.Err() != nil:
			return Record{}, false, ctx.Err()
		}
	}
	return Record{}, false, nil
}
