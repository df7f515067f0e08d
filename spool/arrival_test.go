package spool

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// Ready claims at once what was renamed into submitted/ and what is no
// regular file; a file written in place, or there before Arrivals began,
// once it is QuietTime old and no process has it open for writing; a file
// whose mtime is in the future QuietTime after it was first seen so.
func TestArrivals_Ready(t *testing.T) {
	s := newSpool(t).As(Init)
	dir := s.Dir(Submitted)
	write := func(name string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(validJob), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := time.Now().Add(-time.Hour)
	before := write("before-old.yaml") // there before init watched, long unchanged
	if err := os.Chtimes(before, old, old); err != nil {
		t.Fatal(err)
	}
	write("before-new.yaml") // there before init watched, just written

	a, err := s.Arrivals()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	stage := filepath.Join(s.Root(), "stage")
	if err := os.Mkdir(stage, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stage, "renamed.yaml"), []byte(validJob), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(stage, "renamed.yaml"), filepath.Join(dir, "renamed.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit("submitted.yaml", []byte(validJob)); err != nil {
		t.Fatal(err)
	}
	write("inplace.yaml")
	open := write("open.yaml")
	f, err := os.OpenFile(open, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Chtimes(open, old, old); err != nil { // old, but still being written
		t.Fatal(err)
	}
	future := write("future.yaml")
	if err := os.Chtimes(future, time.Now().Add(24*time.Hour), time.Now().Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(before, filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}

	ready := func(now time.Time) ([]string, time.Time) {
		t.Helper()
		es, err := s.List(Submitted)
		if err != nil {
			t.Fatal(err)
		}
		names, next := a.Ready(es, now)
		slices.Sort(names)
		return names, next
	}
	now := time.Now()
	names, next := ready(now)
	want := []string{"before-old.yaml", "fifo.yaml", "link.yaml", "renamed.yaml", "submitted.yaml"}
	if !slices.Equal(names, want) {
		t.Errorf("ready at once: %v; want %v", names, want)
	}
	if next.IsZero() || next.After(now.Add(QuietTime)) {
		t.Errorf("look again at %v; want within %v", next, QuietTime)
	}
	names, _ = ready(now.Add(QuietTime + time.Millisecond))
	want = append(want, "before-new.yaml", "future.yaml", "inplace.yaml")
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("ready after the quiet time: %v; want %v (open.yaml still open)", names, want)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	names, next = ready(now.Add(QuietTime + 2*time.Millisecond))
	if !slices.Contains(names, "open.yaml") || !next.IsZero() {
		t.Errorf("once closed: %v, next %v; want open.yaml and nothing waiting", names, next)
	}
}
