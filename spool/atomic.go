package spool

import "msched/atomicfile"

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

func writeAtomic(staging, dir, name string, data []byte) error {
	return atomicfile.Write(staging, dir, name, data)
}

func syncDir(dir string) error { return atomicfile.SyncDir(dir) }
