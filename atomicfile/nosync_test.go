package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// countSyncs counts the file and directory fsyncs made until the test ends.
func countSyncs(t *testing.T) (files, dirs *int) {
	t.Helper()
	files, dirs = new(int), new(int)
	syncFile = func(f *os.File) error { *files++; return f.Sync() }
	syncDirOnce = func(d string) error { *dirs++; return fsyncDir(d) }
	t.Cleanup(func() { syncFile, syncDirOnce = (*os.File).Sync, fsyncDir })
	return files, dirs
}

// Each write says what it makes durable: Write the file and the directory,
// WriteNoDirSync the file, WriteNoSync nothing (a published schedule, a
// heartbeat); all three replace the file whole and with mode Perm.
func TestWrite_Durability(t *testing.T) {
	for _, c := range []struct {
		name              string
		write             func(staging, dir, name string, data []byte) error
		wantFile, wantDir int
	}{
		{"Write", Write, 1, 1},
		{"WriteNoDirSync", WriteNoDirSync, 1, 0},
		{"WriteNoSync", WriteNoSync, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			files, dirs := countSyncs(t)
			for _, data := range []string{"old, longer\n", "new\n"} {
				if err := c.write("", dir, "f", []byte(data)); err != nil {
					t.Fatal(err)
				}
			}
			if *files != 2*c.wantFile || *dirs != 2*c.wantDir {
				t.Errorf("two writes made %d file and %d directory fsyncs, want %d and %d", *files, *dirs, 2*c.wantFile, 2*c.wantDir)
			}
			b, err := os.ReadFile(filepath.Join(dir, "f"))
			if err != nil || string(b) != "new\n" {
				t.Errorf("read %q, %v", b, err)
			}
			if fi, _ := os.Stat(filepath.Join(dir, "f")); fi.Mode().Perm() != Perm {
				t.Errorf("mode %v, want %v", fi.Mode().Perm(), os.FileMode(Perm))
			}
			if es, _ := os.ReadDir(dir); len(es) != 1 {
				t.Errorf("directory holds %d entries, want only f", len(es))
			}
		})
	}
}

// CommitNoReplace is as durable as Commit: the file fsynced before the
// rename, the directory after, and the file has mode Perm.
func TestCommitNoReplace_Durability(t *testing.T) {
	dir := t.TempDir()
	files, dirs := countSyncs(t)
	p, err := New("", dir, "f")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Cleanup()
	if _, err := p.WriteString("data\n"); err != nil {
		t.Fatal(err)
	}
	final, _, _, err := p.CommitNoReplace(func(int) (string, error) { return "g", nil })
	if err != nil || final != "g" {
		t.Fatalf("CommitNoReplace: %q, %v", final, err)
	}
	if *files != 1 || *dirs != 1 {
		t.Errorf("%d file and %d directory fsyncs, want 1 and 1", *files, *dirs)
	}
	if fi, err := os.Stat(filepath.Join(dir, "g")); err != nil || fi.Mode().Perm() != Perm {
		t.Errorf("g: %v, %v; want mode %v", fi, err, os.FileMode(Perm))
	}
}

func TestTryLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	a, b := open(), open()
	defer b.Close()
	if err := TryLock(a, 0); err != nil {
		t.Fatalf("free lock: %v", err)
	}
	// Held: one try, or tries for the wait, then EWOULDBLOCK.
	for _, wait := range []time.Duration{0, 50 * time.Millisecond} {
		start := time.Now()
		err := TryLock(b, wait)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Errorf("wait %v: held lock taken, or %v", wait, err)
		}
		if took := time.Since(start); took < wait {
			t.Errorf("wait %v: gave up after %v", wait, took)
		}
	}
	// Released while waited for: taken.
	time.AfterFunc(30*time.Millisecond, func() { a.Close() })
	if err := TryLock(b, 2*time.Second); err != nil {
		t.Errorf("lock released during the wait: %v", err)
	}
}
