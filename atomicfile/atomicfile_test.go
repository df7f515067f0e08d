package atomicfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWrite_LeavesNoJunk(t *testing.T) {
	dir := t.TempDir()
	for i, data := range [][]byte{[]byte("first\n"), []byte("second, longer\n"), nil} {
		if err := Write("", dir, "f", data); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "f"))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("write %d: read %q, %v", i, got, err)
		}
		fi, _ := os.Stat(filepath.Join(dir, "f"))
		if fi.Mode().Perm() != Perm {
			t.Errorf("mode %v", fi.Mode())
		}
	}
	es, _ := os.ReadDir(dir)
	if len(es) != 1 {
		t.Errorf("directory holds %d entries, want only f", len(es))
	}
	for _, bad := range []string{"", ".hidden", "a/b", ".."} {
		if err := Write("", dir, bad, nil); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	if err := Write("", filepath.Join(dir, "missing"), "f", nil); err == nil {
		t.Error("write into a missing directory succeeded")
	}
}

func TestPending_CleanupIsNoopAfterCommit(t *testing.T) {
	dir := t.TempDir()
	p, err := New("", dir, "x")
	if err != nil {
		t.Fatal(err)
	}
	p.WriteString("data")
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := p.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "x")); err != nil || string(b) != "data" {
		t.Errorf("after commit+cleanup: %q %v", b, err)
	}
	// Abandoned: cleanup removes the temporary and the target stays as it was.
	p, _ = New("", dir, "x")
	p.WriteString("half")
	if err := p.Cleanup(); err != nil {
		t.Fatal(err)
	}
	es, _ := os.ReadDir(dir)
	if len(es) != 1 {
		t.Errorf("after abandoned write: %d entries", len(es))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "x")); string(b) != "data" {
		t.Errorf("abandoned write changed the file: %q", b)
	}
	if err := p.Commit(); err == nil {
		t.Error("commit after cleanup succeeded")
	}
}

// CommitNoReplace takes the first name that is free, never replaces a file,
// and gives up with its name function's error.
func TestPending_CommitNoReplace(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	names := func(try int) (string, error) {
		if try == 1 {
			return "x", nil
		}
		return fmt.Sprintf("x-%d", try), nil
	}
	for i, want := range []string{"x-2", "x-3"} {
		p, err := New("", dir, "x")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Cleanup()
		fmt.Fprintf(p, "new %d", i)
		final, _, fi, err := p.CommitNoReplace(names)
		if err != nil || final != want {
			t.Fatalf("commit %d: %q, %v; want %q", i, final, err, want)
		}
		st, err := os.Lstat(filepath.Join(dir, final))
		if err != nil || !os.SameFile(fi, st) || st.Mode().Perm() != Perm {
			t.Errorf("%s: %v, %v; want the committed file, mode %v", final, st, err, os.FileMode(Perm))
		}
		if b, _ := os.ReadFile(filepath.Join(dir, final)); string(b) != fmt.Sprintf("new %d", i) {
			t.Errorf("%s holds %q", final, b)
		}
		if _, _, _, err := p.CommitNoReplace(names); err == nil {
			t.Error("second commit succeeded")
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "x")); string(b) != "old" {
		t.Errorf("x replaced: %q", b)
	}

	// Every name taken: the name function's error, the temporary removed
	// by Cleanup and nothing replaced.
	p, err := New("", dir, "x")
	if err != nil {
		t.Fatal(err)
	}
	p.WriteString("lost")
	giveUp := errors.New("no more names")
	_, _, _, err = p.CommitNoReplace(func(try int) (string, error) {
		if try > 3 {
			return "", giveUp
		}
		return names(try)
	})
	if err != giveUp {
		t.Errorf("commit with every name taken: %v; want %v", err, giveUp)
	}
	if err := p.Cleanup(); err != nil {
		t.Fatal(err)
	}
	es, _ := os.ReadDir(dir)
	var got []string
	for _, e := range es {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		got = append(got, e.Name()+"="+string(b))
	}
	if want := "x=old x-2=new 0 x-3=new 1"; strings.Join(got, " ") != want {
		t.Errorf("directory: %q; want %q", strings.Join(got, " "), want)
	}

	// A name that is not a plain visible file name is refused.
	p, _ = New("", dir, "x")
	defer p.Cleanup()
	for _, bad := range []string{"", ".x", "a/b", ".."} {
		if _, _, _, err := p.CommitNoReplace(func(int) (string, error) { return bad, nil }); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
}

// After CommitNoReplace has renamed the file, Cleanup removes nothing: in
// a sticky, world-writable directory another user may have made a file
// under the temporary's name since (a root caller removed it).
func TestPending_CleanupAfterCommitNoReplaceKeepsOthersFile(t *testing.T) {
	dir := t.TempDir()
	p, err := New("", dir, "x")
	if err != nil {
		t.Fatal(err)
	}
	p.WriteString("data")
	if _, _, _, err := p.CommitNoReplace(func(int) (string, error) { return "x", nil }); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.Name(), []byte("someone else's"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p.Name()); err != nil || string(b) != "someone else's" {
		t.Errorf("after cleanup, the file made under the temporary's name: %q, %v", b, err)
	}
}

// A reader racing with writers sees one whole version or another, never a
// mix or a truncation.
func TestWrite_ReaderNeverSeesPartialFile(t *testing.T) {
	dir := t.TempDir()
	a := bytes.Repeat([]byte("a"), 256<<10)
	b := bytes.Repeat([]byte("b"), 300<<10)
	if err := Write("", dir, "f", a); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			data := a
			if i%2 == 1 {
				data = b
			}
			if err := Write("", dir, "f", data); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; i < 300; i++ {
		got, err := os.ReadFile(filepath.Join(dir, "f"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
			t.Fatalf("read %d bytes that are neither version", len(got))
		}
	}
	cancel()
	wg.Wait()
}

// Concurrent SyncDir calls on one directory share fsyncs, and each returns
// only after an fsync that began after it was called.
func TestSyncDir_GroupCommit(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var starts []time.Time
	syncDirOnce = func(d string) error {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		return fsyncDir(d)
	}
	defer func() { syncDirOnce = fsyncDir }()
	const callers = 8
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			called := time.Now()
			if err := SyncDir(dir); err != nil {
				errs <- err
				return
			}
			mu.Lock()
			defer mu.Unlock()
			covered := false
			for _, s := range starts {
				covered = covered || !s.Before(called)
			}
			if !covered {
				errs <- fmt.Errorf("SyncDir called at %v returned with no fsync begun since (%v)", called, starts)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(starts); n < 1 || n > 3 {
		t.Errorf("%d concurrent calls made %d fsyncs, want 1 to 3", callers, n)
	}
	if err := SyncDir(filepath.Join(dir, "missing")); err == nil {
		t.Error("SyncDir of a missing directory succeeded")
	}
}
