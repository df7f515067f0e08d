package acct

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Following the live log. The reaper appends to accounting.jsonl and,
// once it is large enough, rotates it (daemons/retention.go): the older
// generations move up (accounting.jsonl.2, …; the one past
// retention.accounting_keep is deleted), the file is linked to
// accounting.jsonl.1 (with keep > 0), and a new log replaces it by a
// rename, starting with copies of the records still looked up (jobs
// recorded but not yet removed, JIDs with a claim). A reader that followed
// the path alone would lose the records appended to the old file after its
// last read, and would count the copies twice. Follow reads the file it
// has open to its end before it moves on to the next generation, and marks
// a new generation's copies of records it has already given.

// Pos is how far Follow has read. The zero Pos is the start of the live
// log, whichever it is when Follow first looks (StartOf names it).
type Pos struct {
	// Ino and First name the file: its inode, and a hash of its first line
	// (0 while it had none), which finds the file again in a spool copied
	// elsewhere, where the inodes differ. Ino 0: the live log (an older
	// reader's offset).
	Ino, First uint64
	// Offset is the offset after the last whole line read, and Tail a hash
	// of that line (0: none), which checks that the file still holds it
	// there (the reaper cuts a failed append).
	Offset int64
	Tail   uint64
	// Copies: the file was reached from the generation before it, whose
	// records were all given; a record of this file with a JID of that
	// generation is a rotation's copy (Followed.Copy).
	Copies bool
}

// posLen is the length of Pos's encoding (Bytes); an encoding of 8 bytes
// is an offset alone, as older readers stored it, in the live log.
const posLen = 33

// Bytes encodes p for storage (ParsePos reads it).
func (p Pos) Bytes() []byte {
	b := binary.LittleEndian.AppendUint64(make([]byte, 0, posLen), p.Ino)
	b = binary.LittleEndian.AppendUint64(b, p.First)
	b = binary.LittleEndian.AppendUint64(b, uint64(p.Offset))
	b = binary.LittleEndian.AppendUint64(b, p.Tail)
	if p.Copies {
		return append(b, 1)
	}
	return append(b, 0)
}

// ParsePos decodes Bytes; an 8-byte offset (an older reader's) is that
// offset in the live log; anything else, or a negative offset, is the zero
// Pos.
func ParsePos(b []byte) Pos {
	u := func(i int) uint64 { return binary.LittleEndian.Uint64(b[8*i:]) }
	var p Pos
	switch len(b) {
	case posLen:
		p = Pos{Ino: u(0), First: u(1), Offset: int64(u(2)), Tail: u(3), Copies: b[32] == 1}
	case 8:
		p = Pos{Offset: int64(u(0))}
	}
	if p.Offset < 0 {
		return Pos{}
	}
	return p
}

// StartOf is the position at the start of the live log at path as it is
// now (the zero Pos if there is none yet): a reader that stores it before
// it first follows the log resumes in this file even if it is rotated
// before the reader has given a record of it.
func StartOf(path string) (Pos, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Pos{}, nil
	} else if err != nil {
		return Pos{}, fmt.Errorf("acct: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Pos{}, fmt.Errorf("acct: %w", err)
	}
	first, err := firstLineHashOf(f)
	return Pos{Ino: fileIno(fi), First: first}, err
}

// Followed is one record as Follow gives it.
type Followed struct {
	Record
	// Next is the position just after the record: resuming there gives
	// the records after it.
	Next Pos
	// Copy: the record is a rotation's copy, in a new generation, of a
	// record of the generation Follow read before it, which it gave then.
	// A reader that counts records must not count it again (but may store
	// Next).
	Copy bool
}

// DefaultFollowBatch is the most records Follow gives fn at once, unless
// told otherwise: a reader that stores each batch in one fsynced
// transaction (the profiler) catches up on a full log (about 200,000
// records) in a few hundred of them, not one per record.
const DefaultFollowBatch = 1024

// Follow reads the accounting log at path (spool/db/accounting.jsonl) from
// from on and calls fn with the whole records, in order, in batches of at
// most batch records (batch ≤ 0: DefaultFollowBatch), each ending at the
// end of a look or at batch records; then it looks again every interval
// (every ≤ 0: a second) for what was appended, until ctx ends (it returns
// nil; records read and not yet given are dropped, so a reader that stores
// the last Next it was given resumes before them) or fn fails (it returns
// fn's error). fn must not keep the slice, which is reused. A log that
// does not exist yet is waited for; an error reading it is logged and
// tried again at the next look, after the records read before it are
// given.
//
// A JID is given once from a file: Follow keeps the set of those it has
// read in the file it reads (and in the one before, for the copies), about
// 30 bytes a record, rebuilt from the file when it resumes. Across a
// rotation the old file is read to its end, then the next generation from
// its start, its records with a JID of the old one marked Copy. A from in a
// generation that has been rotated since (a reader that was stopped
// meanwhile) is found again among accounting.jsonl.1, .2, … (by inode and
// first line, or in a copied spool by first line alone when that is not
// ambiguous), read to its end and followed by the newer generations in
// turn. The reaper cuts an append whose fsync failed and writes its
// records again later: at each look Follow checks that the file still
// holds the tailLen bytes it read before its offset, and if not, reads the
// file again from its start, giving only the records whose JIDs it has not.
//
// Records are lost or given twice only where this cannot be known:
//   - a from whose file is gone (rotated past retention.accounting_keep
//     while the reader was stopped, or ambiguous in a copied spool): the
//     live log is read from its start, its copies given as new records,
//     and the rest of that file and the generations between are lost (and
//     if the new live log got the deleted file's inode number and first
//     line, it is taken for a cut of it, and its head is skipped);
//   - a from that its file no longer holds (cut while the reader was
//     stopped): reading goes on from the line boundary at or before its
//     offset or the end; a record cut and written back after that is given
//     again, and one written back before it is lost; if the cut emptied the
//     file and it was rotated since, the file is not found (its first line
//     changed), as if gone;
//   - a reader resumed among the copies of a generation whose predecessor
//     is gone (keep 0, or deleted since) gives the rest of the copies as
//     new records, and so does one resumed there after a cut record was
//     written back into that generation.
//
// A file deleted while Follow reads it (rotated past keep) is read to its
// end from the open file, then the oldest generation written after it; a
// file that is no longer one of the log's but still linked (moved away) is
// taken as such after a few looks.
func Follow(ctx context.Context, path string, from Pos, every time.Duration, batch int, fn func([]Followed) error) error {
	if every <= 0 {
		every = time.Second
	}
	if batch <= 0 {
		batch = DefaultFollowBatch
	}
	fl := &follower{path: path}
	defer fl.close()
	started := false
	t := time.NewTicker(every)
	defer t.Stop()
	var lastErr string
	read := make([]Followed, 0, min(batch, 64))
	give := func() error {
		if len(read) == 0 {
			return nil
		}
		err := fn(read)
		clear(read) // no Record kept alive by the reused array
		read = read[:0]
		return err
	}
	add := func(f Followed) error {
		if read = append(read, f); len(read) >= batch {
			return give()
		}
		return nil
	}
	for {
		var err error
		if !started {
			if err = fl.start(ctx, from); err == nil {
				started = true
			}
		}
		if started {
			err = fl.poll(ctx, add)
			if ctx.Err() == nil && !errors.As(err, new(fnError)) {
				if gerr := give(); gerr != nil {
					err = fnError{gerr}
				}
			}
		}
		var fe fnError
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &fe):
			return fe.err
		case err != nil && err.Error() != lastErr:
			slog.Warn("acct: following the accounting log; trying again", "path", path, "err", err)
		}
		lastErr = ""
		if err != nil {
			lastErr = err.Error()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// fnError is an error of Follow's fn, which ends Follow.
type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }
func (e fnError) Unwrap() error { return e.err }

// follower is Follow's state: the file it reads and how far.
type follower struct {
	path  string
	f     *os.File // nil: the live log did not exist yet
	br    *bufio.Reader
	ino   uint64
	first uint64 // hash of f's first line; 0 until it has one
	off   int64
	// win is the last tailLen bytes read, before off (nil: not known, as
	// after a line too long to keep), and tail their hash as of the last
	// look: what checkCut expects the file still to hold there.
	win  []byte
	tail uint64
	// given holds (hashes of) the JIDs read from f before off; prev those
	// of the generation read before f (nil: none), whose records count as
	// copies; copies says that generation was read (Pos.Copies).
	given  jidSet
	prev   jidSet
	copies bool
	// lost counts the looks in a row that found the file read no longer
	// live, yet listed under no name of the log.
	lost int
}

// jidSet is a set of JIDs, by a 64-bit hash of each (jidKey): 200,000
// records, a 64 MiB log, take about 6 MB.
type jidSet map[uint64]struct{}

func jidKey[T string | []byte](jid T) uint64 {
	h := uint64(14695981039346656037) // FNV-1a, 64 bits, without allocating
	for i := range len(jid) {
		h = (h ^ uint64(jid[i])) * 1099511628211
	}
	return h
}

// tailLen is how much of what was read, before the offset, a look checks
// is still there: a dozen records.
const tailLen = 4 << 10

// lostLooks is how many looks may find the file read listed under no name
// (a rename under way) before it is taken as moved away.
const lostLooks = 5

// startLists is how many times start lists the log again while a rotation
// changes the files under the names it listed.
const startLists = 5

func (fl *follower) close() {
	if fl.f != nil {
		fl.f.Close()
		fl.f = nil
	}
}

// generation is a file of the log (Generation) with what Stat told of it.
type generation struct {
	Generation
	fi fs.FileInfo
}

// generations lists the files of the log there are now, the live log
// first, then .1, .2, … (gaps included: a rotation renames one at a time).
func (fl *follower) generations() ([]generation, error) {
	dir, base := filepath.Dir(fl.path), filepath.Base(fl.path)
	names, err := Generations(dir, base)
	if err != nil {
		return nil, err
	}
	out := make([]generation, 0, len(names))
	for _, g := range names {
		fi, err := os.Stat(g.Path)
		if err != nil || !fi.Mode().IsRegular() {
			continue // gone meanwhile, or not a log
		}
		out = append(out, generation{g, fi})
	}
	return out, nil
}

// A Generation is a file of an accounting log: N 0 is the live log, N > 0
// its rotated generation N.
type Generation struct {
	N    int
	Path string
}

// Generations lists the files of the log named base in dir, the live log
// first, then the rotated generations in order (.1, .2, …), those there
// are: a reaper killed in the middle of a rotation's renames leaves a gap
// in the numbers, which later rotations move up.
func Generations(dir, base string) ([]Generation, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("acct: %w", err)
	}
	var out []Generation
	for _, de := range des {
		n := 0
		if name := de.Name(); name != base {
			s, ok := strings.CutPrefix(name, base+".")
			if !ok {
				continue
			}
			if n, err = strconv.Atoi(s); err != nil || n < 1 || strconv.Itoa(n) != s {
				continue
			}
		}
		out = append(out, Generation{N: n, Path: filepath.Join(dir, de.Name())})
	}
	slices.SortFunc(out, func(a, b Generation) int { return a.N - b.N })
	return out, nil
}

// start opens the file of from: the live log for a Pos without a file;
// else the generation with from's inode and first line, or, in a copied
// spool, the only one with its first line that holds from's tail; if none
// has them, the live log from its start.
func (fl *follower) start(ctx context.Context, from Pos) error {
	if from.Ino == 0 {
		ok, err := fl.open(fl.path, 0)
		if err != nil || !ok {
			return err
		}
		return fl.resume(ctx, from.Offset, 0)
	}
	for try := 0; ; try++ {
		gens, err := fl.generations()
		if err != nil {
			return err
		}
		testHookListed()
		i, stale := fl.find(gens, from)
		if stale && try < startLists {
			continue // a file changed under its name while listed: list again
		}
		if i < 0 {
			slog.Warn("acct: the accounting log read so far is gone (rotated past retention.accounting_keep); reading the live log from its start",
				"path", fl.path, "inode", from.Ino, "offset", from.Offset)
			_, err := fl.open(fl.path, 0)
			return err
		}
		ok, err := fl.open(gens[i].Path, fileIno(gens[i].fi))
		if err != nil {
			return err
		}
		if !ok {
			if try < startLists {
				continue // renamed meanwhile: list again
			}
			return fmt.Errorf("acct: %s keeps changing", gens[i].Path)
		}
		if err := fl.resume(ctx, from.Offset, from.Tail); err != nil {
			return err
		}
		if from.Copies {
			// The generation before this file: the nearest older one that
			// is another file (while a rotation is under way the live log
			// and .1 are one).
			fl.copies = true
			for _, g := range gens[i+1:] {
				if fileIno(g.fi) != fileIno(gens[i].fi) {
					if fl.prev, err = jidsOf(ctx, g.Path); err != nil {
						return err
					}
					break
				}
			}
		}
		return nil
	}
}

// find is the index in gens of from's file: the one with its inode and
// first line; else the only one with its first line whose line before
// from's offset is from's last; -1 if none. stale: a name no longer holds
// the file listed under it (a rotation since the listing).
func (fl *follower) find(gens []generation, from Pos) (found int, stale bool) {
	firsts := make([]uint64, len(gens))
	lasts := make([]uint64, len(gens))
	for i, g := range gens {
		f, err := os.Open(g.Path)
		if err != nil {
			stale = true
			continue
		}
		fi, err := f.Stat()
		if err != nil || fileIno(fi) != fileIno(g.fi) {
			f.Close()
			stale = true
			continue
		}
		firsts[i], _ = firstLineHashOf(f)
		lasts[i] = lineHashOf(f, from.Offset)
		f.Close()
		if fileIno(g.fi) == from.Ino && (firsts[i] == from.First || from.First == 0) {
			return i, false
		}
	}
	found = -1
	for i, g := range gens {
		if from.First == 0 || firsts[i] != from.First || from.Tail == 0 || lasts[i] != from.Tail {
			continue
		}
		if found >= 0 && fileIno(gens[found].fi) != fileIno(g.fi) {
			return -1, stale // two files hold it alike: neither is known to be it
		}
		found = i
	}
	return found, stale
}

// resume sets the offset in the file just opened to off, where the line
// before it should hash to last (0: not checked), and reads the JIDs of
// the records before it. If the file no longer holds them there (the
// reaper cut it after the position was stored), reading goes on from the
// line boundary at or before off or the end.
func (fl *follower) resume(ctx context.Context, off int64, last uint64) error {
	fi, err := fl.f.Stat()
	if err != nil {
		return fmt.Errorf("acct: %w", err)
	}
	if off > fi.Size() || last != 0 && lineHashOf(fl.f, off) != last {
		b, err := boundaryBefore(fl.f, min(off, fi.Size()))
		if err != nil {
			return err
		}
		slog.Warn("acct: the accounting log no longer holds what was read (cut); reading on from the line boundary before the position",
			"path", fl.f.Name(), "offset", off, "from", b)
		off = b
	}
	if off == 0 {
		return nil
	}
	if fl.given, err = jidsOfRange(ctx, fl.f, off); err != nil {
		return err
	}
	fl.off, fl.tail = off, tailHashOf(fl.f, off)
	fl.win = nil // read from the file at the next look's end
	if fl.first, err = firstLineHashOf(fl.f); err != nil {
		return err
	}
	return nil
}

// open makes name the file read, from its start, if it is there and, with
// ino not 0, is still that inode.
func (fl *follower) open(name string, ino uint64) (ok bool, err error) {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("acct: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return false, fmt.Errorf("acct: %w", err)
	}
	if ino != 0 && fileIno(st) != ino {
		f.Close()
		return false, nil // renamed meanwhile
	}
	fl.close()
	fl.f, fl.off, fl.tail, fl.win, fl.ino, fl.first = f, 0, 0, []byte{}, fileIno(st), 0
	fl.given, fl.prev, fl.copies, fl.lost = jidSet{}, nil, false, 0
	return true, nil
}

// poll gives the records appended since the last poll, moving on through
// the generations that have replaced the file read.
func (fl *follower) poll(ctx context.Context, fn func(Followed) error) error {
	if fl.f == nil {
		if ok, err := fl.open(fl.path, 0); err != nil || !ok {
			return err
		}
	}
	for {
		if err := fl.checkCut(); err != nil {
			return err
		}
		if err := fl.readOn(ctx, fn); err != nil {
			return err
		}
		testHookRead()
		next, err := fl.successor()
		if err != nil || next == nil {
			return err
		}
		// The reaper appends no more to a file once it is rotated: read
		// what it wrote between the read above and the rotation.
		if err := fl.checkCut(); err != nil {
			return err
		}
		if err := fl.readOn(ctx, fn); err != nil {
			return err
		}
		prev := fl.given
		if ok, err := fl.open(next.Path, fileIno(next.fi)); err != nil || !ok {
			return err // not there as listed: the next poll looks again
		}
		fl.prev, fl.copies = prev, true
	}
}

// testHookListed runs between start's listing of the generations and its
// opening of one: a test rotates the log there.
var testHookListed = func() {}

// testHookRead runs between poll's read of the file and its look for a
// successor: a test rotates the log there.
var testHookRead = func() {}

// checkCut looks whether the file still holds what was read before the
// offset (its size, and the tailLen bytes before it, as they were read: a
// cut while they were read leaves a tail of 0, which no file holds); if
// not, the reaper cut it (an append whose fsync failed, written again
// later, maybe in another order), and the file is read again from its
// start: the records whose JIDs were read are not given again.
func (fl *follower) checkCut() error {
	if fl.off == 0 {
		return nil
	}
	fi, err := fl.f.Stat()
	if err != nil {
		return fmt.Errorf("acct: %w", err)
	}
	if fi.Size() >= fl.off && tailHashOf(fl.f, fl.off) == fl.tail {
		return nil
	}
	slog.Warn("acct: the accounting log was cut below what was read; reading it again from its start, giving only what was not given",
		"path", fl.f.Name(), "size", fi.Size(), "offset", fl.off)
	fl.off, fl.tail, fl.win, fl.first = 0, 0, []byte{}, 0
	return nil
}

// successor is the file that replaced the one read, once it has been
// rotated: the next newer generation, or the live log; nil while the file
// read is still the live log, or while a rotation is half done.
func (fl *follower) successor() (*generation, error) {
	live, err := os.Stat(fl.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no live log to move to yet
	} else if err != nil {
		return nil, fmt.Errorf("acct: %w", err)
	}
	if fileIno(live) == fl.ino {
		fl.lost = 0
		return nil, nil
	}
	gens, err := fl.generations()
	if err != nil {
		return nil, err
	}
	// A listing is names, then each one's file: a rotation between the two
	// can mix before and after. Two that agree are one state.
	again, err := fl.generations()
	if err != nil {
		return nil, err
	}
	if !slices.EqualFunc(gens, again, func(a, b generation) bool { return a.Path == b.Path && fileIno(a.fi) == fileIno(b.fi) }) {
		return nil, nil // a rotation under way: look again
	}
	// The newer neighbour in the list (the next generation, or the live
	// log) is the file that replaced it.
	for i, g := range gens {
		if g.N > 0 && fileIno(g.fi) == fl.ino {
			if i == 0 {
				return nil, nil // no live log listed (renamed meanwhile): look again
			}
			fl.lost = 0
			return &gens[i-1], nil
		}
	}
	fi, err := fl.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("acct: %w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 0 && fl.lost < lostLooks {
		fl.lost++
		return nil, nil // a name not listed yet (a rename under way): look again
	}
	// Deleted (rotated past keep), or moved away: the oldest generation
	// written after it (older ones left from a larger keep are not), else
	// the live log.
	if len(gens) == 0 {
		return nil, nil
	}
	level := slog.LevelDebug // deleted: what a rotation past keep does
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 0 {
		level = slog.LevelWarn
	}
	next := &gens[0]
	for i, g := range gens {
		if !g.fi.ModTime().Before(fi.ModTime()) {
			next = &gens[i]
		}
	}
	slog.Log(context.Background(), level, "acct: the accounting log read is no longer one of the log's files; going on in the oldest written after it",
		"path", fl.path, "next", next.Path)
	return next, nil
}

// readOn gives the whole records of the file read from its offset on.
func (fl *follower) readOn(ctx context.Context, fn func(Followed) error) error {
	defer fl.settle()
	if _, err := fl.f.Seek(fl.off, io.SeekStart); err != nil {
		return fmt.Errorf("acct: %w", err)
	}
	if fl.br == nil {
		fl.br = bufio.NewReaderSize(fl.f, 64<<10)
	} else {
		fl.br.Reset(fl.f)
	}
	for lines := 0; ; lines++ {
		if lines%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line, n, err := readLine(fl.br)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil // a last line without its newline is not yet whole
			}
			return fmt.Errorf("acct: %s: %w", fl.f.Name(), err)
		}
		fl.off += int64(n)
		fl.slide(line, n)
		if fl.first == 0 {
			if fl.first, err = firstLineHashOf(fl.f); err != nil {
				return err
			}
		}
		// A JID read before (a cut written back) is passed over before its
		// JSON is decoded: after a cut the whole file is read again.
		var jid []byte
		eachJID(line, func(j []byte) bool { jid = j; return true }) // the last: a record glued after a torn one
		k := jidKey(jid)
		if _, done := fl.given[k]; done {
			continue
		}
		r, ok := ParseRecordLine(line)
		if !ok {
			continue
		}
		if r.JID != string(jid) { // a glued line whose record is not its last "jid"
			k = jidKey(r.JID)
			if _, done := fl.given[k]; done {
				continue
			}
		}
		fl.given[k] = struct{}{}
		_, copied := fl.prev[k]
		next := Pos{Ino: fl.ino, First: fl.first, Offset: fl.off, Tail: hashLine(line), Copies: fl.copies}
		if err := fn(Followed{Record: r, Next: next, Copy: copied}); err != nil {
			return fnError{err}
		}
	}
}

// slide adds a line read (n bytes, its newline included) to the window of
// the last tailLen bytes read; a line too long to keep makes it unknown.
func (fl *follower) slide(line []byte, n int) {
	if fl.win == nil || len(line)+1 != n {
		fl.win = nil
		return
	}
	// The window is the last tailLen bytes of win (window), which keeps up
	// to twice that, so that its bytes move once per tailLen read, not per
	// line.
	fl.win = append(append(fl.win, line...), '\n')
	if len(fl.win) > 2*tailLen {
		fl.win = append(fl.win[:0], fl.window()...)
	}
}

// window is the last tailLen bytes read (fewer at a file's start), or nil
// without a window.
func (fl *follower) window() []byte {
	return fl.win[max(len(fl.win)-tailLen, 0):]
}

// settle sets the tail checkCut expects at the next look: the hash of the
// bytes read (from the window), so that a cut while they were read is
// seen; without a window, of what the file holds now.
func (fl *follower) settle() {
	switch {
	case fl.off == 0:
		fl.tail = 0
	case fl.win != nil && int64(len(fl.window())) == min(fl.off, tailLen):
		fl.tail = hashLine(fl.window())
	default:
		b := make([]byte, min(fl.off, tailLen))
		if _, err := fl.f.ReadAt(b, fl.off-int64(len(b))); err != nil {
			fl.tail = 0 // shorter than what was read: a cut, for checkCut
			return
		}
		fl.tail, fl.win = hashLine(b), b
	}
}

// jidsOf is the set of JIDs with a record in the file at path.
func jidsOf(ctx context.Context, path string) (jidSet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("acct: %w", err)
	}
	defer f.Close()
	return jidsOfRange(ctx, f, 1<<62)
}

// jidsOfRange is the set of JIDs with a record on a whole line of f before
// off: those named as a record's "jid" (Mentions' reading, with no JSON
// decoded: a rotation or a resume reads a whole generation).
func jidsOfRange(ctx context.Context, f *os.File, off int64) (jidSet, error) {
	out := jidSet{}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, off), 64<<10)
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		line, err := ReadLine(r)
		if err == nil {
			eachJID(line, func(jid []byte) bool { out[jidKey(jid)] = struct{}{}; return true })
		}
		if err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("acct: %s: %w", f.Name(), err)
		}
	}
}

// firstLineLen bounds the part of a file's first line that names it.
const firstLineLen = 4 << 10

// firstLineHashOf is hashLine of f's first line, or of its first
// firstLineLen bytes; 0 for a file without a whole first line.
func firstLineHashOf(f *os.File) (uint64, error) {
	buf := make([]byte, firstLineLen)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("acct: %w", err)
	}
	buf = buf[:n]
	if i := bytes.IndexByte(buf, '\n'); i >= 0 {
		buf = buf[:i]
	} else if n < firstLineLen {
		return 0, nil
	}
	return hashLine(buf), nil
}

// hashLine is a hash of a line (without its newline): FNV-1a, never 0.
func hashLine(line []byte) uint64 {
	h := fnv.New64a()
	h.Write(bytes.TrimSuffix(line, []byte("\n")))
	return h.Sum64() | 1
}

// tailHashOf is a hash of f's tailLen bytes before off (fewer at the
// file's start; never 0), or 0 if f does not hold them (it is shorter).
func tailHashOf(f *os.File, off int64) uint64 {
	start := max(0, off-tailLen)
	b := make([]byte, off-start)
	if _, err := f.ReadAt(b, start); err != nil {
		return 0
	}
	return hashLine(b)
}

// lineHashOf is hashLine of the whole line of f that ends at off (off just
// after its newline), or 0 if there is none.
func lineHashOf(f *os.File, off int64) uint64 {
	nl := make([]byte, 1)
	if off < 1 {
		return 0
	}
	if _, err := f.ReadAt(nl, off-1); err != nil || nl[0] != '\n' {
		return 0
	}
	start, err := boundaryBefore(f, off-1)
	if err != nil || off-start > MaxRecordLine+1 {
		return 0
	}
	b := make([]byte, off-start)
	if _, err := f.ReadAt(b, start); err != nil {
		return 0
	}
	return hashLine(b)
}

// boundaryBefore is the offset just after the last newline before off (0
// if none): the start of the line off is in. It looks back at most
// MaxRecordLine bytes.
func boundaryBefore(f *os.File, off int64) (int64, error) {
	const chunk = 64 << 10
	for end := off; end > 0 && off-end <= MaxRecordLine; {
		start := max(0, end-chunk)
		b := make([]byte, end-start)
		if _, err := f.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("acct: %w", err)
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// fileIno is a file's inode number.
func fileIno(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
