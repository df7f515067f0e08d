package launch

import (
	"fmt"
	"path/filepath"

	"msched/atomicfile"
)

// writeFileAtomic replaces path with data through atomicfile (a temporary
// file in the same directory, fsynced, renamed, and the directory fsynced),
// so that a reader, or a crash, never finds half a file.
func writeFileAtomic(path string, data []byte) error {
	if err := atomicfile.Write("", filepath.Dir(path), filepath.Base(path), data); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	return nil
}
