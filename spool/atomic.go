package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"msched/atomicfile"
)

// FilePerm is the mode of every file the spool writes: the web page and the
// status command read job files, reports and db files as other users.
const FilePerm = atomicfile.Perm

// PendingFile is a file being written that will atomically replace (or
// create) a file when committed: see atomicfile.Pending.
type PendingFile = atomicfile.Pending

// NewPendingFile creates a PendingFile in staging for dir/name: see
// atomicfile.New. List and the watcher ignore the dot-file temporaries that
// an empty staging makes.
func NewPendingFile(staging, dir, name string) (*PendingFile, error) {
	return atomicfile.New(staging, dir, name)
}

// WriteAtomic writes data to dir/name so that a reader sees either the old
// file or all of the new one, never a part, and a crash leaves one of the two.
// The temporary is a dot-file in dir. Other packages use it for reports and
// db files.
func WriteAtomic(dir, name string, data []byte) error {
	return atomicfile.Write("", dir, name, data)
}

// write writes data to dir/name atomically: through the view's pool of
// recycled staging files when it has one (a daemon's view: see As), else
// through a new temporary in its staging directory. syncDir false leaves
// the directory's fsync to a later one (Move's M2).
func (s *Spool) write(dir, name string, data []byte, syncDir bool) error {
	if s.pool != nil {
		return s.pool.Write(dir, name, data, syncDir)
	}
	if syncDir {
		return atomicfile.Write(s.stage, dir, name, data)
	}
	return atomicfile.WriteNoDirSync(s.stage, dir, name, data)
}

// PrivatePerm is the mode of a file written for one user only (a job's
// report, when the daemons run as root): its owner reads it, nobody else.
const PrivatePerm = 0o600

// writeOwned writes data to dir/name atomically as a file of uid's with
// mode PrivatePerm. The temporary, in the view's staging directory, is
// created 0600 and given to uid before a byte is written, fsynced, then
// renamed into place: at no instant can another user read it, not even
// through the temporary. Not through the pool: a pool reuses only its own
// user's files. Only root may give a file to another uid. sync false
// leaves the directory's fsync to a later one (a Batch's Commit).
func (s *Spool) writeOwned(dir, name string, data []byte, uid int, sync bool) error {
	if !plainName(name) {
		return fmt.Errorf("spool: write %s: bad name %q", dir, name)
	}
	f, err := os.CreateTemp(s.stage, "."+name+".*") // mode 0600
	if err != nil {
		return fmt.Errorf("spool: write: %w", err)
	}
	tmp := f.Name()
	err = f.Chown(uid, -1)
	if err == nil {
		err = f.Chmod(PrivatePerm)
	}
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("spool: write %s for uid %d: %w", name, uid, err)
	}
	if sync {
		return syncDir(dir)
	}
	return nil
}

// discard removes a file whose content has served (a judged claim, a
// reported job file): into the view's pool for reuse when it has one, else
// deleted.
func (s *Spool) discard(path string) error {
	if s.pool != nil {
		return s.pool.Adopt(path)
	}
	return os.Remove(path)
}

// discardClaim is discard for a judged claim, which may be a directory
// (see removeClaim); a pool takes only regular files of its own.
func (s *Spool) discardClaim(path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
		return removeClaim(path)
	}
	return s.discard(path)
}

func syncDir(dir string) error { return atomicfile.SyncDir(dir) }

// Provide puts an empty file at path, a file that another process is about
// to create (the run daemon, for the shepherd of a job: its pid, host and
// result files), from the view's pool of recycled inodes; without a pool it
// does nothing and the other process creates the file. See atomicfile.Pool.
func (s *Spool) Provide(path string) error {
	if s.pool == nil {
		return nil
	}
	return s.pool.Place(path)
}

// Recycle removes a file that has served (a launch file once the outcome is
// recorded), keeping its inode in the view's pool when it has one.
func (s *Spool) Recycle(path string) error {
	err := s.discard(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
