// Package atomicfile writes files so that a reader, or a crash, sees the
// old content or all of the new one, never a part: write a temporary on the
// same file system, fsync it, rename it into place, fsync the directory.
// It is msched's one atomic-write path: every package writes through it
// (Write, WriteNoDirSync, WriteNoSync, a Pool), and takes its locks with
// TryLock. It is a leaf (nothing of msched's) so that the job shepherd,
// which links nothing else of msched's, can use it too.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Perm is the mode of every file written: msched's web page and status
// command read job files, reports and db files as other users.
const Perm = 0o644

// Pending is a file being written that will atomically replace (or
// create) dir/name when committed. Use it like renameio:
//
//	p, err := atomicfile.New(staging, dir, name)
//	if err != nil { return err }
//	defer p.Cleanup()
//	... write to p ...
//	return p.Commit()
//
// Cleanup is a no-op after a successful Commit, or a CommitNoReplace that
// renamed the file.
type Pending struct {
	*os.File
	dir, name string
	done      bool
}

// New creates a temporary file in staging, which must be on the
// same file system as dir (rename(2) does not cross file systems). With an
// empty staging the temporary is a dot-file in dir itself (msched's spool
// listings and watchers ignore dot-files).
func New(staging, dir, name string) (*Pending, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	pattern := name + ".*"
	if staging == "" {
		staging, pattern = dir, "."+name+".*"
	}
	f, err := os.CreateTemp(staging, pattern)
	if err != nil {
		return nil, fmt.Errorf("atomicfile: %w", err)
	}
	return &Pending{File: f, dir: dir, name: name}, nil
}

// Commit makes the written data durable and visible under dir/name:
// fsync the file, close it, rename it into place, fsync dir.
//
// The file fsync comes before the rename because, without it, a zero-length
// or partial file is a valid outcome after a crash that keeps the rename
// (renameio makes the same point). The directory fsync after the rename makes
// the new name itself durable; renameio leaves that to the caller, the spool
// does it here because a job that was "moved" must stay moved.
func (p *Pending) Commit() error {
	if err := p.CommitNoDirSync(); err != nil {
		return err
	}
	return SyncDir(p.dir)
}

// CommitNoDirSync is Commit without the fsync of the directory: the data is
// durable before the rename, the rename itself is not yet. It is for a
// caller that makes it durable with a later fsync: on a file system that
// journals metadata in order (ext4, xfs, btrfs), an fsync of any directory
// commits every rename made before it.
func (p *Pending) CommitNoDirSync() error { return p.commit(true) }

// CommitNoSync is Commit without any fsync: a reader sees the old file or
// all of the new one, but a crash may leave either, or (on a file system
// that does not write a file's data before a rename over it) an empty or
// partial file under the name. It is for files rewritten often and derived
// from others, which their writer writes again soon after a restart (the
// published schedule, a heartbeat): for them an fsync buys nothing but
// latency.
func (p *Pending) CommitNoSync() error { return p.commit(false) }

func (p *Pending) commit(sync bool) error {
	if p.done {
		return fmt.Errorf("atomicfile: %s: already committed", p.name)
	}
	if err := seal(p.File, sync); err != nil {
		return err
	}
	if err := os.Rename(p.File.Name(), filepath.Join(p.dir, p.name)); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	p.done = true
	return nil
}

// CommitNoReplace is Commit under a name that must not replace a file: it
// renames the temporary to the first of name(1), name(2), … that does not
// exist, and returns that name and the file's FileInfo from fstats made
// just before and just after the rename (the ctime the rename set lies
// between theirs, and is the after one's unless someone changed the file
// since: the spool's tickets need it). name gives up by returning an error, which CommitNoReplace returns
// as it is; each name must be a plain visible file name in dir (the name
// given to New only names the temporary). Like Commit it gives the file
// mode Perm and fsyncs it before the rename, and fsyncs dir after; the
// descriptor stays open until after the fstat. On a file system without
// RENAME_NOREPLACE it fails (EINVAL) and replaces nothing.
//
// Not link(2) and unlink: between the two the file would have two names,
// and the spool's init refuses a file with two (a hard link may be anyone's
// file). Not os.Rename: it replaces an existing name. Once the rename is
// made, final is set and Cleanup does nothing, even if err then reports a
// failed fstat, close or directory fsync: in a sticky, world-writable
// directory someone else may have made a file under the temporary's name
// since, and Cleanup must not remove it.
func (p *Pending) CommitNoReplace(name func(try int) (string, error)) (final string, before, after os.FileInfo, err error) {
	if p.done {
		return "", nil, nil, fmt.Errorf("atomicfile: %s: already committed", p.name)
	}
	if err := prepare(p.File, true); err != nil {
		return "", nil, nil, fmt.Errorf("atomicfile: %w", err)
	}
	if before, err = p.Stat(); err != nil {
		return "", nil, nil, fmt.Errorf("atomicfile: %w", err)
	}
	for try := 1; ; try++ {
		candidate, err := name(try)
		if err != nil {
			return "", nil, nil, err
		}
		if err := checkName(candidate); err != nil {
			return "", nil, nil, err
		}
		target := filepath.Join(p.dir, candidate)
		err = unix.Renameat2(unix.AT_FDCWD, p.File.Name(), unix.AT_FDCWD, target, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EEXIST) {
			continue
		} else if err != nil {
			return "", nil, nil, fmt.Errorf("atomicfile: rename %s to %s: %w", p.File.Name(), target, err)
		}
		p.done = true
		final = candidate
		break
	}
	after, err = p.Stat()
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return final, before, after, fmt.Errorf("atomicfile: %w", err)
	}
	return final, before, after, SyncDir(p.dir)
}

// seal gives a written temporary its final mode, makes its data durable
// (unless sync is false: CommitNoSync) and closes it: what must happen
// before it is renamed into place.
func seal(f *os.File, sync bool) error {
	err := prepare(f, sync)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	return nil
}

// prepare is seal without the close: CommitNoReplace closes the file only
// after the rename, to fstat it then.
func prepare(f *os.File, sync bool) error {
	err := f.Chmod(Perm)
	if err == nil && sync {
		err = syncFile(f)
	}
	return err
}

// checkName refuses a target name that is not a plain, visible file name:
// the temporaries are dot-files, and a path would escape dir.
func checkName(name string) error {
	if name == "" || name != filepath.Base(name) || name[0] == '.' {
		return fmt.Errorf("atomicfile: bad file name %q", name)
	}
	return nil
}

// Reuse is New for a temporary that already exists at path (on dir's file
// system): a file someone placed for this write, so that none is created.
// It is emptied; a symlink is refused.
func Reuse(path, dir, name string) (*Pending, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("atomicfile: %w", err)
	}
	return &Pending{File: f, dir: dir, name: name}, nil
}

// Cleanup removes the temporary file unless a commit renamed it into place.
// It is meant to be deferred.
func (p *Pending) Cleanup() error {
	if p.done {
		return nil
	}
	p.done = true
	_ = p.Close() // may already be closed by a failed Commit
	if err := os.Remove(p.File.Name()); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("atomicfile: %w", err)
	}
	return nil
}

// Write writes data to dir/name so that a reader sees either the old file
// or all of the new one, never a part, and a crash leaves one of the two.
// The temporary is in staging (see New).
func Write(staging, dir, name string, data []byte) error {
	return write(staging, dir, name, data, (*Pending).Commit)
}

// WriteNoDirSync is Write with CommitNoDirSync.
func WriteNoDirSync(staging, dir, name string, data []byte) error {
	return write(staging, dir, name, data, (*Pending).CommitNoDirSync)
}

// WriteNoSync is Write with CommitNoSync: atomic for readers, not durable.
func WriteNoSync(staging, dir, name string, data []byte) error {
	return write(staging, dir, name, data, (*Pending).CommitNoSync)
}

func write(staging, dir, name string, data []byte, commit func(*Pending) error) error {
	p, err := New(staging, dir, name)
	if err != nil {
		return err
	}
	defer p.Cleanup()
	if _, err := p.Write(data); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	return commit(p)
}

// SyncDir fsyncs a directory so that entries created, renamed or removed in
// it survive a crash.
func SyncDir(dir string) error {
	g, ok := dirSyncs.Load(dir)
	if !ok { // first use of dir: no groupSync built on every call
		g, _ = dirSyncs.LoadOrStore(dir, newGroupSync())
	}
	return g.(*groupSync).sync(dir)
}

// dirSyncs holds a groupSync per directory path.
var dirSyncs sync.Map

// groupSync is a group commit for one directory's fsyncs: a caller needs an
// fsync that starts after its call; while one runs, later callers wait and
// then share the next one. Eight goroutines moving jobs into one directory
// then cost one or two fsyncs, not eight, and each still returns only after
// an fsync that began after its change.
type groupSync struct {
	mu       sync.Mutex
	cond     *sync.Cond
	started  uint64 // fsyncs begun; one runs while started > finished
	finished uint64 // the last one finished
	err      error  // of the last one finished
}

func newGroupSync() *groupSync {
	g := &groupSync{}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *groupSync) sync(dir string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	want := g.started + 1 // a running fsync began before this call: the next one
	for g.finished < want {
		if g.started > g.finished { // one is running
			g.cond.Wait()
			continue
		}
		g.started++
		n := g.started
		g.mu.Unlock()
		err := syncDirOnce(dir)
		g.mu.Lock()
		g.finished, g.err = n, err
		g.cond.Broadcast()
	}
	return g.err
}

// syncFile is (*os.File).Sync; tests count it.
var syncFile = (*os.File).Sync

// syncDirOnce is fsyncDir; tests count and slow it down.
var syncDirOnce = fsyncDir

func fsyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("atomicfile: sync %s: %w", dir, err)
	}
	return nil
}
