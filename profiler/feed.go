package profiler

import (
	"context"
	"encoding/binary"
	"log/slog"
	"path/filepath"
	"time"

	"msched/learn"
)

// FeedEvery is how often FeedFromAccounting looks for new records: the
// reaper appends one line per finished job, so a second is prompt enough.
const FeedEvery = time.Second

// FeedFromAccounting follows the reaper's accounting log at path (spool/
// db/accounting.jsonl) until ctx ends, and observes every completed job
// (SWF status 1, with a run time) as a run of its category (RecordCategory)
// by its user on as many processors as it had hosts. With a file (Open), the offset
// read so far is stored in the same bbolt transaction as each
// observation, so that after a restart the feed resumes where it stopped
// and never counts a record twice; a memory-only profiler reads the log
// from its start.
func FeedFromAccounting(ctx context.Context, path string, p *Profiler) error {
	key := "feed:" + path
	if abs, err := filepath.Abs(path); err == nil {
		key = "feed:" + abs
	}
	offset := int64(0)
	if b := p.meta(key); len(b) == 8 {
		offset = int64(binary.LittleEndian.Uint64(b))
	}
	return learn.Follow(ctx, path, offset, FeedEvery, func(r learn.Record, next int64) error {
		pos := binary.LittleEndian.AppendUint64(nil, uint64(next))
		if !r.Completed() || len(r.Hosts) == 0 {
			return p.setMeta(key, pos)
		}
		err := p.observe(RecordCategory(r), r.User, len(r.Hosts), *r.ActualSeconds, map[string][]byte{key: pos})
		if err != nil {
			slog.Warn("profiler: accounting record not observed", "jid", r.JID, "err", err)
			return p.setMeta(key, pos)
		}
		return nil
	})
}

// RecordCategory is the category an accounting record's run counts in: its
// Category, else (a record of an older reaper) its Executable, which is
// the category of every command but a shell's or an interpreter's.
func RecordCategory(r learn.Record) string {
	if r.Category != "" {
		return r.Category
	}
	return r.Executable
}
