package hoststat

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"msched/atomicfile"
)

// DefaultKeep is how many samples per host a Store keeps: a day at the
// stats daemon's 5-minute interval, enough for the web page's load graphs.
const DefaultKeep = 288

// StoreFile is the name of the store's file inside its directory.
const StoreFile = "hoststats.jsonl"

// A Store keeps the last samples of every host in an append-only file of
// JSON lines, one {"host": …, <Stats fields>} per sample.
//
// JSON lines rather than bbolt: bbolt holds an exclusive lock for as long
// as a writer has the database open, so the web page run as a CGI program
// could never read it while the stats daemon runs. A file that is only
// appended to and replaced by rename can be read at any time (ReadLatest).
//
// There is one writer, the stats daemon (OpenStore enforces it with a lock).
// Appends are not fsynced: a crash may lose the last samples or leave a torn
// last line, which loading skips; samples come again in five minutes. The
// file is bounded: when it holds twice the samples kept, it is rewritten
// with only those (atomically, by rename).
type Store struct {
	mu    sync.Mutex
	path  string
	keep  int
	f     *os.File // O_APPEND
	lock  *os.File
	hist  map[string][]Stats
	lines int // lines in the file, kept or not
}

// storeLine is one line of the store's file.
type storeLine struct {
	Host string `json:"host"`
	Stats
}

// storeLockWait is how long OpenStore waits for the store's lock.
var storeLockWait = 2 * time.Second

// OpenStore opens (creating if needed) the store in dir, keeping keep
// samples per host (DefaultKeep if keep ≤ 0). It fails if another process
// has the store open for writing.
func OpenStore(dir string, keep int) (*Store, error) {
	if keep <= 0 {
		keep = DefaultKeep
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("hoststat: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, StoreFile+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("hoststat: %w", err)
	}
	// Waiting a moment, as daemons do for their locks: a store just closed
	// in a process that forks jobs can look held until the children exec.
	if err := atomicfile.TryLock(lock, storeLockWait); err != nil {
		lock.Close()
		return nil, fmt.Errorf("hoststat: store %s is open in another process: %w", dir, err)
	}
	s := &Store{path: filepath.Join(dir, StoreFile), keep: keep, lock: lock}
	var whole int64
	if s.hist, s.lines, whole, err = load(s.path, keep); err != nil && !errors.Is(err, os.ErrNotExist) {
		lock.Close()
		return nil, err
	}
	if s.f, err = os.OpenFile(s.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
		lock.Close()
		return nil, fmt.Errorf("hoststat: %w", err)
	}
	// Cut a torn last line, or the next sample would be glued to it.
	if fi, err := s.f.Stat(); err == nil && fi.Size() > whole {
		if err := s.f.Truncate(whole); err != nil {
			s.Close()
			return nil, fmt.Errorf("hoststat: %w", err)
		}
	}
	return s, nil
}

// load reads a store file, keeping the last keep samples per host. Lines
// that do not parse are skipped; an unterminated last line (a crash in the
// middle of an append) is not counted in whole, the length of the file up to
// its last complete line.
func load(path string, keep int) (hist map[string][]Stats, lines int, whole int64, err error) {
	hist = map[string][]Stats{}
	f, err := os.Open(path)
	if err != nil {
		return hist, 0, 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64*1024)
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return hist, lines, whole, nil
		}
		if err != nil {
			return nil, 0, 0, fmt.Errorf("hoststat: %s: %w", path, err)
		}
		whole += int64(len(line))
		lines++
		var l storeLine
		if json.Unmarshal(line, &l) != nil || l.Host == "" {
			continue
		}
		hist[l.Host] = appendKept(hist[l.Host], l.Stats, keep)
	}
}

// appendKept appends st to h and keeps only the last keep samples.
func appendKept(h []Stats, st Stats, keep int) []Stats {
	h = append(h, st)
	if len(h) > keep {
		h = h[len(h)-keep:]
	}
	return h
}

// Record appends a sample for host.
func (s *Store) Record(host string, st Stats) error {
	if host == "" {
		return errors.New("hoststat: record: empty host name")
	}
	data, err := json.Marshal(storeLine{Host: host, Stats: st})
	if err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return errors.New("hoststat: store is closed")
	}
	// One write per line: with O_APPEND a reader never sees two lines
	// interleaved.
	if _, err := s.f.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	s.lines++
	s.hist[host] = appendKept(s.hist[host], st, s.keep)
	if s.lines > 2*s.keep*len(s.hist) {
		return s.compact()
	}
	return nil
}

// compact rewrites the file with only the samples kept.
func (s *Store) compact() error {
	var buf bytes.Buffer
	n := 0
	for _, host := range sortedKeys(s.hist) {
		for _, st := range s.hist[host] {
			data, err := json.Marshal(storeLine{Host: host, Stats: st})
			if err != nil {
				return fmt.Errorf("hoststat: %w", err)
			}
			buf.Write(data)
			buf.WriteByte('\n')
			n++
		}
	}
	if err := atomicfile.Write("", filepath.Dir(s.path), filepath.Base(s.path), buf.Bytes()); err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	s.f.Close()
	s.f, s.lines = f, n
	return nil
}

// Latest returns the most recent sample of host.
func (s *Store) Latest(host string) (Stats, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hist[host]
	if len(h) == 0 {
		return Stats{}, false
	}
	return h[len(h)-1], true
}

// LatestAll returns the most recent sample of every host.
func (s *Store) LatestAll() map[string]Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return latest(s.hist)
}

// History returns the kept samples of host, oldest first.
func (s *Store) History(host string) []Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Stats(nil), s.hist[host]...)
}

// Close closes the store and releases the writer's lock.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	s.lock.Close()
	return err
}

// ReadLatest returns the most recent sample of every host in the store in
// dir, without opening it for writing: for readers in other processes (the
// web page as a CGI program, msched hosts). A missing store is empty.
func ReadLatest(dir string) (map[string]Stats, error) {
	hist, _, _, err := load(filepath.Join(dir, StoreFile), 1)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return latest(hist), nil
}

func latest(hist map[string][]Stats) map[string]Stats {
	m := make(map[string]Stats, len(hist))
	for host, h := range hist {
		if len(h) > 0 {
			m[host] = h[len(h)-1]
		}
	}
	return m
}

func sortedKeys(m map[string][]Stats) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
