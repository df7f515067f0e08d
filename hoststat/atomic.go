package hoststat

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeFileAtomic replaces path with data: written to a temporary file in
// the same directory, fsynced (else a crash can leave an empty file behind
// the rename), renamed, and the directory fsynced (else the rename itself
// may not survive a crash).
func writeFileAtomic(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	defer d.Close()
	if err = d.Sync(); err != nil {
		return fmt.Errorf("hoststat: syncing %s: %w", dir, err)
	}
	return nil
}
