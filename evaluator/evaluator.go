package evaluator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"msched/models"
)

// Resolver finds models by name; *models.Library is one.
type Resolver interface {
	Get(name string) (models.Model, error)
}

// Options configure an Evaluator. Models and Hardware are required.
type Options struct {
	Models   Resolver
	Hardware *models.Hardware // architectures and load steps for host classes
	// Path is the level-2 bbolt file (spool/db/evaluations.db); "" keeps
	// evaluations in memory only (the simulator's choice).
	Path string
	// Size is the number of level-1 entries; 0 means DefaultSize.
	Size int
	// FlushEvery is the least time between two level-2 commits; 0 means
	// DefaultFlushEvery, negative means commit as soon as the last one ends.
	FlushEvery time.Duration
}

const (
	// DefaultSize holds 64 GA generations of the paper's 50 × 20 = 1000
	// evaluations, at about 100 bytes an entry.
	DefaultSize = 1 << 16
	// DefaultFlushEvery batches a GA generation's misses into one commit
	// while keeping at most a tenth of a second of evaluations unwritten.
	DefaultFlushEvery = 100 * time.Millisecond
	// handleCacheSize bounds the interned (model, params) handles. An evicted
	// handle keeps working; re-preparing it gets a fresh id.
	handleCacheSize = 4096
)

// ErrClosed is returned by calls on a closed Evaluator.
var ErrClosed = errors.New("evaluator: closed")

// Evaluator predicts run times through the two cache levels. It is safe for
// concurrent use.
type Evaluator struct {
	models  Resolver
	classes *classTable
	l1      *lru.Cache[string, float64]
	l2      *store // nil without a Path
	flight  singleflight.Group
	st      counters

	handleMu sync.Mutex
	handles  *lru.Cache[string, *Handle]
	nextID   uint64

	closed    atomic.Bool
	life      sync.RWMutex // held shared by misses in progress, exclusively by Close
	closeOnce sync.Once
	closeErr  error
}

// Open makes an Evaluator, opening (or creating) its level-2 file. ctx bounds
// the wait for the file's lock.
func Open(ctx context.Context, opts Options) (*Evaluator, error) {
	if opts.Models == nil || opts.Hardware == nil {
		return nil, errors.New("evaluator: Options.Models and Options.Hardware are required")
	}
	if opts.Size == 0 {
		opts.Size = DefaultSize
	}
	if opts.FlushEvery == 0 {
		opts.FlushEvery = DefaultFlushEvery
	}
	l1, err := lru.New[string, float64](opts.Size)
	if err != nil {
		return nil, fmt.Errorf("evaluator: level 1: %w", err)
	}
	handles, _ := lru.New[string, *Handle](handleCacheSize)
	e := &Evaluator{models: opts.Models, classes: newClassTable(opts.Hardware), l1: l1, handles: handles}
	if opts.Path != "" {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("evaluator: %w", err)
		}
		if e.l2, err = openStore(ctx, opts.Path, opts.FlushEvery); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Close waits for the misses in progress, commits every queued level-2 write
// and closes the file. It is idempotent; later calls return the first call's
// result.
func (e *Evaluator) Close() error {
	e.closeOnce.Do(func() {
		e.closed.Store(true)
		e.life.Lock() // no miss is in progress after this, and none starts
		defer e.life.Unlock()
		if e.l2 != nil {
			e.closeErr = e.l2.close()
		}
	})
	return e.closeErr
}

// Class interns one host. Unknown architectures and negative loads are
// errors.
func (e *Evaluator) Class(h models.HostSpec) (Class, error) {
	return e.classes.intern(h)
}

// Classes appends the classes of hosts to dst. A scheduler interns its hosts
// once per snapshot and passes classes to Handle.PredictClasses.
func (e *Evaluator) Classes(dst []Class, hosts []models.HostSpec) ([]Class, error) {
	for _, h := range hosts {
		c, err := e.classes.intern(h)
		if err != nil {
			return nil, err
		}
		dst = append(dst, c)
	}
	return dst, nil
}

// Predict is the one-shot form: Prepare, then Handle.Predict. Callers that
// ask about one job many times should keep the Handle.
func (e *Evaluator) Predict(ctx context.Context, model string, params map[string]float64, hosts []models.HostSpec) (float64, error) {
	h, err := e.Prepare(model, params)
	if err != nil {
		return 0, err
	}
	return h.Predict(ctx, hosts)
}
