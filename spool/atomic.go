package spool

import (
	"fmt"
	"os"
	"path/filepath"
)

// FilePerm is the mode of every file the spool writes: the web page and the
// status command read job files, reports and db files as other users.
const FilePerm = 0o644

// PendingFile is a file being written that will atomically replace (or
// create) dir/name when committed. Use it like renameio:
//
//	p, err := spool.NewPendingFile(staging, dir, name)
//	if err != nil { return err }
//	defer p.Cleanup()
//	... write to p ...
//	return p.Commit()
//
// Cleanup is a no-op after a successful Commit.
type PendingFile struct {
	*os.File
	dir, name string
	done      bool
}

// NewPendingFile creates a temporary file in staging, which must be on the
// same file system as dir (rename(2) does not cross file systems). With an
// empty staging the temporary is a dot-file in dir itself; List and the
// watcher ignore dot-files.
func NewPendingFile(staging, dir, name string) (*PendingFile, error) {
	if name == "" || name != filepath.Base(name) || name[0] == '.' {
		return nil, fmt.Errorf("spool: bad file name %q", name)
	}
	pattern := name + ".*"
	if staging == "" {
		staging, pattern = dir, "."+name+".*"
	}
	f, err := os.CreateTemp(staging, pattern)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	return &PendingFile{File: f, dir: dir, name: name}, nil
}

// Commit makes the written data durable and visible under dir/name:
// fsync the file, close it, rename it into place, fsync dir.
//
// The file fsync comes before the rename because, without it, a zero-length
// or partial file is a valid outcome after a crash that keeps the rename
// (renameio makes the same point). The directory fsync after the rename makes
// the new name itself durable; renameio leaves that to the caller, the spool
// does it here because a job that was "moved" must stay moved.
func (p *PendingFile) Commit() error {
	if p.done {
		return fmt.Errorf("spool: %s: already committed", p.name)
	}
	if err := p.Chmod(FilePerm); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if err := p.Sync(); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if err := p.Close(); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if err := os.Rename(p.File.Name(), filepath.Join(p.dir, p.name)); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	p.done = true
	return syncDir(p.dir)
}

// Cleanup removes the temporary file unless Commit succeeded. It is meant
// to be deferred.
func (p *PendingFile) Cleanup() error {
	if p.done {
		return nil
	}
	p.done = true
	_ = p.Close() // may already be closed by a failed Commit
	if err := os.Remove(p.File.Name()); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("spool: %w", err)
	}
	return nil
}

// WriteAtomic writes data to dir/name so that a reader sees either the old
// file or all of the new one, never a part, and a crash leaves one of the two.
// The temporary is a dot-file in dir. Other packages use it for reports and
// db files.
func WriteAtomic(dir, name string, data []byte) error {
	return writeAtomic("", dir, name, data)
}

func writeAtomic(staging, dir, name string, data []byte) error {
	p, err := NewPendingFile(staging, dir, name)
	if err != nil {
		return err
	}
	defer p.Cleanup()
	if _, err := p.Write(data); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	return p.Commit()
}

// syncDir fsyncs a directory so that entries created, renamed or removed in
// it survive a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("spool: sync %s: %w", dir, err)
	}
	return nil
}
