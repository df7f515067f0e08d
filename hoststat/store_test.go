package hoststat

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func sample(i int) Stats {
	return Stats{Time: time.Unix(1700000000+int64(i)*300, 0).UTC(), Uptime: float64(i), Load1: float64(i) / 10,
		Idle: NoUser, NCPU: 2}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		n++
	}
	return n
}

func TestStore_RoundTripAndRestart(t *testing.T) {
	defer func(w time.Duration) { storeLockWait = w }(storeLockWait)
	storeLockWait = 100 * time.Millisecond
	dir := t.TempDir()
	s, err := OpenStore(dir, 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Latest("a"); ok {
		t.Fatal("latest of an empty store")
	}
	for i := 1; i <= 3; i++ {
		if err := s.Record("a", sample(i)); err != nil {
			t.Fatal(err)
		}
	}
	s.Record("b", sample(10))
	if got, ok := s.Latest("a"); !ok || got != sample(3) {
		t.Errorf("latest a: %+v %v", got, ok)
	}
	if _, err := OpenStore(dir, 5); err == nil {
		t.Error("a second writer opened the store")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = OpenStore(dir, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	all := s.LatestAll()
	if len(all) != 2 || all["a"] != sample(3) || all["b"] != sample(10) {
		t.Errorf("after restart: %+v", all)
	}
	if h := s.History("a"); len(h) != 3 || h[0] != sample(1) {
		t.Errorf("history %+v", h)
	}
	if got, err := ReadLatest(dir); err != nil || got["a"] != sample(3) || len(got) != 2 {
		t.Errorf("ReadLatest: %+v %v", got, err)
	}
}

func TestStore_Bounded(t *testing.T) {
	dir := t.TempDir()
	const keep = 4
	s, err := OpenStore(dir, keep)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		for _, h := range []string{"a", "b"} {
			if err := s.Record(h, sample(i)); err != nil {
				t.Fatal(err)
			}
		}
		if n := countLines(t, filepath.Join(dir, StoreFile)); n > 2*keep*2 {
			t.Fatalf("after %d rounds the file has %d lines, bound is %d", i+1, n, 2*keep*2)
		}
	}
	h := s.History("a")
	if len(h) != keep || h[0] != sample(96) || h[keep-1] != sample(99) {
		t.Errorf("history %+v", h)
	}
	s.Close()
	s, err = OpenStore(dir, keep)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if h := s.History("b"); len(h) != keep || h[keep-1] != sample(99) {
		t.Errorf("after reopen: %+v", h)
	}
}

func TestStore_TornLineSkipped(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir, 5)
	if err != nil {
		t.Fatal(err)
	}
	s.Record("a", sample(1))
	s.Close()
	// A crash in the middle of an append.
	f, _ := os.OpenFile(filepath.Join(dir, StoreFile), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"host":"a","time":"2023-`)
	f.Close()
	s, err = OpenStore(dir, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, ok := s.Latest("a"); !ok || got != sample(1) {
		t.Errorf("got %+v %v", got, ok)
	}
	// The next record must not be glued to the torn line.
	s.Record("a", sample(2))
	if got, _ := ReadLatest(dir); got["a"] != sample(2) {
		t.Errorf("after torn line: %+v", got)
	}
}
