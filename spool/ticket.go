package spool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// How msched submit learns the JID of what it submitted. The JID is init's
// to give (it claims the file, spool.Claim), and a user's msched submit
// cannot take one itself: db/, where the counter is, is the daemons'. So
// submit keeps a Ticket for each file it puts in submitted/ (SubmitTicket):
// its name there, its arrival (the ctime the rename into submitted/ gave
// it) and its inode, and watches tmp/ for init's claim of it, whose name
// carries the same name and arrival, and the JID
// (claim.<JID>.<arrival>.<name>) and, once init has reserved them, an
// array's members (ReserveArray). Name and arrival tell one submission
// from every other but one of the same name that arrived within the same
// tick of the file system's clock after the first was claimed; the inode,
// while the claim is there to be looked at, tells even those apart. If
// init claims the file before submit has read its ctime, init's rename
// sets the ctime again, and the arrival is known only to lie between the
// ctimes just before and just after submit's rename (Ticket.earliest). The
// watch is in place before the file is, so no claim is missed; if its
// events are lost (an overflow, or no inotify), FindTicket looks for the
// claim, or for the job whose first history note and submit time are the
// ticket's.

// Ticket is a file msched submit put in submitted/.
type Ticket struct {
	Name    string    // the file's name in submitted/
	Arrived time.Time // its ctime there, UTC: what init's claim records as its arrival
	// earliest is set when the file had left submitted/ before submit could
	// confirm the ctime it read: init may have claimed it between submit's
	// rename and its fstat, and init's own rename set the ctime again. The
	// arrival init recorded is then known only to lie in [earliest,
	// Arrived] (earliest: the ctime of an fstat just before submit's
	// rename). Another file of the same name would have to arrive and be
	// claimed within that instant, and its claim leave tmp/, to be taken
	// for this one.
	earliest time.Time
	ino      uint64
}

// arrival reports whether a can be t's arrival.
func (t Ticket) arrival(a time.Time) bool {
	if t.earliest.IsZero() {
		return a.Equal(t.Arrived)
	}
	return !a.Before(t.earliest) && !a.After(t.Arrived)
}

// ticketOf is the ticket of a file renamed into submitted/ as final:
// before and after are its fstats just before and just after the rename,
// now an lstat of submitted/final made after both (nil: no such file).
func ticketOf(final string, before, after, now os.FileInfo) Ticket {
	t := Ticket{Name: final}
	a, ok := statOf(after)
	if !ok {
		return t
	}
	t.Arrived, t.ino = ctimeOf(a), a.Ino
	if n, ok := statOf(now); ok && n.Ino == a.Ino {
		// Still there, not yet claimed: init will see the ctime it has now
		// (the rename's, or a later change's).
		t.Arrived = ctimeOf(n)
		return t
	}
	if b, ok := statOf(before); ok {
		t.earliest = ctimeOf(b)
	} else {
		t.earliest = time.Unix(0, 0).UTC() // no bound below: name and inode decide
	}
	return t
}

func statOf(fi os.FileInfo) (*syscall.Stat_t, bool) {
	if fi == nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}

func ctimeOf(st *syscall.Stat_t) time.Time { return time.Unix(st.Ctim.Unix()).UTC() }

// SubmitTicket is Submit, returning the file's Ticket.
func (s *Spool) SubmitTicket(name string, data []byte) (Ticket, error) {
	return s.submit(name, data, -1)
}

// TicketClaim is what init's claim of a file says: the submitted file's
// name (cut as a claim's name cuts it) and arrival, its JID, and an array
// claim's members once reserved (nil before, and for any other job).
type TicketClaim struct {
	Name    string
	Arrived time.Time
	JID     string
	Members []string
	file    string // the claim's name in tmp/
}

// Claimed reports whether c is the claim of t: the same name and arrival,
// and, if the claim is still in tmp/, the same file.
func (s *Spool) Claimed(t Ticket, c TicketClaim) bool {
	if !t.arrival(c.Arrived) || c.Name != shorten(t.Name, nameMax-(len(c.file)-len(c.Name))) {
		return false
	}
	var st unix.Stat_t
	if t.ino == 0 || unix.Lstat(filepath.Join(s.tmp, c.file), &st) != nil {
		return true // moved on: name and arrival are all there is
	}
	return st.Ino == t.ino
}

// ClaimWatch follows init's claims in tmp/ (see above). It is not safe for
// concurrent use. Close it when done.
type ClaimWatch struct {
	fd  int
	buf []byte
}

// WatchClaims starts following the claims init makes. Where inotify cannot
// be used (its limits, a tmp/ the caller may not read) it fails, and the
// caller polls FindTicket instead.
func (s *Spool) WatchClaims() (*ClaimWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, &os.SyscallError{Syscall: "inotify_init1", Err: err}
	}
	if _, err := unix.InotifyAddWatch(fd, s.tmp, unix.IN_MOVED_TO|unix.IN_ONLYDIR); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("spool: watch %s: %w", s.tmp, &os.SyscallError{Syscall: "inotify_add_watch", Err: err})
	}
	return &ClaimWatch{fd: fd, buf: make([]byte, 64<<10)}, nil
}

// Close stops the watch.
func (w *ClaimWatch) Close() error {
	if w == nil || w.fd < 0 {
		return nil
	}
	fd := w.fd
	w.fd = -1
	return unix.Close(fd)
}

// Claims returns the claims made since the last call, waiting up to wait
// for the first (less if ctx ends); lost says that events were lost (the
// queue overflowed): look with FindTicket for what was not seen.
func (w *ClaimWatch) Claims(ctx context.Context, wait time.Duration) (claims []TicketClaim, lost bool, err error) {
	deadline := time.Now().Add(wait)
	for {
		n, err := unix.Read(w.fd, w.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err == nil && n > 0 {
			return w.parse(n)
		}
		if err != nil && !errors.Is(err, unix.EAGAIN) {
			return nil, false, fmt.Errorf("spool: watch claims: %w", err)
		}
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		// Poll in slices, so that ctx is heeded.
		ms := int(min(left, 100*time.Millisecond) / time.Millisecond)
		if _, err := unix.Poll([]unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}, max(ms, 1)); err != nil && !errors.Is(err, unix.EINTR) {
			return nil, false, fmt.Errorf("spool: watch claims: %w", err)
		}
	}
}

func (w *ClaimWatch) parse(n int) (claims []TicketClaim, lost bool, err error) {
	for off := 0; off+unix.SizeofInotifyEvent <= n; {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
		end := off + unix.SizeofInotifyEvent + int(ev.Len)
		if end > n {
			break
		}
		name := string(trimNUL(w.buf[off+unix.SizeofInotifyEvent : end]))
		off = end
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
			lost = true
			continue
		}
		if c, ok := ticketClaim(name); ok {
			claims = append(claims, c)
		}
	}
	return claims, lost, nil
}

// ticketClaim reads a claim file's name.
func ticketClaim(file string) (TicketClaim, bool) {
	jid, members, arrived, name, ok := splitArrayClaim(file)
	return TicketClaim{Name: name, Arrived: arrived, JID: jid, Members: members, file: file}, ok
}

// maxTicketScan bounds the job files FindTicket reads in the states.
const maxTicketScan = 20000

// minCutName is less than any name a claim cuts: its prefix (claim., two
// JIDs, the arrival, three dots) is far below nameMax-minCutName bytes.
const minCutName = 128

// FindTicket looks for init's claim of t without a watch: among the claims
// in tmp/, then, as the claim is removed once its job is queued, among the
// jobs whose JID is above after (the counter before t was submitted,
// LastJID) in the daemons' states, by their first history note ("as
// <name>") and submit time (the arrival), reading at most maxTicketScan of
// them; an array's members are its jobs with the first one's array_job.
// found is false if neither has it: init has not claimed it yet, or its
// job has left the spool.
func (s *Spool) FindTicket(t Ticket, after int64) (c TicketClaim, found bool, err error) {
	files, err := s.claimFiles()
	if err != nil {
		return c, false, err
	}
	for _, f := range files {
		if tc, ok := ticketClaim(f); ok && s.Claimed(t, tc) {
			return tc, true, nil
		}
	}
	read := 0
	var first string
	var arrived time.Time
	var members []string
	for _, st := range States[1:] {
		names, err := s.Names(st)
		if err != nil {
			return c, false, err
		}
		for _, name := range names {
			if n, ok := JIDNumber(name); !ok || n <= after {
				continue
			}
			if read++; read > maxTicketScan {
				return c, false, nil
			}
			j, err := s.Read(st, name)
			if err != nil || len(j.History) == 0 {
				continue // moved on, or not for us to judge
			}
			note, ok := strings.CutPrefix(j.History[0].Note, "as ")
			// The note names the file as its claim did: cut, if its name
			// was too long for a claim's (shorten), to more than
			// minCutName bytes.
			cut := len(note) > minCutName && strings.HasPrefix(t.Name, note)
			if !ok || note != t.Name && !cut || !t.arrival(j.SubmittedAt) {
				continue
			}
			if j.ArrayJob == "" {
				return TicketClaim{Name: note, Arrived: j.SubmittedAt, JID: j.JID}, true, nil
			}
			first, arrived = j.ArrayJob, j.SubmittedAt
			members = append(members, j.JID)
		}
	}
	if first == "" {
		return c, false, nil
	}
	slices.SortFunc(members, CompareJID)
	return TicketClaim{Name: t.Name, Arrived: arrived, JID: first, Members: members}, true, nil
}

// ReadJobStream reads a job file from r (msched submit -: standard input)
// as ReadJobFile reads one from a file: at most max bytes, refused, with
// the bound, when longer, before more than max+1 bytes are read.
func ReadJobStream(r io.Reader, name string, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("spool: %s: %w", name, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("spool: %s: too large: over the limit of %d bytes (%s)", name, max, humanBytes(max))
	}
	return data, nil
}
