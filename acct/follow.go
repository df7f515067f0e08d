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
	// Offset is the offset after the last whole line read, and Last a hash
	// of that line (0: none), which checks that the file still holds it
	// there.
	Offset int64
	Last   uint64
	// Copies: the file was reached from the generation before it, and
	// every record read so far in it is a copy of one of that generation
	// (Followed.Copy), so the records that follow may be copies too.
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
	b = binary.LittleEndian.AppendUint64(b, p.Last)
	if p.Copies {
		return append(b, 1)
	}
	return append(b, 0)
}

// ParsePos decodes Bytes; an 8-byte offset (an older reader's) is that
// offset in the live log; anything else is the zero Pos.
func ParsePos(b []byte) Pos {
	u := func(i int) uint64 { return binary.LittleEndian.Uint64(b[8*i:]) }
	switch len(b) {
	case posLen:
		return Pos{Ino: u(0), First: u(1), Offset: int64(u(2)), Last: u(3), Copies: b[32] == 1}
	case 8:
		return Pos{Offset: int64(u(0))}
	}
	return Pos{}
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

// Follow reads the accounting log at path (spool/db/accounting.jsonl) from
// from on and calls fn with each whole record, in order, then looks again
// every interval (every ≤ 0: a second) for what was appended, until ctx
// ends (it returns nil) or fn fails (it returns fn's error). A log that
// does not exist yet is waited for; an error reading it is logged and
// tried again at the next look.
//
// Across a rotation the old file is read to its end, then the next
// generation from its start, its copies of records of the old one marked
// Copy. A from in a generation that has been rotated since (a reader that
// was stopped meanwhile) is found again among accounting.jsonl.1, .2, …
// (by inode and first line, or by first line alone in a copied spool), read
// to its end and followed by the newer generations in turn. Records are
// lost or given twice only where this cannot be known:
//   - a from whose file is gone (rotated past retention.accounting_keep
//     while the reader was stopped): the live log is read from its start,
//     and the rest of that file, and the generations between, are lost;
//   - the reaper cuts an append whose fsync failed, and writes it again: a
//     cut of up to cutMemory bytes of records given is seen (the check is
//     the last line given, at each look) and its records are not given
//     again; a cut found only after a restart (the stored position is past
//     the end, or no longer ends with its line) goes on from the last line
//     boundary at or before the position or the end, so what was cut and
//     written back is given again (or, if the log grew past the position
//     meanwhile, some of it may be lost);
//   - a reader resumed among the copies of a generation with no older one
//     kept (retention.accounting_keep 0) gives the rest of the copies again.
//
// A file deleted while Follow reads it (rotated past keep) is read to its
// end from the open file, then the oldest generation written after it.
func Follow(ctx context.Context, path string, from Pos, every time.Duration, fn func(Followed) error) error {
	if every <= 0 {
		every = time.Second
	}
	fl := &follower{path: path}
	defer fl.close()
	started := false
	t := time.NewTicker(every)
	defer t.Stop()
	var lastErr string
	for {
		var err error
		if !started {
			if err = fl.start(ctx, from); err == nil {
				started = true
			}
		}
		if started {
			err = fl.poll(ctx, fn)
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
	ino   uint64
	first uint64 // hash of f's first line; 0 until it has one
	off   int64
	// copies: f was reached from the generation before it, whose JIDs
	// prev holds while f's leading records (the rotation's copies) are
	// read; prev is nil once a record of f's own has been read.
	copies bool
	prev   map[string]bool
	// recent are the records given from f in the last look and this one
	// (from mark on: this one's), at most cutMemory bytes of them, oldest
	// first, to see a cut by; cut are the JIDs of records given and then
	// cut from f, each not given again when it comes back.
	recent []given
	mark   int
	cut    map[string]bool
	// lost counts the looks in a row that found the file read no longer
	// live, yet listed under no name of the log.
	lost int
}

// given is a record given from f: its JID, where its line is, and the
// line's hash.
type given struct {
	jid        string
	start, end int64
	sum        uint64
}

// cutMemory bounds the records remembered to see a cut by: the reaper cuts
// one failed append, a scan's records, at a time.
const cutMemory = 1 << 20

// lostLooks is how many looks may find the file read listed under no name
// (a rename under way) before it is taken as deleted.
const lostLooks = 5

func (fl *follower) close() {
	if fl.f != nil {
		fl.f.Close()
		fl.f = nil
	}
}

// generation is a file of the log: n 0 is the live log, n > 0
// accounting.jsonl.n.
type generation struct {
	n    int
	name string
	fi   fs.FileInfo
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
		out = append(out, generation{n: g.N, name: g.Path, fi: fi})
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
// spool, the only one with its first line; if none has them, the live log
// from its start.
func (fl *follower) start(ctx context.Context, from Pos) error {
	if from.Ino == 0 {
		_, err := fl.open(fl.path, 0, from.Offset)
		return err
	}
	for try := 0; ; try++ {
		gens, err := fl.generations()
		if err != nil {
			return err
		}
		testHookListed()
		i := fl.find(gens, from)
		if i < 0 {
			slog.Warn("acct: the accounting log read so far is gone (rotated past retention.accounting_keep); reading the live log from its start",
				"path", fl.path, "inode", from.Ino, "offset", from.Offset)
			_, err := fl.open(fl.path, 0, 0)
			return err
		}
		ok, err := fl.open(gens[i].name, fileIno(gens[i].fi), 0)
		if err != nil {
			return err
		}
		if !ok {
			if try < lostLooks {
				continue // renamed meanwhile: list again
			}
			return fmt.Errorf("acct: %s keeps changing", gens[i].name)
		}
		if err := fl.seekTo(from); err != nil {
			return err
		}
		if from.Copies {
			// Stopped among the copies: the rest of them are marked too,
			// against the generation before this file (the nearest older
			// one that is another file: while a rotation is under way the
			// live log and .1 are one).
			fl.copies = true
			for _, g := range gens[i+1:] {
				if fileIno(g.fi) != fileIno(gens[i].fi) {
					prev, err := jidsOf(ctx, g.name)
					if err != nil {
						return err
					}
					fl.prev = prev
					break
				}
			}
		}
		return nil
	}
}

// find is the index in gens of from's file: the one with its inode and
// first line, else the only one with its first line; -1 if none.
func (fl *follower) find(gens []generation, from Pos) int {
	byFirst := -1
	for i, g := range gens {
		first, err := firstLineHash(g.name)
		if err != nil {
			continue
		}
		if fileIno(g.fi) == from.Ino && (first == from.First || from.First == 0) {
			return i
		}
		if from.First != 0 && first == from.First {
			if byFirst >= 0 && fileIno(gens[byFirst].fi) != fileIno(g.fi) {
				return -1 // two files begin alike (a record carried twice): neither is known to be it
			}
			byFirst = i
		}
	}
	return byFirst
}

// seekTo sets the offset to from's in the file just opened, checking that
// the line before it is from's last: if the file no longer holds it there
// (the reaper cut it after the position was stored), the offset goes back
// to the last line boundary at or before the end.
func (fl *follower) seekTo(from Pos) error {
	fi, err := fl.f.Stat()
	if err != nil {
		return fmt.Errorf("acct: %w", err)
	}
	off := min(from.Offset, fi.Size())
	if off == 0 {
		return nil
	}
	start, sum, err := lineBefore(fl.f, off)
	if err != nil {
		return err
	}
	if off == from.Offset && (from.Last == 0 || sum == from.Last) {
		fl.off = off
		if from.Last != 0 {
			// Remembered, to see a cut of it later.
			if line, err := readAt(fl.f, start, off); err == nil {
				if r, ok := ParseRecordLine(line); ok {
					fl.recent = append(fl.recent, given{jid: r.JID, start: start, end: off, sum: sum})
				}
			}
		}
		return nil
	}
	// Cut: from the line boundary before the position (or the end).
	b, err := boundaryBefore(fl.f, off)
	if err != nil {
		return err
	}
	slog.Warn("acct: the accounting log no longer holds the position read to (cut); reading on from the line boundary before it",
		"path", fl.f.Name(), "offset", from.Offset, "from", b)
	fl.off = b
	return nil
}

// open makes name the file read, from offset (from its start if it is
// shorter), if it is there and, with ino not 0, is still that inode.
func (fl *follower) open(name string, ino uint64, offset int64) (ok bool, err error) {
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
	fl.f, fl.off, fl.ino, fl.first = f, offset, fileIno(st), 0
	fl.copies, fl.prev, fl.recent, fl.mark, fl.cut, fl.lost = false, nil, nil, 0, nil, 0
	if st.Size() < offset {
		slog.Warn("acct: accounting log shorter than the offset read; reading it from its start", "path", name, "size", st.Size(), "offset", offset)
		fl.off = 0
	}
	return true, nil
}

// poll gives the records appended since the last poll, moving on through
// the generations that have replaced the file read.
func (fl *follower) poll(ctx context.Context, fn func(Followed) error) error {
	if fl.f == nil {
		if ok, err := fl.open(fl.path, 0, 0); err != nil || !ok {
			return err
		}
	}
	for {
		fl.checkCut()
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
		if err := fl.readOn(ctx, fn); err != nil {
			return err
		}
		prev, err := jidsOfFile(ctx, fl.f) // the open file: its name may be another's now
		if err != nil {
			return err
		}
		if ok, err := fl.open(next.name, fileIno(next.fi), 0); err != nil || !ok {
			return err // not there as listed: the next poll looks again
		}
		fl.copies, fl.prev = true, prev
	}
}

// testHookListed runs between start's listing of the generations and its
// opening of one: a test rotates the log there.
var testHookListed = func() {}

// testHookRead runs between poll's read of the file and its look for a
// successor: a test rotates the log there.
var testHookRead = func() {}

// checkCut looks whether the records given in the last look and this one
// are still where they were read; if not, the file was cut (the reaper
// cuts an append whose fsync failed, and writes its records again later,
// maybe in another order): reading goes on from the first record no longer
// there, and those given from it on are not given again when they come
// back. A record given in an earlier look was in an append that did not
// fail. Then the records of this look become the last look's.
func (fl *follower) checkCut() {
	c := slices.IndexFunc(fl.recent, func(g given) bool { return !fl.intact(g) })
	if c >= 0 {
		if fl.cut == nil {
			fl.cut = map[string]bool{}
		}
		for _, g := range fl.recent[c:] {
			fl.cut[g.jid] = true
		}
		fl.off = fl.recent[c].start
		slog.Warn("acct: the accounting log was cut below what was read; reading on from the cut", "path", fl.f.Name(),
			"records", len(fl.recent)-c, "offset", fl.off)
		fl.recent = fl.recent[:c]
		if fl.off == 0 {
			fl.first = 0
		}
	}
	fl.recent = fl.recent[min(fl.mark, len(fl.recent)):]
	fl.mark = len(fl.recent)
}

// intact reports whether g's line is still where it was read.
func (fl *follower) intact(g given) bool {
	line, err := readAt(fl.f, g.start, g.end)
	return err == nil && len(line) > 0 && hashLine(line) == g.sum
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
	// The newer neighbour in the list (the next generation, or the live
	// log) is the file that replaced it.
	for i, g := range gens {
		if g.n > 0 && fileIno(g.fi) == fl.ino {
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
		"path", fl.path, "next", next.name)
	return next, nil
}

// readOn gives the whole records of the file read from its offset on.
func (fl *follower) readOn(ctx context.Context, fn func(Followed) error) error {
	if _, err := fl.f.Seek(fl.off, io.SeekStart); err != nil {
		return fmt.Errorf("acct: %w", err)
	}
	br := bufio.NewReaderSize(fl.f, 64<<10)
	for lines := 0; ; lines++ {
		if lines%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line, n, err := readLine(br)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil // a last line without its newline is not yet whole
			}
			return fmt.Errorf("acct: %s: %w", fl.f.Name(), err)
		}
		start := fl.off
		fl.off += int64(n)
		if fl.first == 0 {
			if fl.first, err = firstLineHashOf(fl.f); err != nil {
				return err
			}
		}
		r, ok := ParseRecordLine(line)
		if !ok {
			continue
		}
		if fl.cut[r.JID] {
			delete(fl.cut, r.JID) // given before it was cut
			continue
		}
		copied := false
		if fl.prev != nil {
			if copied = fl.prev[r.JID]; !copied {
				fl.prev = nil
			}
		}
		if !copied {
			fl.copies = false
		}
		sum := hashLine(line)
		fl.remember(given{jid: r.JID, start: start, end: fl.off, sum: sum})
		next := Pos{Ino: fl.ino, First: fl.first, Offset: fl.off, Last: sum, Copies: fl.copies}
		if err := fn(Followed{Record: r, Next: next, Copy: copied}); err != nil {
			return fnError{err}
		}
	}
}

// remember adds g to the records remembered to see a cut by.
func (fl *follower) remember(g given) {
	fl.recent = append(fl.recent, g)
	for len(fl.recent) > 1 && g.end-fl.recent[0].start > cutMemory {
		fl.recent = fl.recent[1:]
		fl.mark = max(fl.mark-1, 0)
	}
}

// jidsOf is the set of JIDs with a record in the file at path.
func jidsOf(ctx context.Context, path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("acct: %w", err)
	}
	defer f.Close()
	return jidsOfFile(ctx, f)
}

// jidsOfFile is the set of JIDs with a record in f, read from its start:
// those named as a record's "jid" on a whole line (Mentions' reading, with
// no JSON decoded: a rotation reads a whole generation).
func jidsOfFile(ctx context.Context, f *os.File) (map[string]bool, error) {
	out := map[string]bool{}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, 1<<62), 64<<10)
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		line, err := ReadLine(r)
		if err == nil {
			eachJID(line, func(jid string) bool { out[jid] = true; return true })
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

// firstLineHash is firstLineHashOf the file at path.
func firstLineHash(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return firstLineHashOf(f)
}

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

// readAt reads f's bytes [start, end).
func readAt(f *os.File, start, end int64) ([]byte, error) {
	if end <= start || end-start > MaxRecordLine+1 {
		return nil, nil
	}
	b := make([]byte, end-start)
	if _, err := f.ReadAt(b, start); err != nil {
		return nil, err
	}
	return b, nil
}

// lineBefore finds the line that ends at off (off just after its newline):
// its start and hash (0 if there is no whole line there).
func lineBefore(f *os.File, off int64) (start int64, sum uint64, err error) {
	end, err := readAt(f, off-1, off)
	if err != nil {
		return 0, 0, fmt.Errorf("acct: %w", err)
	}
	if len(end) != 1 || end[0] != '\n' {
		return 0, 0, nil
	}
	start, err = boundaryBefore(f, off-1)
	if err != nil {
		return 0, 0, err
	}
	line, err := readAt(f, start, off)
	if err != nil {
		return 0, 0, fmt.Errorf("acct: %w", err)
	}
	return start, hashLine(line), nil
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
