package profiler

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"time"

	berrors "go.etcd.io/bbolt/errors"

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
// log from its start. While the store fails (a full disk) the feed waits
// and tries again; it passes a completed run over only when it cannot be
// counted (run.check: a NUL in a name, a name too long for a store key),
// with a warning naming its JID.
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
	// store counts runs with the position pos in one transaction. While
	// the store fails (a full disk), it tries again, waiting feedRetry and
	// then twice as long each time, up to a minute: a record is never
	// passed over for a fault of the disk. It returns nil once stored, and
	// an error when the store is closed or ctx ends (so that Follow gives
	// nothing more, which a store could take past the records not stored).
	store := func(runs []run, pos acct.Pos) error {
		wait := feedRetry
		for failing := false; ; failing = true {
			err := feedFault()
			if err == nil {
				err = p.observe(runs, map[string][]byte{key: pos.Bytes()})
			}
			if err == nil || errors.Is(err, berrors.ErrDatabaseNotOpen) {
				if failing && err == nil {
					slog.Info("profiler: storing accounting records again")
				}
				return err
			}
			if !failing {
				slog.Warn("profiler: cannot store accounting records; trying again until it can", "err", err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
			wait = min(2*wait, time.Minute)
		}
	}
	return acct.Follow(ctx, path, from, FeedEvery, feedBatch, func(fs []acct.Followed) error {
		runs := make([]run, 0, len(fs))
		for _, f := range fs {
			if f.Copy || !Counts(&f.Record) {
				continue
			}
			r := run{RecordCategory(f.Record), f.User, len(f.Hosts), *f.ActualSeconds}
			if err := r.check(); err != nil {
				slog.Warn("profiler: accounting record not observed", "jid", f.JID, "err", err)
				continue
			}
			runs = append(runs, r)
		}
		return store(runs, fs[len(fs)-1].Next)
	})
}

// Settings of FeedFromAccounting that tests change: feedBatch is the most
// records it counts in one transaction (0: acct.DefaultFollowBatch; a
// benchmark sets 1, one transaction per record, to compare); feedRetry the
// first wait before it tries a failed store again; feedFault, when it
// fails, fails a store as the disk would.
var (
	feedBatch = 0
	feedRetry = time.Second
	feedFault = func() error { return nil }
)

// Counts reports whether the profiler counts r's run: a job that completed
// on hosts (acct.Record.Completed), whose run time says how long it takes.
func Counts(r *acct.Record) bool { return r.Completed() && len(r.Hosts) > 0 }

// RecordCategory is the category an accounting record's run counts in: its
// Category, else (a record of an older reaper) its Executable, which is
// the category of every command but a shell's or an interpreter's.
func RecordCategory(r acct.Record) string {
	if r.Category != "" {
		return r.Category
	}
	return r.Executable
}
