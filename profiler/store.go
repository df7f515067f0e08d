package profiler

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The file is one bbolt database with two buckets:
//
//	cells: exe NUL user NUL procBin timeBin → N, Σt, Σt², Σp (4 × float64, little-endian)
//	meta:  "version" → "1"; feed positions, acct.Pos (see FeedFromAccounting)
//
// Only the (executable, user) level is stored: the executable and system
// levels are sums of it, rebuilt when the file is opened.
var (
	bucketCells = []byte("cells")
	bucketMeta  = []byte("meta")
	keyVersion  = []byte("version")
)

const storeVersion = "1"

// Open opens (creating) the profiler file at path and loads it. Close it
// when done; a second Open of the same file waits for the first to close
// (bbolt's lock) up to a few seconds, then fails.
func Open(path string, o Options) (*Profiler, error) {
	p, err := New(o)
	if err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: 5 * time.Second, NoSync: o.NoSync})
	if err != nil {
		return nil, fmt.Errorf("profiler: %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		cells, err := tx.CreateBucketIfNotExists(bucketCells)
		if err != nil {
			return err
		}
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		switch v := meta.Get(keyVersion); {
		case v == nil:
			if err := meta.Put(keyVersion, []byte(storeVersion)); err != nil {
				return err
			}
		case string(v) != storeVersion:
			return fmt.Errorf("file version %q, want %q", v, storeVersion)
		}
		return cells.ForEach(func(k, v []byte) error {
			exe, user, c, err := decodeKey(k)
			if err != nil {
				return err
			}
			s, err := decodeStats(v)
			if err != nil {
				return fmt.Errorf("cell %q: %w", k, err)
			}
			p.addLocked(exe, user, c, s)
			return nil
		})
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("profiler: %s: %w", path, err)
	}
	p.db = db
	return p, nil
}

// Close closes the profiler's file; a memory-only profiler has nothing to
// close.
func (p *Profiler) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.db == nil {
		return nil
	}
	err := p.db.Close()
	p.db = nil
	if err != nil {
		return fmt.Errorf("profiler: %w", err)
	}
	return nil
}

// putCell adds s to a stored cell, in tx.
func putCell(tx *bolt.Tx, exe, user string, c cell, s Stats) error {
	b := tx.Bucket(bucketCells)
	k := encodeKey(exe, user, c)
	if v := b.Get(k); v != nil {
		old, err := decodeStats(v)
		if err != nil {
			return err
		}
		s.Merge(old)
	}
	return b.Put(k, encodeStats(s))
}

// meta reads one meta entry (nil when absent or memory-only).
func (p *Profiler) meta(key string) []byte {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.db == nil {
		return nil
	}
	var out []byte
	_ = p.db.View(func(tx *bolt.Tx) error {
		out = bytes.Clone(tx.Bucket(bucketMeta).Get([]byte(key)))
		return nil
	})
	return out
}

// setMeta writes one meta entry (no-op when memory-only).
func (p *Profiler) setMeta(key string, v []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.db == nil {
		return nil
	}
	return p.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put([]byte(key), v) })
}

func encodeKey(exe, user string, c cell) []byte {
	k := make([]byte, 0, len(exe)+len(user)+4)
	k = append(k, exe...)
	k = append(k, 0)
	k = append(k, user...)
	k = append(k, 0, c.proc, c.time)
	return k
}

func decodeKey(k []byte) (exe, user string, c cell, err error) {
	i := bytes.IndexByte(k, 0)
	if i < 0 || len(k) < i+4 {
		return "", "", cell{}, fmt.Errorf("bad cell key %q", k)
	}
	rest := k[i+1:]
	j := bytes.IndexByte(rest, 0)
	if j < 0 || len(rest) != j+3 {
		return "", "", cell{}, fmt.Errorf("bad cell key %q", k)
	}
	return string(k[:i]), string(rest[:j]), cell{rest[j+1], rest[j+2]}, nil
}

func encodeStats(s Stats) []byte {
	b := make([]byte, 32)
	for i, f := range [4]float64{s.N, s.SumT, s.SumT2, s.SumP} {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(f))
	}
	return b
}

func decodeStats(b []byte) (Stats, error) {
	if len(b) != 32 {
		return Stats{}, fmt.Errorf("cell of %d bytes, want 32", len(b))
	}
	f := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])) }
	return Stats{N: f(0), SumT: f(1), SumT2: f(2), SumP: f(3)}, nil
}
