package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// PoolPrefix starts the names of a Pool's files.
const PoolPrefix = "pool."

// poolCap bounds the files a Pool keeps; beyond it, returned files are
// deleted as before. It covers a burst's writes over recycleAfter.
const poolCap = 1024

// recycleAfter is how long a file given back to a Pool rests before a write
// overwrites it. It had a name that readers could open (the target a swap
// replaced, a job file Adopt took): a reader that opened it then may still
// be reading it, and must see that old version whole, not the next write
// coming into it. Readers of spool files read them at once; a second is far
// beyond that.
var recycleAfter = time.Second

// A Pool recycles the temporaries of atomic writes. Write fills a pool file,
// fsyncs it and, when the target exists, swaps the two names in one atomic
// step (renameat2 RENAME_EXCHANGE): the target now has the new content and
// the pool file the old, to be overwritten by the next Write. A stream of
// replacements of existing files, which is most of what a spool daemon
// writes, then allocates and frees no inodes. That matters: creating a file
// on ext4 costs more the more files were deleted near it lately (without a
// journal, ext4 scans past every inode freed in the last minutes before it
// reuses one), and every freed file is a discard on a disk mounted with
// -o discard. The swap is as atomic as a rename: a reader or a crash sees the
// old target or the new; and a file given back rests for recycleAfter before
// it is written again, so a reader that opened the old target reads it whole.
// Where RENAME_EXCHANGE is not supported, Write falls back to a plain rename.
//
// A Pool owns its directory: one process (one daemon) uses it at a time.
// Its files hold nothing of value between writes.
type Pool struct {
	dir        string
	mu         sync.Mutex
	free       []pooled // oldest first
	next       int64
	noExchange atomic.Bool
}

// pooled is a free pool file and when it was given back.
type pooled struct {
	path  string
	since time.Time
}

var (
	poolsMu sync.Mutex
	pools   = map[string]*Pool{}
)

// PoolFor returns the process's Pool for dir (made on first use), adopting
// the pool files a previous process left there.
func PoolFor(dir string) *Pool {
	poolsMu.Lock()
	defer poolsMu.Unlock()
	if p := pools[dir]; p != nil {
		return p
	}
	p := &Pool{dir: dir}
	if des, err := os.ReadDir(dir); err == nil {
		for _, d := range des {
			n, ok := strings.CutPrefix(d.Name(), PoolPrefix)
			if !ok || !d.Type().IsRegular() {
				continue
			}
			if i, err := strconv.ParseInt(n, 10, 64); err == nil && i >= p.next {
				p.next = i + 1
			}
			if len(p.free) < poolCap {
				// A previous process's pool file: nobody reads it.
				p.free = append(p.free, pooled{path: filepath.Join(dir, d.Name())})
			}
		}
	}
	pools[dir] = p
	return p
}

// take returns a pool file opened for writing, its old content still in it:
// Write overwrites from the start and truncates to the new length, which for
// files of a few hundred bytes reuses the data block instead of freeing it.
// It is the oldest free file, if that has rested recycleAfter; else a new
// one.
func (p *Pool) take() (*os.File, error) {
	p.mu.Lock()
	var path string
	if len(p.free) > 0 && time.Since(p.free[0].since) >= recycleAfter {
		path = p.free[0].path
		p.free = p.free[1:]
	}
	p.mu.Unlock()
	if path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NOFOLLOW, Perm)
		if err == nil {
			if fi, serr := f.Stat(); serr == nil && recyclable(fi) {
				return f, nil
			}
			// Not what the pool put there: leave it, make a new one.
			f.Close()
		} else if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("atomicfile: %w", err)
		}
	}
	for {
		f, err := os.OpenFile(p.newName(), os.O_WRONLY|os.O_CREATE|os.O_EXCL, Perm)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("atomicfile: %w", err)
		}
		return f, nil
	}
}

func (p *Pool) newName() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	return filepath.Join(p.dir, PoolPrefix+strconv.FormatInt(p.next-1, 10))
}

// give takes back a pool file (after a swap it holds the target's old
// content); beyond poolCap the file is deleted.
func (p *Pool) give(path string) {
	p.mu.Lock()
	if len(p.free) < poolCap {
		p.free = append(p.free, pooled{path, time.Now()})
		path = ""
	}
	p.mu.Unlock()
	if path != "" {
		os.Remove(path)
	}
}

// Write replaces (or creates) dir/name with data, as atomically as Write of
// this package, through a pool file; dir is fsynced when syncDir is set (see
// Pending.CommitNoDirSync for when it may be left to a later fsync).
func (p *Pool) Write(dir, name string, data []byte, syncDir bool) error {
	if err := checkName(name); err != nil {
		return err
	}
	target := filepath.Join(dir, name)
	f, err := p.take()
	if err != nil {
		return err
	}
	path := f.Name()
	fail := func(err error) error {
		f.Close()
		p.give(path)
		return fmt.Errorf("atomicfile: %w", err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return fail(err)
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		return fail(err)
	}
	if err := seal(f, true); err != nil { // sets the mode a recycled file may lack
		p.give(path)
		return err
	}
	swapped := false
	if !p.noExchange.Load() {
		err := unix.Renameat2(unix.AT_FDCWD, path, unix.AT_FDCWD, target, unix.RENAME_EXCHANGE)
		switch {
		case err == nil:
			swapped = true
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
			p.noExchange.Store(true) // this file system cannot: rename from now on
		case errors.Is(err, unix.ENOENT):
			// No target yet (or, impossible here, no pool file): rename.
		default:
			p.give(path)
			return fmt.Errorf("atomicfile: exchange %s: %w", target, err)
		}
	}
	if swapped {
		p.give(path)
	} else if err := os.Rename(path, target); err != nil {
		p.give(path)
		return fmt.Errorf("atomicfile: %w", err)
	}
	if syncDir {
		return SyncDir(dir)
	}
	return nil
}

// Adopt takes an existing file whose content has served (a job file that is
// reported, a claim that is judged) into the pool instead of deleting it:
// its name goes away as with os.Remove, without freeing its inode. The
// caller fsyncs the file's old directory if the removal must be durable. A
// full pool deletes the file.
func (p *Pool) Adopt(path string) error {
	p.mu.Lock()
	full := len(p.free) >= poolCap
	p.mu.Unlock()
	if fi, err := os.Lstat(path); err != nil {
		return err
	} else if full || !recyclable(fi) {
		return os.Remove(path)
	}
	to := p.newName()
	if err := os.Rename(path, to); err != nil {
		return err
	}
	p.give(to)
	return nil
}

// Place puts an empty recycled file at path unless something is there, so
// that another process that later creates path (a shepherd opening its pid
// file, writing its host file or its result) opens it instead and allocates
// no inode. Nothing is fsynced: the file holds nothing yet.
func (p *Pool) Place(path string) error {
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	f, err := p.take()
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Truncate(0)
	if err == nil {
		err = f.Chmod(Perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		p.give(tmp)
		return fmt.Errorf("atomicfile: %w", err)
	}
	return nil
}

// recyclable reports whether a file may be reused as a pool file: a
// regular file (not a symlink a writer would follow), with one name (not a
// hard link to a file kept elsewhere) and owned by this process's user (a
// submitter's claim reused as a job file would let the submitter edit it).
func recyclable(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode().IsRegular() && st.Nlink == 1 && int(st.Uid) == os.Geteuid()
}
