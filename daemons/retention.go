package daemons

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"msched/acct"
	"msched/spool"
)

// Retention bounds what the spool keeps of jobs that have left it: their
// captured output (output/<JID>/), their reports (reports/<JID>.txt) and
// the accounting log (db/accounting.jsonl and db/accounting.swf). The
// reaper applies it at most once every retentionEvery, after a scan. A
// zero field keeps that kind of file for ever; the zero Retention is the
// behaviour before retention existed.
//
// Output and reports go by age: a job's output directory when neither it
// nor a file directly in it has changed for OutputAge and the job is in no
// state directory (a job that runs, or waits, for longer keeps its
// output); a report when it has not changed for ReportsAge.
//
// The accounting log goes by size, by rotation: once accounting.jsonl (or
// accounting.swf) is larger than AccountingBytes, both become
// accounting.jsonl.1 and accounting.swf.1 (the earlier generations move
// up to .2, …, AccountingKeep; the one beyond is deleted) and new logs are
// started. Readers of the live log lose nothing they rely on:
//
//   - The records of jobs the reaper has recorded but not yet removed
//     (spool.Removable) and of the JIDs that still have a claim in tmp/
//     (claim.<JID>.…) are copied into the new logs, so that a restarted
//     reaper still skips them (no second record) and init's recovery
//     (done.go, reapedJIDs) still finds them done: the live log answers
//     every question asked of it about a JID still in the spool. Such a
//     record is then in two generations.
//   - The new SWF log starts with its header, and its user and executable
//     numbers start again from 1 in order of first appearance in the new
//     accounting.jsonl, as openAccounting numbers them after a restart;
//     each rotated SWF file is a whole SWF file with its own numbering.
//   - Each file is replaced by one rename and the old one is linked to .1
//     before, so that at every instant accounting.jsonl is a whole log.
//     A reader that follows the log (acct.Follow: the profiler's feed,
//     learn's correction) reads the old file it has open to its end, then
//     the new log from its start, where the copies above are marked as
//     such (acct.Follow says what it cannot recover: a reader stopped
//     until its file was rotated past AccountingKeep).
//
// The web page and `msched model accuracy` read accounting.jsonl only:
// records older than the rotation are no longer shown there; they are in
// the rotated files for whoever wants them.
type Retention struct {
	OutputAge       time.Duration
	ReportsAge      time.Duration
	AccountingBytes int64
	AccountingKeep  int // rotated generations kept; 0: a rotated log is deleted
}

// DefaultAccountingBytes is the default size at which the accounting log is
// rotated (retention.accounting_bytes): a record is a few hundred bytes, so
// about 200,000 jobs, and a log that openAccounting reads whole at start
// and init's recovery reads through in well under a second.
const DefaultAccountingBytes = 64 << 20

// retentionEvery is how often the reaper applies Retention: removing by
// age needs no more precision than that, and it lists output/ and reports/,
// which hold a file per job of the last OutputAge.
const retentionEvery = time.Minute

// retainer applies a Retention; it belongs to the reaper's goroutine.
type retainer struct {
	Retention
	last   time.Time
	reopen bool // the logs were rotated but not opened again
}

// apply applies r if it is due at now, and returns what failed; what
// failed is tried again at the next period.
func (r *retainer) apply(ctx context.Context, sp *spool.Spool, alog *accounting, log *slog.Logger, now time.Time) error {
	if now.Sub(r.last) < retentionEvery || ctx.Err() != nil {
		return nil
	}
	r.last = now
	var errs []error
	if r.AccountingBytes > 0 || r.reopen {
		rotated, err := r.rotate(sp, alog)
		errs = append(errs, err)
		if rotated {
			log.Info("accounting log rotated", "limit_bytes", r.AccountingBytes, "kept", r.AccountingKeep)
		}
	}
	if r.ReportsAge > 0 {
		n, err := removeOld(sp.Path(spool.DirReports), now.Add(-r.ReportsAge), nil)
		errs = append(errs, err)
		if n > 0 {
			log.Info("removed old reports", "count", n, "older_than", r.ReportsAge)
		}
	}
	if r.OutputAge > 0 {
		// Two passes, as Spool.Find looks: a job that moves from a
		// directory not yet listed to one already listed is missed by one
		// pass, not by two.
		inSpool, err := jidsIn(sp, spool.States[1:], 2)
		if err != nil {
			errs = append(errs, err)
		} else {
			n, err := removeOld(sp.Path(spool.DirOutput), now.Add(-r.OutputAge), inSpool)
			errs = append(errs, err)
			if n > 0 {
				log.Info("removed old job output", "count", n, "older_than", r.OutputAge)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("daemons: retention: %w", err)
	}
	return nil
}

// removeOld removes the entries of dir (files, or directories with what
// they hold) that have not changed since before cutoff. With keep set, only
// entries named by a JID that keep does not hold: a job's output, kept while
// its job is in the spool. Dot-files are staging files, not ours.
func removeOld(dir string, cutoff time.Time, keep map[string]bool) (int, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	var errs []error
	n := 0
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		if keep != nil && (!spool.ValidJID(name) || keep[name]) {
			continue
		}
		path := filepath.Join(dir, name)
		if !unchangedSince(path, de.IsDir(), cutoff) {
			continue
		}
		// RemoveAll does not follow symbolic links (unlinkat, O_NOFOLLOW):
		// a link a job put in its output directory is removed, not followed.
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// unchangedSince reports whether path, and what is directly in it if it is
// a directory (a job's stdout and stderr), last changed before cutoff.
func unchangedSince(path string, isDir bool, cutoff time.Time) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.ModTime().Before(cutoff) {
		return false
	}
	if !isDir {
		return true
	}
	des, err := os.ReadDir(path)
	if err != nil {
		return false
	}
	for _, de := range des {
		fi, err := de.Info()
		if err != nil || !fi.ModTime().Before(cutoff) {
			return false
		}
	}
	return true
}

// rotate rotates the accounting logs if one is over AccountingBytes (see
// Retention), and reopens alog's files on the new logs.
func (r *retainer) rotate(sp *spool.Spool, alog *accounting) (bool, error) {
	dir := sp.Path(spool.DirDB)
	if r.reopen {
		if err := alog.reopen(dir); err != nil {
			return false, err
		}
		r.reopen = false
	}
	if r.AccountingBytes <= 0 || alog.jsonl.size <= r.AccountingBytes && alog.swf.size <= r.AccountingBytes {
		return false, nil
	}
	// Carried: the records that a restarted reaper (the jobs in
	// spool.Removable, recorded maybe and not yet removed) and init's
	// recovery (the JIDs with a claim in tmp/) still look up.
	keep, err := jidsIn(sp, spool.Removable, 1)
	if err != nil {
		return false, err
	}
	claimed, err := sp.ClaimedJIDs()
	if err != nil {
		return false, err
	}
	for _, jid := range claimed {
		keep[jid] = true
	}
	jsonl, swf, next, err := alog.carried(dir, keep)
	if err != nil {
		return false, err
	}
	// The two logs rotate together, so that generation n of one matches
	// generation n of the other (a crash between the two can shift them
	// by one). Once the first is rotated, alog's files are rotated ones:
	// they must not be appended to again, even if what follows fails.
	for i, f := range []struct {
		name string
		data []byte
	}{{acct.JSONL, jsonl}, {acct.SWF, swf}} {
		if err := rotateFile(dir, f.name, r.AccountingKeep, f.data); err != nil {
			if i == 0 {
				return false, err
			}
			return true, errors.Join(err, r.switchTo(dir, alog, next))
		}
	}
	return true, r.switchTo(dir, alog, next)
}

// switchTo points alog at the new logs; if they cannot be opened, every
// append fails until the next period opens them (closedLog).
func (r *retainer) switchTo(dir string, alog *accounting, next *accounting) error {
	alog.restart(next)
	err := alog.reopen(dir)
	r.reopen = err != nil
	return err
}

// rotateFile makes dir/name generation 1 (the older ones move up, those
// past keep are deleted: also any left by a larger keep, or moved up past
// a gap that a crash between two renames left) and replaces it with data.
// Steps that a crash may separate: a link of dir/name to name.1 that is
// there already (the crash came before the replacement) is not made again,
// so the generations do not move up twice.
func rotateFile(dir, name string, keep int, data []byte) error {
	path := filepath.Join(dir, name)
	gen := func(i int) string { return path + "." + strconv.Itoa(i) }
	cur, err := os.Stat(path)
	if err != nil {
		return err
	}
	if one, err := os.Stat(gen(1)); keep > 0 && (err != nil || !os.SameFile(cur, one)) {
		if err := os.Remove(gen(keep)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for i := keep - 1; i >= 1; i-- {
			if err := os.Rename(gen(i), gen(i+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		if err := os.Link(path, gen(1)); err != nil {
			return err
		}
	}
	gens, err := acct.Generations(dir, name)
	if err != nil {
		return err
	}
	for _, g := range gens {
		if g.N > keep {
			if err := os.Remove(g.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	// Replaced by one rename, the directory fsynced after it (which makes
	// the renames and the link above durable too).
	return spool.WriteAtomic(dir, name, data)
}

// carried returns what the new logs start with: the records (JSON lines
// and SWF lines) of the JIDs in keep, in log order, with the SWF header;
// and the accounting state of the new logs (numbering, sets of recorded
// JIDs), for alog once they are in place. Model accuracies are not part of
// it: they go on counting every job this reaper has seen (after a restart,
// those of the live log).
func (a *accounting) carried(dir string, keep map[string]bool) (jsonl, swf []byte, next *accounting, err error) {
	var recs []acct.Record
	err = eachLine(filepath.Join(dir, acct.JSONL), func(line []byte) {
		if r, ok := acct.ParseRecordLine(line); ok && keep[r.JID] {
			recs = append(recs, r)
		}
	})
	if err != nil {
		return nil, nil, nil, err
	}
	// Written again from the records, not copied: a line that an older
	// msched left torn, with the record glued after its torn start, goes
	// into the new log whole.
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, nil, nil, err
		}
		jsonl = append(append(jsonl, b...), '\n')
	}
	next = &accounting{inSWF: map[string]bool{}, inJSONL: map[string]bool{}, users: map[string]int{}, exes: map[string]int{}}
	byJID := map[string]acct.Record{}
	for _, r := range recs {
		next.number(r)
		next.inJSONL[r.JID] = true
		byJID[r.JID] = r
	}
	swf = []byte(swfHeader)
	err = eachLine(filepath.Join(dir, acct.SWF), func(line []byte) {
		f := strings.Fields(string(line))
		if len(f) != swfFields || strings.HasPrefix(f[0], ";") {
			return
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n <= 0 || !keep[spool.FormatJID(n)] {
			return
		}
		jid := spool.FormatJID(n)
		if r, ok := byJID[jid]; ok {
			user, exe := next.number(r)
			f[swfUser], f[swfExe] = strconv.Itoa(user), strconv.Itoa(exe)
		}
		next.inSWF[jid] = true
		swf = append(swf, strings.Join(f, " ")+"\n"...)
	})
	if err != nil {
		return nil, nil, nil, err
	}
	if len(swf) == len(swfHeader) {
		swf = nil // as openLog leaves a new log: the header comes with the first line
	}
	return jsonl, swf, next, nil
}

// restart takes the state of the new logs (carried).
func (a *accounting) restart(next *accounting) {
	a.inSWF, a.inJSONL, a.users, a.exes = next.inSWF, next.inJSONL, next.users, next.exes
	a.nextUser, a.nextEx = next.nextUser, next.nextEx
}

// swfUser and swfExe are the SWF fields (from 0) of the user and
// executable numbers.
const (
	swfUser = 11
	swfExe  = 13
)

// reopen opens alog's logs again, on the files now at their paths.
func (a *accounting) reopen(dir string) error {
	a.jsonl.close()
	a.swf.close()
	a.jsonl, a.swf = &appendLog{f: closedLog{}}, &appendLog{f: closedLog{}}
	jsonl, _, err := openLog(filepath.Join(dir, acct.JSONL), "")
	if err != nil {
		return err
	}
	swf, _, err := openLog(filepath.Join(dir, acct.SWF), swfHeader)
	if err != nil {
		jsonl.close()
		return err
	}
	a.jsonl, a.swf = jsonl, swf
	return nil
}

// closedLog is the file of a log that could not be opened again after a
// rotation: every append fails, so that no record goes to the rotated log
// and no job is removed unrecorded, until the next retention period opens it.
type closedLog struct{}

var errLogClosed = errors.New("daemons: accounting: log not open after its rotation")

func (closedLog) Write([]byte) (int, error) { return 0, errLogClosed }
func (closedLog) Sync() error               { return errLogClosed }
func (closedLog) Truncate(int64) error      { return errLogClosed }
func (closedLog) Close() error              { return nil }

// eachLine calls fn with every line of the file at path (without its
// newline); a missing file has none.
func eachLine(path string, fn func([]byte)) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := acct.ReadLine(r)
		if len(line) > 0 {
			fn(line)
		}
		if err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// jidsIn is the set of JIDs with a job file in one of states, listed
// passes times.
func jidsIn(sp *spool.Spool, states []spool.State, passes int) (map[string]bool, error) {
	in := map[string]bool{}
	for range passes {
		for _, st := range states {
			es, err := sp.List(st)
			if err != nil {
				return nil, err
			}
			for _, e := range es {
				in[e.Name] = true
			}
		}
	}
	return in, nil
}
