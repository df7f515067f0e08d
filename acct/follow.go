package acct

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Following the live log. The reaper appends to accounting.jsonl and,
// once it is large enough, rotates it (daemons/retention.go): the file is
// linked to accounting.jsonl.1 (the older generations move up) and
// replaced by a new log that starts with copies of the records still
// looked up (jobs recorded but not yet removed, JIDs with a claim). A
// reader that followed the path alone would lose the records appended to
// the old file after its last read, and would count the copies twice.
// Follow reads the file it has open to its end before it moves on to the
// next generation, and passes on a new generation's copies of records it
// has already given.

// Pos is how far Follow has read: the file (its inode; the generations
// are in one directory, so on one file system) and the offset after the
// last whole line read. The zero Pos is the start of the live log, as it
// is when Follow first looks.
type Pos struct {
	Ino    uint64
	Offset int64
}

// posLen is the length of Pos's encoding (Bytes); an encoding of 8 bytes
// is an offset alone, as older readers stored it, in the live log.
const posLen = 16

// Bytes encodes p for storage (ParsePos reads it).
func (p Pos) Bytes() []byte {
	b := binary.LittleEndian.AppendUint64(make([]byte, 0, posLen), p.Ino)
	return binary.LittleEndian.AppendUint64(b, uint64(p.Offset))
}

// ParsePos decodes Bytes; an 8-byte offset (an older reader's) is that
// offset in the live log; anything else is the zero Pos.
func ParsePos(b []byte) Pos {
	switch len(b) {
	case posLen:
		return Pos{Ino: binary.LittleEndian.Uint64(b), Offset: int64(binary.LittleEndian.Uint64(b[8:]))}
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
// Across a rotation nothing is lost or given twice: the old file is read
// to its end, then the new one from its start, its copies of records of
// the old one marked Copy. A from in a generation that has been rotated
// since (a reader that was stopped meanwhile) is found by its inode among
// accounting.jsonl.1, .2, …, read to its end and followed by the newer
// generations in turn. If no file has its inode (deleted by retention, or
// the spool copied elsewhere), the live log is read from from's offset if
// it is that long, else from its start, and a warning logged.
func Follow(ctx context.Context, path string, from Pos, every time.Duration, fn func(Followed) error) error {
	if every <= 0 {
		every = time.Second
	}
	fl := &follower{path: path}
	defer fl.close()
	if err := fl.start(from); err != nil {
		return err
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := fl.poll(ctx, fn); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// follower is Follow's state: the file it reads and how far.
type follower struct {
	path string
	f    *os.File // nil: the live log did not exist yet
	ino  uint64
	off  int64
	// prev is the JIDs of the generation read before f, while f's first
	// records, the rotation's copies, are read; nil once a record of f's
	// own has been read.
	prev map[string]bool
}

func (fl *follower) close() {
	if fl.f != nil {
		fl.f.Close()
		fl.f = nil
	}
}

// start opens the file of from: the live log for a Pos without a file;
// else the generation with from's inode, or, if none has it, the live log
// at from's offset (open: from its start if it is shorter).
func (fl *follower) start(from Pos) error {
	if from.Ino == 0 {
		return fl.open(fl.path, from.Offset)
	}
	for gen := 0; gen <= maxGenerations; gen++ {
		name := fl.generation(gen)
		st, err := os.Stat(name)
		if errors.Is(err, fs.ErrNotExist) {
			if gen == 0 {
				continue // the live log is missing; the generations may not be
			}
			break
		} else if err != nil {
			return fmt.Errorf("acct: %w", err)
		}
		if fileIno(st) == from.Ino {
			return fl.open(name, from.Offset)
		}
	}
	slog.Warn("acct: no accounting log is the file read so far (rotated and deleted, or the spool copied); going on in the live log",
		"path", fl.path, "inode", from.Ino, "offset", from.Offset)
	return fl.open(fl.path, from.Offset)
}

// generation is the name of generation gen: the live log for 0.
func (fl *follower) generation(gen int) string {
	if gen == 0 {
		return fl.path
	}
	return fl.path + "." + strconv.Itoa(gen)
}

// open makes name the file read, from offset (from its start if it is
// shorter: another file now has that name). A missing file leaves none.
func (fl *follower) open(name string, offset int64) error {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("acct: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("acct: %w", err)
	}
	fl.close()
	fl.f, fl.off, fl.ino, fl.prev = f, offset, fileIno(st), nil
	if st.Size() < offset {
		slog.Warn("acct: accounting log shorter than the offset read; reading it from its start", "path", name, "size", st.Size(), "offset", offset)
		fl.off = 0
	}
	return nil
}

// poll gives the records appended since the last poll, moving on through
// the generations that have replaced the file read.
func (fl *follower) poll(ctx context.Context, fn func(Followed) error) error {
	if fl.f == nil {
		if err := fl.open(fl.path, 0); err != nil || fl.f == nil {
			return err
		}
	}
	for {
		if err := fl.readOn(ctx, fn); err != nil {
			return err
		}
		next, err := fl.successor()
		if err != nil || next == "" {
			return err
		}
		// The reaper appends no more to a file once it is rotated: read
		// what it wrote between the read above and the rotation.
		if err := fl.readOn(ctx, fn); err != nil {
			return err
		}
		prev, err := jidsOf(ctx, fl.f)
		if err != nil {
			return err
		}
		if err := fl.open(next, 0); err != nil {
			return err
		}
		if fl.f == nil {
			return nil // gone meanwhile: the next poll opens the live log
		}
		fl.prev = prev
	}
}

// successor is the file that replaced the one read, if it has been
// rotated: the next newer generation, or the live log. "" while the file
// read is still the live log (or there is none to move to).
func (fl *follower) successor() (string, error) {
	for gen := 0; gen <= maxGenerations; gen++ {
		st, err := os.Stat(fl.generation(gen))
		if errors.Is(err, fs.ErrNotExist) {
			if gen == 0 {
				return "", nil // no live log to move to yet
			}
			break
		} else if err != nil {
			return "", fmt.Errorf("acct: %w", err)
		}
		if fileIno(st) == fl.ino {
			if gen == 0 {
				if st.Size() < fl.off { // replaced in place: read it again
					fl.off, fl.prev = 0, nil
				}
				return "", nil
			}
			return fl.generation(gen - 1), nil
		}
	}
	// The file read has no name any more (a rotation that keeps no
	// generations deleted it): the live log follows it.
	return fl.path, nil
}

// readOn gives the whole records of the file read from its offset on.
func (fl *follower) readOn(ctx context.Context, fn func(Followed) error) error {
	if _, err := fl.f.Seek(fl.off, io.SeekStart); err != nil {
		return fmt.Errorf("acct: %w", err)
	}
	br := bufio.NewReaderSize(fl.f, 64<<10)
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return nil
		}
		line, n, err := readLine(br)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil // a last line without its newline is not yet whole
			}
			return fmt.Errorf("acct: %s: %w", fl.f.Name(), err)
		}
		fl.off += int64(n)
		r, ok := ParseRecordLine(line)
		if !ok {
			continue
		}
		copied := false
		if fl.prev != nil {
			if copied = fl.prev[r.JID]; !copied {
				fl.prev = nil
			}
		}
		if err := fn(Followed{Record: r, Next: Pos{Ino: fl.ino, Offset: fl.off}, Copy: copied}); err != nil {
			return err
		}
	}
}

// jidsOf is the set of JIDs with a record in f, read from its start.
func jidsOf(ctx context.Context, f *os.File) (map[string]bool, error) {
	out := map[string]bool{}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, 1<<62), 64<<10)
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return out, nil
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

// fileIno is a file's inode number.
func fileIno(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
