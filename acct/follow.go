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
// log, as it is when Follow first looks.
type Pos struct {
	// Ino and First name the file: its inode, and a hash of its first line
	// (which finds the file again in a spool copied elsewhere, where the
	// inodes differ). Ino 0: the live log, whichever it is (an older
	// reader's offset).
	Ino, First uint64
	// Offset is the offset after the last whole line read.
	Offset int64
	// Copies: every record read so far in the file is a copy of a record of
	// the generation read before it (Followed.Copy), so the records that
	// follow may be copies too.
	Copies bool
}

// posLen is the length of Pos's encoding (Bytes); an encoding of 8 bytes
// is an offset alone, as older readers stored it, in the live log.
const posLen = 25

// Bytes encodes p for storage (ParsePos reads it).
func (p Pos) Bytes() []byte {
	b := binary.LittleEndian.AppendUint64(make([]byte, 0, posLen), p.Ino)
	b = binary.LittleEndian.AppendUint64(b, p.First)
	b = binary.LittleEndian.AppendUint64(b, uint64(p.Offset))
	if p.Copies {
		return append(b, 1)
	}
	return append(b, 0)
}

// ParsePos decodes Bytes; an 8-byte offset (an older reader's) is that
// offset in the live log; anything else is the zero Pos.
func ParsePos(b []byte) Pos {
	switch len(b) {
	case posLen:
		return Pos{Ino: binary.LittleEndian.Uint64(b), First: binary.LittleEndian.Uint64(b[8:]),
			Offset: int64(binary.LittleEndian.Uint64(b[16:])), Copies: b[24] == 1}
	case 8:
		return Pos{Offset: int64(binary.LittleEndian.Uint64(b))}
	}
	return Pos{}
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
// does not exist yet is waited for.
//
// A rotation loses nothing and gives nothing twice: the old file is read
// to its end, then the next generation from its start, its copies of
// records of the old one marked Copy. A from in a generation that has been
// rotated since (a reader that was stopped meanwhile) is found again among
// accounting.jsonl.1, .2, …, read to its end and followed by the newer
// generations in turn. What cannot be recovered, and is logged:
//   - a from whose file is gone (rotated past retention.accounting_keep
//     while the reader was stopped): the live log is read from its start;
//     the rest of that file, and any generation between, are not read;
//   - a file deleted while Follow reads it (rotated past keep) is read to
//     its end from the open file, then the oldest generation newer than it;
//   - a log cut shorter in place (the reaper cuts an append whose fsync
//     failed, and writes it again): reading goes on from its new end, and
//     the records cut, which were given, are not given again when they come
//     back.
func Follow(ctx context.Context, path string, from Pos, every time.Duration, fn func(Followed) error) error {
	if every <= 0 {
		every = time.Second
	}
	fl := &follower{path: path}
	defer fl.close()
	err := fl.start(ctx, from)
	t := time.NewTicker(every)
	defer t.Stop()
	for err == nil {
		if err = fl.poll(ctx, fn); err != nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

// follower is Follow's state: the file it reads and how far.
type follower struct {
	path  string
	f     *os.File // nil: the live log did not exist yet
	ino   uint64
	first uint64 // hash of f's first line; 0 until it has one
	off   int64
	// prev is the JIDs of the generation read before f, while f's first
	// records, the rotation's copies, are read; nil once a record of f's
	// own has been read.
	prev map[string]bool
	// recent are the last records given from f, for a cut (recentLen).
	recent []given
	// cut are the JIDs of records given and then cut from f: each is not
	// given again when it comes back.
	cut map[string]bool
}

// given is a record given from f and the offset after it.
type given struct {
	jid string
	end int64
}

// recentLen bounds the records remembered for a cut: the reaper cuts one
// failed append at a time.
const recentLen = 16

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
	des, err := os.ReadDir(filepath.Dir(fl.path))
	if err != nil {
		return nil, fmt.Errorf("acct: %w", err)
	}
	base := filepath.Base(fl.path)
	var out []generation
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
		fi, err := de.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue // gone meanwhile, or not a log
		}
		out = append(out, generation{n: n, name: filepath.Join(filepath.Dir(fl.path), de.Name()), fi: fi})
	}
	slices.SortFunc(out, func(a, b generation) int { return a.n - b.n })
	return out, nil
}

// start opens the file of from: the live log for a Pos without a file;
// else the generation with from's inode and first line, or, in a copied
// spool, with its first line alone; if none has them, the live log from
// its start.
func (fl *follower) start(ctx context.Context, from Pos) error {
	if from.Ino == 0 {
		_, err := fl.open(fl.path, 0, from.Offset)
		return err
	}
	gens, err := fl.generations()
	if err != nil {
		return err
	}
	match := func(byIno bool) int {
		for i, g := range gens {
			if byIno && fileIno(g.fi) != from.Ino {
				continue
			}
			if first, err := firstLineHash(g.name); err == nil && (first == from.First || byIno && from.First == 0) {
				return i
			}
		}
		return -1
	}
	i := match(true)
	if i < 0 {
		i = match(false)
	}
	if i < 0 {
		slog.Warn("acct: the accounting log read so far is gone (rotated past retention.accounting_keep); reading the live log from its start",
			"path", fl.path, "inode", from.Ino, "offset", from.Offset)
		_, err := fl.open(fl.path, 0, 0)
		return err
	}
	if ok, err := fl.open(gens[i].name, fileIno(gens[i].fi), from.Offset); err != nil || !ok {
		return err
	}
	if from.Copies && i+1 < len(gens) { // gens[i+1]: the generation before it
		// Stopped among the copies: the rest of them are marked too.
		prev, err := jidsOf(ctx, gens[i+1].name)
		if err != nil {
			return err
		}
		fl.prev = prev
	}
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
	fl.prev, fl.recent, fl.cut = nil, nil, nil
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
		fl.prev = prev
	}
}

// testHookRead runs between poll's read of the file and its look for a
// successor: a test rotates the log there.
var testHookRead = func() {}

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
		if live.Size() < fl.off {
			fl.cutTo(live.Size())
		}
		return nil, nil
	}
	gens, err := fl.generations()
	if err != nil {
		return nil, err
	}
	// The newest generation older than the file read is the one it
	// replaced; the one before that in the list (the newer neighbour, or
	// the live log) replaced it.
	for i, g := range gens {
		if g.n > 0 && fileIno(g.fi) == fl.ino {
			if i == 0 {
				return nil, nil // no live log listed (renamed meanwhile): look again
			}
			return &gens[i-1], nil
		}
	}
	fi, err := fl.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("acct: %w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Nlink > 0 {
		return nil, nil // a name not listed yet (a rename under way): look again
	}
	// Deleted (rotated past keep): the oldest generation written after it;
	// older ones left from a larger keep, or a copy, are not newer.
	var next *generation
	for i, g := range gens {
		if !g.fi.ModTime().Before(fi.ModTime()) {
			next = &gens[i]
		}
	}
	if next == nil {
		slog.Warn("acct: the accounting log read was deleted, and no generation is newer; waiting for the live log", "path", fl.path)
	}
	return next, nil
}

// cutTo notes that the file read was cut to size, below the offset read:
// reading goes on from there, and the records given past it are not given
// again when they come back (the reaper writes a cut record again).
func (fl *follower) cutTo(size int64) {
	slog.Warn("acct: the accounting log was cut shorter than what was read; reading on from its end", "path", fl.path, "size", size, "offset", fl.off)
	for _, g := range fl.recent {
		if g.end > size {
			if fl.cut == nil {
				fl.cut = map[string]bool{}
			}
			fl.cut[g.jid] = true
		}
	}
	fl.off, fl.recent, fl.first = size, nil, 0 // cut to nothing, its first line is another
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
		if len(fl.recent) == recentLen {
			fl.recent = fl.recent[1:]
		}
		fl.recent = append(fl.recent, given{r.JID, fl.off})
		next := Pos{Ino: fl.ino, First: fl.first, Offset: fl.off, Copies: fl.prev != nil}
		if err := fn(Followed{Record: r, Next: next, Copy: copied}); err != nil {
			return err
		}
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

// jidsOfFile is the set of JIDs with a record in f, read from its start.
func jidsOfFile(ctx context.Context, f *os.File) (map[string]bool, error) {
	out := map[string]bool{}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, 1<<62), 64<<10)
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		line, err := ReadLine(r)
		if rec, ok := ParseRecordLine(line); ok {
			out[rec.JID] = true
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

// firstLineHashOf is a hash (FNV-1a, never 0) of f's first line, or of its
// first firstLineLen bytes; 0 for a file without a whole first line.
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
	h := fnv.New64a()
	h.Write(buf)
	return h.Sum64() | 1, nil
}

// fileIno is a file's inode number.
func fileIno(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
