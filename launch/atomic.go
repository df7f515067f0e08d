package launch

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeFileAtomic replaces path with data so that a reader (or a restarted
// daemon after a crash) sees either no file or the whole of it. The data is
// fsynced before the rename, because without it a zero-length file is a
// valid outcome after a crash; the directory is fsynced after it, because the
// rename itself is only durable once the directory is. The spool package has
// its own version of this; launch keeps a private one so that the shepherd
// does not depend on the spool layout.
func writeFileAtomic(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	defer d.Close()
	if err = d.Sync(); err != nil {
		return fmt.Errorf("launch: syncing %s: %w", dir, err)
	}
	return nil
}
