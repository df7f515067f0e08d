// Package diskfull gives tests a real full file system: a small tmpfs
// mounted under the test's temporary directory (which needs root, or
// CAP_SYS_ADMIN), and a filler file that takes every free block of it until
// the test frees it. Where mounting is not allowed the test is skipped:
// tests that inject a write failure cover the same code without privileges.
package diskfull

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a new directory under t.TempDir and
// returns it; it is unmounted when the test ends. Without the privilege to
// mount, the test is skipped.
func Mount(t testing.TB, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+strconv.Itoa(size)+",mode=0755"); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v); the injected-failure tests cover this path", err)
	}
	// Registered after TempDir's own cleanup, so it runs before it: the
	// directory is unmounted before it is removed.
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes a file in dir until the file system has no free block left,
// and returns a function that removes it (space comes back at once). The
// file system is full from Fill's return until then; if the test ends
// first, it is removed then.
func Fill(t testing.TB, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "diskfull.filler")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for len(chunk) > 0 {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				f.Close()
				t.Fatal(err)
			}
			chunk = chunk[:len(chunk)/2] // the last blocks, down to one byte
		}
	}
	if err := f.Close(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
	freed := false
	free = func() {
		if !freed {
			freed = true
			if err := os.Remove(path); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(free)
	return free
}
