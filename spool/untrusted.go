package spool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"msched/atomicfile"
)

// submitted/ and control/ are written by every local user (doc.go, "Users
// and permissions"), and the daemons that read them may run as root. A file
// there is what its writer made it at the instant it is opened: a symbolic
// link to /etc/shadow, a FIFO that blocks the reader forever, a link to
// /dev/zero that never ends, a file that grows while it is read. So such a
// file is opened once, without following a link and without blocking, and
// everything the daemons learn about it comes from that one descriptor: its
// type, size and owner from fstat, its bytes from read. Nothing is looked up
// by name a second time.

// MaxJobFile bounds a job file unless the configuration sets another
// bound (init.max_job_bytes: SetMaxJobFile). A job file is a few hundred
// bytes of YAML; a megabyte is thousands of times that, and it bounds what
// init holds in memory for one submission (a 200 MB file once made init use
// 3.5 GB: the bytes, the YAML tree and the rejection that kept them).
const MaxJobFile = 1 << 20

// MinJobFile and MaxJobFileSetting bound what SetMaxJobFile accepts: below
// a kilobyte a job with a few arguments and an environment no longer fits;
// init holds the bytes of a batch of submissions at once (64 of them), so
// 16 MiB each is already a gigabyte.
const (
	MinJobFile        = 1 << 10
	MaxJobFileSetting = 16 << 20
)

// SetMaxJobFile sets the bound on a job file for this spool value and the
// views made from it afterwards (As): what init claims, what Submit
// writes and what msched submit reads (JobFileLimit). The daemons and
// msched submit set it from the same configuration key, init.max_job_bytes.
func (s *Spool) SetMaxJobFile(n int64) error {
	if n < MinJobFile || n > MaxJobFileSetting {
		return fmt.Errorf("spool: the bound on a job file must be %d to %d bytes (%s to %s), got %d",
			MinJobFile, MaxJobFileSetting, humanBytes(MinJobFile), humanBytes(MaxJobFileSetting), n)
	}
	s.maxJob = n
	return nil
}

// limitsFile is where init publishes the bound it claims with
// (db/limits.json, readable by every user), so that msched submit checks
// the same bound when the daemons' configuration file is not readable by
// the user (mode 0600 because it holds secrets).
const limitsFile = "limits.json"

type publishedLimits struct {
	MaxJobBytes int64 `json:"max_job_bytes"`
}

// PublishLimits writes the bound on a job file this spool value has
// (JobFileLimit) to db/limits.json, for UsePublishedLimits.
func (s *Spool) PublishLimits() error {
	b, err := json.Marshal(publishedLimits{MaxJobBytes: s.JobFileLimit()})
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.stage, s.Path(DirDB), limitsFile, append(b, '\n')); err != nil {
		return fmt.Errorf("spool: publish limits: %w", err)
	}
	return nil
}

// UsePublishedLimits sets the bound on a job file to the one init
// published (PublishLimits), which is what init claims with, and reports
// whether there was one. No file (init never ran on this spool) is no
// error.
func (s *Spool) UsePublishedLimits() (bool, error) {
	f, err := os.Open(filepath.Join(s.Path(DirDB), limitsFile))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("spool: limits: %w", err)
	}
	defer f.Close()
	var l publishedLimits
	if err := json.NewDecoder(io.LimitReader(f, 4096)).Decode(&l); err != nil {
		return false, fmt.Errorf("spool: limits %s: %w", f.Name(), err)
	}
	return true, s.SetMaxJobFile(l.MaxJobBytes)
}

// JobFileLimit is the bound on a job file: SetMaxJobFile's, else MaxJobFile.
func (s *Spool) JobFileLimit() int64 {
	if s.maxJob == 0 {
		return MaxJobFile
	}
	return s.maxJob
}

// MaxControl bounds a control request, whose content is one short line
// (ControlBody).
const MaxControl = 4 << 10

// oversizeKept is how much of a submission over MaxJobFile its rejection
// keeps as original: enough for the user to recognise the file, not so much
// that a report carries it.
const oversizeKept = 4 << 10

// untrusted is a file read from a directory that users write.
type untrusted struct {
	data []byte
	uid  int
}

// untrustedError says why a file in a directory users write is not one the
// spool will read. Why is the user's wording; Err, if any, the system's.
type untrustedError struct {
	Why string
	Err error
	// Head is the start of a file that is too large (at most
	// oversizeKept bytes); nil otherwise.
	Head []byte
}

func (e *untrustedError) Error() string { return "spool: " + e.what() }

// what is Why, and the system's error if any.
func (e *untrustedError) what() string {
	if e.Err != nil {
		return e.Why + ": " + e.Err.Error()
	}
	return e.Why
}

func (e *untrustedError) Unwrap() error { return e.Err }

// readUntrusted reads dir/name, a file that a user may have put there and
// may still be changing, through one descriptor opened relative to dir with
// O_NOFOLLOW|O_NONBLOCK: it must be a regular file with one name (no hard
// link), that nobody but its owner may write (othersMayWrite), of at most
// max bytes
// (checked with fstat, and again by reading at most max+1 bytes, so a file
// that grows meanwhile is caught), and its owner is the fstat's. A name that
// is gone wraps ErrNotFound; any other failure is an *untrustedError whose
// Why says what the entry is (a symbolic link, a FIFO, writable by others,
// too large, unreadable).
func readUntrusted(dir, name string, max int64) (untrusted, error) {
	if !plainName(name) {
		return untrusted{}, fmt.Errorf("spool: bad name %q", name)
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return untrusted{}, fmt.Errorf("spool: %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	f, st, err := openRegular(dfd, name, "the daemons")
	if err != nil {
		return untrusted{}, err
	}
	defer f.Close()
	if st.Nlink > 1 {
		// Its owner is the file's, not the linker's: with
		// fs.protected_hardlinks=1 a user may link another's
		// world-writable file, with 0 any file. Submit and RequestCancel
		// make files with one name at every instant.
		return untrusted{}, &untrustedError{Why: fmt.Sprintf("a file with %d names (a hard link), which may be anyone's file: submit a copy", st.Nlink)}
	}
	if who := othersMayWrite(f, &st); who != "" {
		// Its owner need not be its author: whoever may write it chose
		// what it says (a user renames another's 0666 file into
		// submitted/ after writing a job into it), and the daemons would
		// take it as the owner's. Submit and RequestCancel write 0644.
		// The fix is a fresh file, not chmod: chmod does not take back a
		// descriptor opened for writing while others could.
		return untrusted{}, &untrustedError{Why: fmt.Sprintf("%s (mode %04o), so someone other than its owner may have written it, and it would be taken as its owner's: submit a fresh copy that only you may write (msched submit FILE writes one)",
			who, st.Mode&0o7777)}
	}
	data, err := readBounded(f, st.Size, max)
	if err != nil {
		return untrusted{}, err
	}
	return untrusted{data: data, uid: int(st.Uid)}, nil
}

// othersMayWrite says who besides its owner (and root) may write the file
// open as f, whose fstat is st ("writable by every user", "writable by the
// members of group staff"), or "" if nobody may. A group-writable file is
// its owner's alone when the group is the owner's private one, as Debian
// makes for every user (user private groups, where umask 002 makes files
// 0664): the owner's primary group, named as the owner is. By that
// convention the group has no other member; that it has none is not
// checked (os/user does not list a group's members). A POSIX access
// control list may give write to other users and groups whatever the
// file's group is, and the group bits are then its mask: a file with one
// and the group bits' write is refused too.
func othersMayWrite(f *os.File, st *unix.Stat_t) string {
	if st.Mode&0o002 != 0 {
		return "writable by every user"
	}
	if st.Mode&0o020 == 0 {
		return ""
	}
	if hasACL(f) {
		return "writable by other users or groups through its access control list"
	}
	if privateGroup(int(st.Uid), int(st.Gid)) {
		return ""
	}
	return "writable by the members of group " + groupName(int(st.Gid))
}

// aclXattr is the extended attribute that holds a file's POSIX access ACL
// (acl(5)); a file whose ACL is only its mode bits has none.
const aclXattr = "system.posix_acl_access"

// hasACL says whether f has a POSIX access ACL. A file system without
// ACLs has none; any other failure to tell is taken for one, so that what
// cannot be checked is refused.
func hasACL(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return true
	}
	var xerr error
	if err := rc.Control(func(fd uintptr) { _, xerr = unix.Fgetxattr(int(fd), aclXattr, nil) }); err != nil {
		return true
	}
	return xerr == nil || !(errors.Is(xerr, unix.ENODATA) || errors.Is(xerr, unix.EOPNOTSUPP))
}

// privateGroup says whether gid is uid's user private group: uid's
// primary group, named as uid's login name is.
func privateGroup(uid, gid int) bool {
	key := [2]int{uid, gid}
	if p, ok := privateGroups.Load(key); ok {
		return p.(bool)
	}
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return false // not cached: the user may be added
	}
	private := false
	if u.Gid == strconv.Itoa(gid) {
		g, err := user.LookupGroupId(u.Gid)
		if err != nil {
			return false // not cached: the group may be added
		}
		private = g.Name == u.Username
	}
	privateGroups.Store(key, private)
	return private
}

// privateGroups caches privateGroup's answers for the (uid, gid) pairs
// whose user and group have an entry, as userNames caches UserName's: every
// group-writable file init or a daemon reads (every file under umask 002)
// asks, and each answer takes two lookups in /etc/passwd and /etc/group
// (or NSS). A change to either while the daemons run is seen when they
// restart.
var privateGroups sync.Map // [2]int{uid, gid} → bool

// groupName is the name of gid in the group database, or "gid 1234".
func groupName(gid int) string {
	if g, err := user.LookupGroupId(strconv.Itoa(gid)); err == nil {
		return g.Name
	}
	return "gid " + strconv.Itoa(gid)
}

// openRegular opens name relative to the directory dfd (AT_FDCWD: the
// current one) as openat does, and returns it with its fstat if it is a
// regular file. A name that is gone wraps ErrNotFound; anything else that
// is not a regular file it may read is an *untrustedError saying what it
// is. reader names who cannot read it, for the message.
func openRegular(dfd int, name, reader string) (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := openat(dfd, name)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, st, fmt.Errorf("spool: %s: %w", name, ErrNotFound)
	case errors.Is(err, unix.ELOOP):
		return nil, st, &untrustedError{Why: "a symbolic link, not a file (links are not followed here)"}
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return nil, st, &untrustedError{Why: "cannot be read by " + reader + " (permission denied); its owner must be able to read it"}
	case errors.Is(err, unix.ENXIO):
		return nil, st, &untrustedError{Why: "a socket, not a regular file"}
	case err != nil:
		return nil, st, &untrustedError{Why: "cannot be opened", Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, st, &untrustedError{Why: "cannot be examined", Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return nil, st, &untrustedError{Why: kindOf(st.Mode) + ", not a regular file"}
	}
	return f, st, nil
}

// readBounded reads f, a regular file of size bytes by its fstat, through
// its descriptor: a file over max bytes is refused before more than its
// head is read, and one that grows past max while it is read is refused
// too (*untrustedError with the Head).
func readBounded(f *os.File, size, max int64) ([]byte, error) {
	if size > max {
		return nil, tooLarge(f, size, max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, &untrustedError{Why: "cannot be read", Err: err}
	}
	if int64(len(data)) > max {
		// It grew while it was read.
		return nil, &untrustedError{Why: sizeWhy(int64(len(data)), max, true), Head: head(data)}
	}
	return data, nil
}

// ReadJobFile reads the job file at path for msched submit as init will
// read it from submitted/: opened without following a symbolic link and
// without blocking (a FIFO named as the job file is refused, not waited
// on), a regular file by the fstat of that descriptor, of at most max bytes
// (Spool.JobFileLimit), refused before more than that is read. Errors name
// the path and say what it is instead.
func ReadJobFile(path string, max int64) ([]byte, error) {
	f, st, err := openRegular(unix.AT_FDCWD, path, "you")
	var ue *untrustedError
	if errors.As(err, &ue) {
		return nil, fmt.Errorf("spool: %s: %s", path, ue.what())
	} else if errors.Is(err, ErrNotFound) {
		return nil, &os.PathError{Op: "open", Path: path, Err: unix.ENOENT}
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readBounded(f, st.Size, max)
	if errors.As(err, &ue) {
		return nil, fmt.Errorf("spool: %s: %s", path, ue.what())
	}
	return data, err
}

// openat opens name in the directory dfd for reading: without following a
// symbolic link, without blocking on a FIFO or a device, and not inherited
// by the jobs the daemons start. It retries when a signal interrupts it.
func openat(dfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// OpenUntrusted opens path for reading when a user may have put something
// else than a file under its last name (the directory above is trusted): a
// symbolic link there is not followed, a FIFO does not block the open, and
// only a regular file (by fstat of the descriptor) is returned. The reaper
// reads a job's captured output so: output/<JID>/ is the job's user's
// directory. An error for a name that is gone satisfies os.IsNotExist.
func OpenUntrusted(path string) (*os.File, error) {
	fd, err := openat(unix.AT_FDCWD, path)
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, &os.PathError{Op: "open", Path: path, Err: errors.New("a symbolic link, not a file (links are not followed here)")}
	case errors.Is(err, unix.ENXIO):
		return nil, &os.PathError{Op: "open", Path: path, Err: errors.New("a socket, not a regular file")}
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: errors.New(kindOf(st.Mode) + ", not a regular file")}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// tooLarge is the error for a file of size bytes (by fstat) over max; it
// reads the file's first oversizeKept bytes as its Head.
func tooLarge(f *os.File, size, max int64) error {
	buf := make([]byte, oversizeKept)
	n, _ := io.ReadFull(f, buf)
	return &untrustedError{Why: sizeWhy(size, max, false), Head: head(buf[:n])}
}

func sizeWhy(size, max int64, grew bool) string {
	at := fmt.Sprintf("%d bytes", size)
	if grew {
		at = fmt.Sprintf("more than %d bytes (it grew while it was read)", max)
	}
	return fmt.Sprintf("too large: %s, over the limit of %d bytes (%s)", at, max, humanBytes(max))
}

// head is the start of a file that is too large, cut at most oversizeKept
// bytes in and, for text, at a character boundary (so it stays text).
func head(b []byte) []byte {
	if len(b) > oversizeKept {
		b = b[:oversizeKept]
	}
	for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.Valid(b); i++ {
		b = b[:len(b)-1]
	}
	return append([]byte(nil), b...)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// kindOf names a file type from a stat mode, for messages.
func kindOf(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	}
	return "not a file"
}

// entryOwner is the owner uid of dir/name itself (lstat: a link's own
// owner, not its target's), for an entry that could not be read: the user
// who put it there. ok is false if it is gone.
func entryOwner(path string) (uid int, ok bool) {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0, false
	}
	st, isUnix := fi.Sys().(*syscall.Stat_t)
	if !isUnix {
		return 0, false
	}
	return int(st.Uid), true
}

// UserName is the login name of uid in the password database, or "uid1234"
// when it has none. It depends on the uid only, never on the environment of
// the process that asks: a job's user is the owner of its file.
func UserName(uid int) string {
	if n, ok := userNames.Load(uid); ok {
		return n.(string)
	}
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return "uid" + strconv.Itoa(uid) // not cached: the user may be added
	}
	userNames.Store(uid, u.Username)
	return u.Username
}

// userNames caches UserName's answers for uids that have an entry: init
// names every submission's owner, and a lookup reads /etc/passwd (or asks
// NSS). A user renamed while the daemons run keeps the old name until they
// restart.
var userNames sync.Map // int → string

// UserID is the uid of login name name, for job files written before
// msched recorded the uid (they have only the user's name).
func UserID(name string) (int, bool) {
	if name == "" {
		return 0, false
	}
	u, err := user.Lookup(name)
	if err != nil {
		return 0, false
	}
	uid, err := strconv.Atoi(u.Uid)
	return uid, err == nil
}

// describeUser is "bob (uid 1002)".
func describeUser(uid int) string {
	return fmt.Sprintf("%s (uid %d)", UserName(uid), uid)
}
