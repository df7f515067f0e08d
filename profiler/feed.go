package profiler

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"msched/acct"
)

// FeedEvery is how often FeedFromAccounting looks for new records: the
// reaper appends one line per finished job, so a second is prompt enough.
const FeedEvery = time.Second

// FeedFromAccounting follows the reaper's accounting log at path (spool/
// db/accounting.jsonl, through its rotations: acct.Follow) until ctx ends,
// and observes every completed job (SWF status 1, with a run time) as a
// run of its category (RecordCategory) by its user on as many processors
// as it had hosts. With a file (Open), the records acct.Follow gives at
// once (up to acct.DefaultFollowBatch, fewer once caught up) are counted
// in one bbolt transaction, with the position read so far, so that after a
// restart the feed resumes where it stopped and never counts a record
// twice (nor a rotation's copy of one); a memory-only profiler reads the
// log from its start.
func FeedFromAccounting(ctx context.Context, path string, p *Profiler) error {
	key := "feed:" + path
	if abs, err := filepath.Abs(path); err == nil {
		key = "feed:" + abs
	}
	from := acct.ParsePos(p.meta(key))
	if from == (acct.Pos{}) && p.db != nil {
		// Named now, so that a restart after a rotation of this log resumes
		// in it even before a record of it has been read.
		var err error
		if from, err = acct.StartOf(path); err != nil {
			return err
		}
		if err := p.setMeta(key, from.Bytes()); err != nil {
			return err
		}
	}
	return acct.Follow(ctx, path, from, FeedEvery, feedBatch, func(fs []acct.Followed) error {
		runs := make([]run, 0, len(fs))
		for _, f := range fs {
			r, ok, err := feedRun(f)
			if err != nil {
				slog.Warn("profiler: accounting record not observed", "jid", f.JID, "err", err)
			} else if ok {
				runs = append(runs, r)
			}
		}
		_, err := p.observe(runs, map[string][]byte{key: fs[len(fs)-1].Next.Bytes()})
		if err == nil {
			return nil
		}
		// A store that refuses the batch (a full disk, or one run it cannot
		// hold): the records one by one, as before batching; one the store
		// refuses is passed over, its position stored alone, and only a
		// store that refuses that stops the feed.
		slog.Warn("profiler: counting a batch of accounting records failed; counting them one by one", "records", len(fs), "err", err)
		for _, f := range fs {
			var one []run
			if r, ok, err := feedRun(f); ok && err == nil {
				one = []run{r}
			}
			pos := f.Next.Bytes()
			if _, err := p.observe(one, map[string][]byte{key: pos}); err != nil {
				slog.Warn("profiler: accounting record not observed", "jid", f.JID, "err", err)
				if err := p.setMeta(key, pos); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// feedRun is the run a record counts as: ok for a completed job on hosts
// that is not a rotation's copy, err for one that cannot be counted.
func feedRun(f acct.Followed) (r run, ok bool, err error) {
	if f.Copy || !f.Completed() || len(f.Hosts) == 0 {
		return run{}, false, nil
	}
	r = run{RecordCategory(f.Record), f.User, len(f.Hosts), *f.ActualSeconds}
	if err := r.check(); err != nil {
		return run{}, false, err
	}
	return r, true, nil
}

// feedBatch is the most records FeedFromAccounting counts in one
// transaction (0: acct.DefaultFollowBatch); a benchmark sets 1, one
// transaction per record, to compare.
var feedBatch = 0

// RecordCategory is the category an accounting record's run counts in: its
// Category, else (a record of an older reaper) its Executable, which is
// the category of every command but a shell's or an interpreter's.
func RecordCategory(r acct.Record) string {
	if r.Category != "" {
		return r.Category
	}
	return r.Executable
}
