// Package learn learns from finished jobs: it reads the reaper's
// accounting log (spool/db/accounting.jsonl), measures each performance
// model's accuracy per architecture, and keeps a multiplicative correction
// that later predictions may apply (config learning.correct). It decodes
// the log by its JSON field names, so that it needs nothing of the daemons.
package learn

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"time"
)

// Record is what learning reads of one accounting record (acct.Record).
type Record struct {
	JID        string `json:"jid"`
	Name       string `json:"name,omitempty"`
	User       string `json:"user,omitempty"`
	Executable string `json:"executable,omitempty"`
	// Category is the profiler's category of the job's command line
	// (profiler.Category: argv[0], and for a shell or an interpreter what
	// it runs); a record without one is categorised by Executable.
	Category         string    `json:"category,omitempty"`
	Model            string    `json:"model,omitempty"` // "": no performance model (the profiler or the walltime predicted it)
	Hosts            []string  `json:"hosts,omitempty"`
	EndedAt          time.Time `json:"ended_at,omitzero"`
	PredictedSeconds *float64  `json:"predicted_seconds,omitempty"`
	ActualSeconds    *float64  `json:"actual_seconds,omitempty"`
	State            string    `json:"state"`
	SWFStatus        int       `json:"swf_status"`
}

// swfCompleted is SWF status 1: the job exited with status 0.
const swfCompleted = 1

// Completed reports whether the job ran to a clean end with a measured run
// time: only such runs say how long the job takes (a failed or cancelled
// run stopped early).
func (r Record) Completed() bool {
	return r.SWFStatus == swfCompleted && r.ActualSeconds != nil && *r.ActualSeconds >= 0
}

// ReadFile reads every whole line of an accounting log; a line that is not
// a record is skipped, as a torn last line is.
func ReadFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("learn: %w", err)
	}
	defer f.Close()
	var out []Record
	_, err = readLines(f, 0, func(r Record, _ int64) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// readLines calls fn for each whole line from offset on, with the offset
// after it, and returns the offset after the last whole line.
func readLines(f *os.File, offset int64, fn func(Record, int64) error) (int64, error) {
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return offset, fmt.Errorf("learn: %w", err)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return offset, nil // a line without its newline is not yet whole
		}
		if err != nil {
			return offset, fmt.Errorf("learn: %w", err)
		}
		offset += int64(len(line))
		var r Record
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &r) != nil || r.JID == "" {
			continue
		}
		if err := fn(r, offset); err != nil {
			return offset, err
		}
	}
}

// Follow reads the accounting log at path from offset on and calls fn for
// each record with the offset just after it, then waits every and reads
// what was appended, until ctx ends (it then returns nil) or fn fails. A
// log that does not exist yet is waited for. A log shorter than the offset
// is a new log (the old one was moved away) and is read from its start.
func Follow(ctx context.Context, path string, offset int64, every time.Duration, fn func(Record, int64) error) error {
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		next, err := followOnce(path, offset, fn)
		if err != nil {
			return err
		}
		offset = next
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func followOnce(path string, offset int64, fn func(Record, int64) error) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return offset, nil
	}
	if err != nil {
		return offset, fmt.Errorf("learn: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return offset, fmt.Errorf("learn: %w", err)
	}
	if st.Size() < offset {
		slog.Warn("learn: accounting log shorter than the offset read; reading the new log from its start", "path", path, "size", st.Size(), "offset", offset)
		offset = 0
	}
	return readLines(f, offset, fn)
}
