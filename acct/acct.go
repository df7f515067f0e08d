// Package acct is msched's accounting log, under a spool's db/: one line
// per job that left the system, as JSON (JSONL: names, hosts, reasons) and
// as SWF (the Parallel Workloads Archive's format, for the simulator). The
// reaper writes it (daemons); the command line (status, history), the web
// page and the chaos checks read it, through Record, ParseRecordLine,
// Mentions, ReadRecords, ReadRecordsOf, ReadLine, ScanBack and FindRecord
// here; the profiler and learn follow it as it grows, through its
// rotations, with Follow.
package acct

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// The accounting log, under spool/db/: one line per job that left the
// system, in two forms. The SWF file (Standard Workload Format 2.2, the
// Parallel Workloads Archive's) feeds the simulator and other tools; the
// JSON lines keep what SWF cannot (names, hosts, reasons).
const (
	SWF   = "accounting.swf"
	JSONL = "accounting.jsonl"
)

// Record is one line of accounting.jsonl.
type Record struct {
	JID              string    `json:"jid"`
	Name             string    `json:"name,omitempty"`
	User             string    `json:"user,omitempty"`
	UID              *int      `json:"uid,omitempty"`        // the submitter's uid (nil in records written before it was kept)
	Executable       string    `json:"executable,omitempty"` // command[0]
	Category         string    `json:"category,omitempty"`   // the profiler's category of the command (profiler.Category)
	Model            string    `json:"model,omitempty"`      // performance model; "": none (profiler or walltime)
	Hosts            []string  `json:"hosts,omitempty"`
	SubmittedAt      time.Time `json:"submitted_at,omitzero"`
	StartedAt        time.Time `json:"started_at,omitzero"`
	EndedAt          time.Time `json:"ended_at,omitzero"`
	WaitSeconds      *float64  `json:"wait_seconds,omitempty"`
	PredictedSeconds *float64  `json:"predicted_seconds,omitempty"`
	ActualSeconds    *float64  `json:"actual_seconds,omitempty"`
	ExitStatus       *int      `json:"exit_status,omitempty"`
	Signal           string    `json:"signal,omitempty"`
	State            string    `json:"state"` // spool.Outcome: exited (from finished/) or rejected
	Reason           string    `json:"reason,omitempty"`
	Attempts         int       `json:"attempts,omitempty"`
	Cancelled        bool      `json:"cancelled,omitempty"`
	SWFStatus        int       `json:"swf_status"`
}

// End is how a job ended, as its record says: the one reading of a record
// for every reader (SWF status, `msched history`, the status page, its
// metrics, afterok: dependencies and submit --wait).
type End string

// How a job may end; a record is of the first that fits.
const (
	EndCancelled End = "cancelled" // cancelled by its user, before or while it ran
	EndRejected  End = "rejected"  // never ran: invalid, or never placeable
	EndCompleted End = "completed" // ran and exited by itself with status 0
	EndKilled    End = "killed"    // ran and was killed by a signal (walltime, a lost host, …)
	EndFailed    End = "failed"    // ran and ended otherwise: a non-zero status, or given up on (Reason)
)

// EndOf is the End of a job in state (OutcomeExited "exited", or
// "rejected") with those cancel flag, exit status, signal and reason; a
// reason of "cancelled" is a cancel too.
func EndOf(state string, cancelled bool, exit *int, signal, reason string) End {
	switch {
	case cancelled || reason == "cancelled":
		return EndCancelled
	case state == outcomeRejected:
		return EndRejected
	case state == outcomeExited && exit != nil && *exit == 0 && signal == "" && reason == "":
		return EndCompleted
	case signal != "":
		return EndKilled
	}
	return EndFailed
}

// End is how r's job ended.
func (r *Record) End() End { return EndOf(r.State, r.Cancelled, r.ExitStatus, r.Signal, r.Reason) }

// The values of Record.State (spool.OutcomeExited, spool.OutcomeRejected,
// which acct, a leaf, does not import; a test checks they agree).
const (
	outcomeExited   = "exited"
	outcomeRejected = "rejected"
)

// SWF status codes (field 11) that msched writes, in Record.SWFStatus.
const (
	SWFFailed    = 0 // ended with a non-zero status, a signal or a reason, or rejected
	SWFCompleted = 1 // exit status 0
	SWFCancelled = 5 // cancelled by its user
)

// Completed reports whether the job ran to a clean end with a measured run
// time: only such runs say how long the job takes (a failed or cancelled
// run stopped early).
func (r *Record) Completed() bool {
	return r.SWFStatus == SWFCompleted && r.ActualSeconds != nil && *r.ActualSeconds >= 0
}

// Latest is the last time r knows of: when the job ended, else started,
// else was submitted.
func (r *Record) Latest() time.Time {
	t := r.SubmittedAt
	if r.StartedAt.After(t) {
		t = r.StartedAt
	}
	if r.EndedAt.After(t) {
		t = r.EndedAt
	}
	return t
}

// ParseRecordLine decodes one line of accounting.jsonl; ok is false for a
// line that holds no whole record. A line that does not decode may be the
// torn start of an append that an older msched did not cut back (a write
// that failed half-way on a full disk), with the record written again
// after it on the same line: `{"jid":"J000080","name":"d-00{"jid":"J000080",…}`.
// The last record start on such a line is tried too, so that the record is
// not lost to its torn prefix. Readers of the log should use this.
func ParseRecordLine(line []byte) (r Record, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return r, false
	}
	if json.Unmarshal(line, &r) == nil && r.JID != "" {
		return r, true
	}
	if i := bytes.LastIndex(line, []byte(`{"jid":`)); i > 0 {
		r = Record{}
		if json.Unmarshal(line[i:], &r) == nil && r.JID != "" {
			return r, true
		}
	}
	return Record{}, false
}

// Mentions reports whether line names one of jids as a record's "jid" (a
// line glued from a torn record and a whole one names two): the cheap test
// that spares a reader looking for a few jobs decoding the others' lines
// (ParseRecordLine). A record is written as compact JSON, its "jid" first.
func Mentions(line []byte, jids map[string]bool) bool {
	found := false
	eachJID(line, func(jid []byte) bool { found = jids[string(jid)]; return !found })
	return found
}

// eachJID calls fn with each JID that line names as a record's "jid" (a
// slice of line), until fn returns false.
func eachJID(line []byte, fn func(jid []byte) bool) {
	key := []byte(`"jid":"`)
	for {
		i := bytes.Index(line, key)
		if i < 0 {
			return
		}
		line = line[i+len(key):]
		if j := bytes.IndexByte(line, '"'); j > 0 && !fn(line[:j]) {
			return
		}
	}
}

// ReadRecords calls fn with every record of the accounting log in db (a
// spool's db/), oldest first: the rotated generations that are there
// (accounting.jsonl.N … .1, see retention.go; Generations, which lists them
// past a gap a killed rotation left), then the live log; it stops
// when fn returns false. A JID in two generations (a rotation copies into
// the new log the records of jobs still in the spool) is given once, from
// the older. Lines that hold no whole record (ParseRecordLine) are skipped.
// A rotation while it reads may make it miss the records of the last
// moments before it; read again for those.
func ReadRecords(ctx context.Context, db string, fn func(Record) bool) error {
	return readRecords(ctx, db, nil, fn)
}

// ReadRecordsOf is ReadRecords for the records of jids alone: only the
// lines that mention one of them (Mentions) are decoded.
func ReadRecordsOf(ctx context.Context, db string, jids []string, fn func(Record) bool) error {
	want := make(map[string]bool, len(jids))
	for _, jid := range jids {
		want[jid] = true
	}
	return readRecords(ctx, db, func(line []byte) bool { return Mentions(line, want) },
		func(r Record) bool { return !want[r.JID] || fn(r) })
}

// readRecords is ReadRecords, decoding only the lines that keep accepts
// (nil: all of them).
func readRecords(ctx context.Context, db string, keep func(line []byte) bool, fn func(Record) bool) error {
	gens, err := Generations(db, JSONL)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for k := len(gens) - 1; k >= 0; k-- { // oldest first
		file := gens[k].Path
		more, err := readRecordFile(ctx, file, keep, func(r Record) bool {
			if seen[r.JID] {
				return true
			}
			seen[r.JID] = true
			return fn(r)
		})
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// ReadFile reads the records of one accounting file at path in order,
// handing fn each whole one (a torn or over-long line is skipped) until fn
// returns false; keep, if not nil, picks the lines worth decoding (Mentions).
// A file that does not exist holds no records.
func ReadFile(ctx context.Context, path string, keep func(line []byte) bool, fn func(Record) bool) error {
	_, err := readRecordFile(ctx, path, keep, fn)
	return err
}

// readRecordFile calls fn with each record of one log file (none if it is
// missing) on a line that keep accepts (nil: every line); more is false
// when fn stopped it.
func readRecordFile(ctx context.Context, path string, keep func(line []byte) bool, fn func(Record) bool) (more bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	} else if err != nil {
		return false, fmt.Errorf("acct: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 0; ; n++ { // a context ended already stops it before the first line
		if n%4096 == 0 && ctx.Err() != nil {
			return false, ctx.Err()
		}
		line, err := ReadLine(r)
		if keep == nil || keep(line) {
			if rec, ok := ParseRecordLine(line); ok && !fn(rec) {
				return false, nil
			}
		}
		if err == io.EOF {
			return true, nil
		} else if err != nil {
			return false, fmt.Errorf("acct: %s: %w", path, err)
		}
	}
}

// MaxRecordLine bounds a line of accounting.jsonl that is looked at; a
// record is a few hundred bytes, a rejection's reason at most a few KiB.
const MaxRecordLine = 1 << 20

// ReadLine returns the next line without its newline; a line longer than
// MaxRecordLine comes back empty (no record is that long).
func ReadLine(r *bufio.Reader) ([]byte, error) {
	line, _, err := readLine(r)
	return line, err
}

// readLine is ReadLine, also returning the bytes it read (the newline
// included).
func readLine(r *bufio.Reader) (line []byte, n int, err error) {
	long := false
	for {
		chunk, err := r.ReadSlice('\n')
		n += len(chunk)
		if !long && len(line)+len(chunk) <= MaxRecordLine {
			line = append(line, chunk...)
		} else {
			long, line = true, nil
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), n, err
	}
}
