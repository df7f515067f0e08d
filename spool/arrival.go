package spool

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// When init may claim a file in submitted/ (see doc.go, "Submissions and
// claims", and README): a file renamed into submitted/ whole, as Submit and
// every stage-then-rename submitter make it, is complete the instant it
// appears, and is claimed at once. A file written there in place is
// complete only when its writer is done, which nothing in the file says:
// it is claimed once no process has it open for writing and its content
// has not changed for QuietTime. Entries that are no regular file (links,
// FIFOs, directories, sockets) are claimed at once and refused.
//
// How a file arrived is learnt from inotify, read by init itself
// (Arrivals): IN_MOVED_TO is a rename into submitted/, IN_CREATE and
// IN_MODIFY are writes there. The events are read after the directory is
// listed, so every listed file's arrival is known, unless inotify cannot
// be used or its queue overflowed; such a file, like every file already
// there when init starts, is treated as written in place: it waits until
// it is QuietTime old, which costs latency, never a half-read file.

// QuietTime is how long a file written in place in submitted/ must have
// been left unchanged, and closed by every writer, before init claims it.
// A writer that holds its file open is waited for however slowly it
// writes (a read lease tells, see busy); QuietTime covers a writer that
// opens the file for each piece (`echo … >> job.yaml`), pausing less than
// this between pieces. It delays only files written in place: renamed
// ones are claimed at once.
const QuietTime = time.Second

// Arrivals is init's record of how the files in submitted/ arrived. It is
// not safe for concurrent use; init's scan loop is its one user. Close it
// when done.
type Arrivals struct {
	dir string
	fd  int // inotify descriptor; -1 when inotify could not be used
	// how maps a name to true if its last arrival was a rename into
	// submitted/ with no write since, false if it was created or written
	// there. A name that is not in it is unknown.
	how map[string]bool
	// seen is, for files waiting to be quiet, the version last seen (size
	// and mtime) and since when: a file whose mtime is in the future is
	// timed from when it was first seen so.
	seen map[string]version
	buf  []byte
}

type version struct {
	size        int64
	mtime, from time.Time
}

// maxMarks bounds Arrivals.how: a user who creates names faster than
// init claims them costs memory up to this, then only latency (the map
// is dropped and every name is unknown).
const maxMarks = 1 << 16

// Arrivals starts following how files arrive in submitted/. Without
// inotify (its limits reached, a file system without it) it still works,
// treating every file as written in place; err says why.
func (s *Spool) Arrivals() (*Arrivals, error) {
	a := &Arrivals{dir: s.Dir(Submitted), fd: -1, how: map[string]bool{}, seen: map[string]version{}}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return a, &os.SyscallError{Syscall: "inotify_init1", Err: err}
	}
	const mask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MODIFY | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_ONLYDIR
	if _, err := unix.InotifyAddWatch(fd, a.dir, mask); err != nil {
		unix.Close(fd)
		return a, &os.SyscallError{Syscall: "inotify_add_watch", Err: err}
	}
	a.fd, a.buf = fd, make([]byte, 64<<10)
	return a, nil
}

// Close stops following arrivals.
func (a *Arrivals) Close() error {
	if a.fd < 0 {
		return nil
	}
	fd := a.fd
	a.fd = -1
	return unix.Close(fd)
}

// drain reads the events queued so far. On an overflow, or if reading
// fails, what is known is dropped: every name is unknown until its next
// event.
func (a *Arrivals) drain() {
	for a.fd >= 0 {
		n, err := unix.Read(a.fd, a.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			if !errors.Is(err, unix.EAGAIN) {
				clear(a.how)
			}
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&a.buf[off]))
			end := off + unix.SizeofInotifyEvent + int(ev.Len)
			if end > n {
				break
			}
			name := string(trimNUL(a.buf[off+unix.SizeofInotifyEvent : end]))
			off = end
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				clear(a.how)
			case name == "" || name[0] == '.':
			case ev.Mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0:
				delete(a.how, name)
			case ev.Mask&unix.IN_MOVED_TO != 0:
				a.mark(name, true)
			case ev.Mask&(unix.IN_CREATE|unix.IN_MODIFY) != 0:
				a.mark(name, false)
			}
		}
	}
}

func (a *Arrivals) mark(name string, renamed bool) {
	if len(a.how) >= maxMarks {
		clear(a.how)
	}
	a.how[name] = renamed
}

func trimNUL(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}

// Ready picks, from es (a List of submitted/ made before this call), the
// names init may claim now, in the order of es, and says when to look again
// at the others (zero if none waits). See QuietTime.
func (a *Arrivals) Ready(es []Entry, now time.Time) (names []string, next time.Time) {
	a.drain()
	listed := make(map[string]bool, len(es))
	later := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for _, e := range es {
		listed[e.Name] = true
		if a.how[e.Name] {
			names = append(names, e.Name) // renamed in whole
			continue
		}
		v, ok := a.seen[e.Name]
		if !ok || v.size != e.Size || !v.mtime.Equal(e.ModTime) {
			v = version{size: e.Size, mtime: e.ModTime, from: now}
			a.seen[e.Name] = v
		}
		quiet := v.mtime
		if quiet.After(v.from) {
			quiet = v.from // an mtime in the future says nothing
		}
		if due := quiet.Add(QuietTime); due.After(now) && a.regular(e.Name) {
			later(due)
			continue
		}
		if a.busy(e.Name) {
			later(now.Add(QuietTime))
			continue
		}
		names = append(names, e.Name)
	}
	for n := range a.seen {
		if !listed[n] {
			delete(a.seen, n)
		}
	}
	return names, next
}

// regular reports whether submitted/name is a regular file: anything else
// has no content to wait for and is claimed, and refused, at once.
func (a *Arrivals) regular(name string) bool {
	fi, err := os.Lstat(filepath.Join(a.dir, name))
	return err != nil || fi.Mode().IsRegular()
}

// busy reports whether some process has submitted/name open for writing:
// a read lease (fcntl F_SETLEASE) cannot be taken on such a file, and is
// released at once when it can. The file is opened as every untrusted file
// is (no link followed, no blocking open). Where leases are not available
// (another user's file while the daemons are not root, a file system
// without leases) it says false, and QuietTime alone applies.
func (a *Arrivals) busy(name string) bool {
	fd, err := unix.Open(filepath.Join(a.dir, name), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return false // gone, or no file: the claim finds out and says so
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_RDLCK); err != nil {
		return errors.Is(err, syscall.EAGAIN)
	}
	unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
	return false
}
