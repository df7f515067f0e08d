package hoststat

import (
	"fmt"
	"path/filepath"

	"msched/spool"
)

// writeFileAtomic replaces path with data through spool.WriteAtomic (a
// temporary file in the same directory, fsynced, renamed, and the directory
// fsynced), so that a reader, or a crash, never finds half a file.
func writeFileAtomic(path string, data []byte) error {
	if err := spool.WriteAtomic(filepath.Dir(path), filepath.Base(path), data); err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	return nil
}
