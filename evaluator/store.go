package evaluator

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketName holds every evaluation: level-2 key → float64 seconds, as the 8
// big-endian bytes of its IEEE 754 bits.
var bucketName = []byte("evaluations")

// defaultLockWait bounds how long Open waits for another process's lock on
// the bbolt file when ctx has no deadline: two schedulers on one spool are a
// mistake to report, not to wait out.
const defaultLockWait = 5 * time.Second

// store is level 2: one bbolt file. Reads go straight to bbolt (after the
// writes not yet committed); writes are queued and committed by one
// background goroutine, many per transaction, so a caller never waits for an
// fsync. Entries queued but not yet committed when the process dies are lost;
// they are only a cache.
type store struct {
	db    *bolt.DB
	every time.Duration // least time between two commits

	mu         sync.Mutex
	pending    map[string]float64 // queued, not yet in a transaction
	committing map[string]float64 // in the transaction being committed
	closed     bool
	lastErr    error

	kick chan struct{} // capacity 1: "there is work"
	stop chan struct{}
	done chan struct{}

	writes atomic.Uint64 // entries committed
	errs   atomic.Uint64 // failed commits and unreadable values
}

func openStore(ctx context.Context, path string, every time.Duration) (*store, error) {
	wait := defaultLockWait
	if d, ok := ctx.Deadline(); ok {
		wait = max(time.Until(d), time.Millisecond)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: wait})
	if err != nil {
		return nil, fmt.Errorf("evaluator: open %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketName)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("evaluator: %s: %w", path, err)
	}
	s := &store{
		db: db, every: every,
		pending: make(map[string]float64),
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go s.run()
	return s, nil
}

// get returns the stored evaluation for key, if any.
func (s *store) get(key string) (float64, bool, error) {
	s.mu.Lock()
	v, ok := s.pending[key]
	if !ok {
		v, ok = s.committing[key]
	}
	s.mu.Unlock()
	if ok {
		return v, true, nil
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketName).Get([]byte(key))
		switch {
		case raw == nil:
			return nil
		case len(raw) != 8:
			return fmt.Errorf("corrupt value for %q (%d bytes)", key, len(raw))
		}
		v, ok = math.Float64frombits(binary.BigEndian.Uint64(raw)), true
		return nil
	})
	if err != nil {
		s.errs.Add(1)
		return 0, false, fmt.Errorf("evaluator: level 2: %w", err)
	}
	return v, ok, nil
}

// put queues an evaluation for the background writer. It never blocks on
// I/O. After close it does nothing.
func (s *store) put(key string, v float64) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.pending[key] = v
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default: // a kick is already waiting
	}
}

// run is the background writer: it commits whatever is pending, then rests
// at least s.every, so a burst of misses costs one transaction and one fsync
// rather than one each.
func (s *store) run() {
	defer close(s.done)
	var rest *time.Timer
	for {
		select {
		case <-s.kick:
		case <-s.stop:
			s.flush()
			return
		}
		s.flush()
		if s.every <= 0 {
			continue
		}
		if rest == nil {
			rest = time.NewTimer(s.every)
		} else {
			rest.Reset(s.every)
		}
		select {
		case <-rest.C:
		case <-s.stop:
			s.flush()
			return
		}
	}
}

// flush commits the pending entries in one transaction, in key order (bbolt
// appends sorted keys cheaply).
func (s *store) flush() {
	s.mu.Lock()
	if len(s.pending) == 0 {
		s.mu.Unlock()
		return
	}
	batch := s.pending
	s.committing, s.pending = batch, make(map[string]float64)
	s.mu.Unlock()

	keys := make([]string, 0, len(batch))
	for k := range batch {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketName)
		for _, k := range keys {
			var raw [8]byte
			binary.BigEndian.PutUint64(raw[:], math.Float64bits(batch[k]))
			if err := b.Put([]byte(k), raw[:]); err != nil {
				return err
			}
		}
		return nil
	})

	s.mu.Lock()
	s.committing = nil
	if err != nil {
		s.lastErr = fmt.Errorf("evaluator: level 2 write: %w", err)
	}
	s.mu.Unlock()
	if err != nil {
		s.errs.Add(1)
		return
	}
	s.writes.Add(uint64(len(keys)))
}

// pendingLen is the number of entries not yet committed.
func (s *store) pendingLen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) + len(s.committing)
}

// close stops the writer after a last flush and closes the file. It returns
// the last write error, if any. Call it once.
func (s *store) close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	<-s.done
	s.mu.Lock()
	werr := s.lastErr
	s.mu.Unlock()
	return errors.Join(werr, s.db.Close())
}
