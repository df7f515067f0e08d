package atomicfile

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// recycleAtOnce lets a test see recycling without waiting recycleAfter.
func recycleAtOnce(t *testing.T) {
	old := recycleAfter
	recycleAfter = 0
	t.Cleanup(func() { recycleAfter = old })
}

// adoptNew writes a file of mode 0600 at path (a submission, say), has p
// adopt it and returns its inode.
func adoptNew(t *testing.T, p *Pool, path string) uint64 {
	t.Helper()
	if err := os.WriteFile(path, []byte("a submission, mode 0600\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	i := ino(t, path)
	if err := p.Adopt(path); err != nil {
		t.Fatal(err)
	}
	return i
}

func ino(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// Replacing an existing file swaps it with a pool file: after the first
// write, the target and the pool trade the same two inodes back and forth,
// and nothing is left in the pool's directory but its files.
func TestPool_RecyclesInodes(t *testing.T) {
	recycleAtOnce(t)
	dir, stage := t.TempDir(), t.TempDir()
	p := PoolFor(stage)
	if PoolFor(stage) != p {
		t.Fatal("two pools for one directory")
	}
	if err := p.Write(dir, "f", []byte("v0"), true); err != nil { // new: renamed in
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for i := 1; i <= 6; i++ {
		data := []byte(strings.Repeat("v", i) + "\n")
		if err := p.Write(dir, "f", data, i%2 == 0); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "f")); !bytes.Equal(got, data) {
			t.Fatalf("write %d: read %q", i, got)
		}
		if fi, _ := os.Stat(filepath.Join(dir, "f")); fi.Mode().Perm() != Perm {
			t.Errorf("mode %v", fi.Mode())
		}
		seen[ino(t, filepath.Join(dir, "f"))] = true
	}
	if len(seen) != 2 {
		t.Errorf("target had %d inodes over 6 replacements, want 2 (swapped with one pool file)", len(seen))
	}
	es, _ := os.ReadDir(stage)
	if len(es) != 1 || !strings.HasPrefix(es[0].Name(), PoolPrefix) {
		t.Errorf("pool directory holds %v", es)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("target directory holds %v", es)
	}
	for _, bad := range []string{"", ".hidden", "a/b"} {
		if err := p.Write(dir, bad, nil, true); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
}

// Adopt takes a file's inode into the pool instead of deleting it; a full
// pool deletes; a new Pool for the directory adopts what an earlier process
// left there.
func TestPool_AdoptAndRestart(t *testing.T) {
	recycleAtOnce(t)
	dir, stage := t.TempDir(), t.TempDir()
	p := PoolFor(stage)
	claim := filepath.Join(dir, "claim")
	i := adoptNew(t, p, claim)
	if _, err := os.Lstat(claim); !os.IsNotExist(err) {
		t.Errorf("adopted file still there: %v", err)
	}
	if err := p.Write(dir, "new", []byte("x"), true); err != nil {
		t.Fatal(err)
	}
	if got := ino(t, filepath.Join(dir, "new")); got != i {
		t.Errorf("write used inode %d, want the adopted %d", got, i)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "new")); fi.Mode().Perm() != Perm {
		t.Errorf("recycled file kept mode %v", fi.Mode())
	}

	for k := 0; k < poolCap+5; k++ {
		f := filepath.Join(dir, "g")
		os.WriteFile(f, nil, 0o644)
		if err := p.Adopt(f); err != nil {
			t.Fatal(err)
		}
	}
	if es, _ := os.ReadDir(stage); len(es) != poolCap {
		t.Errorf("pool holds %d files, want the cap %d", len(es), poolCap)
	}

	poolsMu.Lock()
	delete(pools, stage) // as a new process would start
	poolsMu.Unlock()
	q := PoolFor(stage)
	if len(q.free) != poolCap {
		t.Errorf("restarted pool adopted %d files, want %d", len(q.free), poolCap)
	}
	if err := q.Write(dir, "h", []byte("y"), true); err != nil {
		t.Fatal(err)
	}
	if es, _ := os.ReadDir(stage); len(es) != poolCap-1 {
		t.Errorf("after a write of a new file the pool holds %d, want %d", len(es), poolCap-1)
	}
}

// Without RENAME_EXCHANGE (another file system) Write renames, as Write does.
func TestPool_WithoutExchange(t *testing.T) {
	recycleAtOnce(t)
	dir, stage := t.TempDir(), t.TempDir()
	p := PoolFor(stage)
	p.noExchange.Store(true)
	for _, v := range []string{"a", "bb", "ccc"} {
		if err := p.Write(dir, "f", []byte(v), true); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "f")); string(got) != v {
			t.Errorf("read %q, want %q", got, v)
		}
	}
	if es, _ := os.ReadDir(stage); len(es) != 0 {
		t.Errorf("pool directory holds %v after renames", es)
	}
}

// Place puts an empty recycled file where another process will create one,
// and leaves an existing file alone.
func TestPool_Place(t *testing.T) {
	recycleAtOnce(t)
	dir, stage := t.TempDir(), t.TempDir()
	p := PoolFor(stage)
	i := adoptNew(t, p, filepath.Join(dir, "old"))
	out := filepath.Join(dir, "stdout")
	if err := p.Place(out); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(out)
	if err != nil || fi.Size() != 0 || fi.Mode().Perm() != Perm || ino(t, out) != i {
		t.Fatalf("placed %v (%v), want an empty %v file with the recycled inode", fi, err, Perm)
	}
	os.WriteFile(out, []byte("job output"), 0o644)
	if err := p.Place(out); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "job output" {
		t.Errorf("Place over an existing file changed it: %q", b)
	}
}

// Only a plain file of ours with one name is recycled: a symlink or a hard
// link handed to Adopt (a claim is whatever a submitter dropped) is removed,
// and the file it points to is never written.
func TestPool_AdoptsOnlyPlainFilesOfOurs(t *testing.T) {
	recycleAtOnce(t)
	dir, stage, keep := t.TempDir(), t.TempDir(), t.TempDir()
	p := PoolFor(stage)
	precious := filepath.Join(keep, "precious")
	os.WriteFile(precious, []byte("keep me\n"), 0o644)
	link := filepath.Join(dir, "symlink")
	if err := os.Symlink(precious, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hardlink")
	if err := os.Link(precious, hard); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{link, hard} {
		if err := p.Adopt(f); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(f); !os.IsNotExist(err) {
			t.Errorf("%s still there", f)
		}
	}
	if es, _ := os.ReadDir(stage); len(es) != 0 {
		t.Errorf("pool took %v", es)
	}
	// And a pool file replaced behind the pool's back is not written through.
	os.WriteFile(filepath.Join(dir, "ok"), nil, 0o644)
	if err := p.Adopt(filepath.Join(dir, "ok")); err != nil {
		t.Fatal(err)
	}
	es, _ := os.ReadDir(stage)
	if len(es) != 1 {
		t.Fatalf("pool holds %v, want one file", es)
	}
	pooled := filepath.Join(stage, es[0].Name())
	os.Remove(pooled)
	os.Symlink(precious, pooled)
	for i := 0; i < 3; i++ {
		if err := p.Write(dir, "f", []byte("job\n"), true); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(precious); string(b) != "keep me\n" {
		t.Errorf("a write went through a symlink in the pool: %q", b)
	}
	if fi, _ := os.Lstat(precious); fi.Sys().(*syscall.Stat_t).Nlink != 1 {
		t.Errorf("the hard link was not removed")
	}
}

// A reader racing with a Pool's writes sees one whole version or another,
// never a mix: a target's old inode, which a reader may still be reading,
// is not overwritten for the next write until recycleAfter has passed.
func TestPool_ReaderNeverSeesPartialFile(t *testing.T) {
	dir, stage := t.TempDir(), t.TempDir()
	p := PoolFor(stage)
	a := bytes.Repeat([]byte("a"), 64<<10)
	b := bytes.Repeat([]byte("b"), 80<<10)
	if err := p.Write(dir, "f", a, false); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			data := a
			if i%2 == 1 {
				data = b
			}
			if err := p.Write(dir, "f", data, false); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { close(done); wg.Wait() }()
	for i := 0; i < 8000; i++ {
		got, err := os.ReadFile(filepath.Join(dir, "f"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
			t.Fatalf("read %d: %d bytes that are neither version (first %q, last %q)", i, len(got), got[:1], got[len(got)-1:])
		}
	}
}

// A target's old inode rests in the pool: the next writes do not overwrite
// it before recycleAfter, so a reader that opened the old target reads it
// whole.
func TestPool_OldTargetRests(t *testing.T) {
	dir, stage := t.TempDir(), t.TempDir()
	p := PoolFor(stage)
	path := filepath.Join(dir, "f")
	if err := p.Write(dir, "f", []byte("one"), false); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(path) // a reader, before the swap
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	old := ino(t, path)
	for _, v := range []string{"two", "three", "four"} {
		if err := p.Write(dir, "f", []byte(v), false); err != nil {
			t.Fatal(err)
		}
		if ino(t, path) == old {
			t.Fatalf("writing %q reused the old target's inode within recycleAfter", v)
		}
	}
	if b, err := io.ReadAll(r); err != nil || string(b) != "one" {
		t.Errorf("the reader of the old target read %q (%v), want \"one\"", b, err)
	}
}
