package profiler

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// DefaultConfidence is the level of the intervals when Options leaves it
// unset: the thesis's schedulers used the top of a 95 % interval.
const DefaultConfidence = 0.95

// Options configure a Profiler.
type Options struct {
	// Confidence is the level of the Student-t intervals, in (0, 1);
	// default DefaultConfidence.
	Confidence float64
	// NoSync skips bbolt's fsync after each observation (tests and bulk
	// loads; a crash may then lose the last observations).
	NoSync bool
}

// Profiler is Gibbons' historical profiler: sufficient statistics of past
// run times per (executable, user), per executable and for the whole
// system, binned by processor count and by run time. It is safe for
// concurrent use; with a file (Open) every observation is written through
// to it before Observe returns.
type Profiler struct {
	level float64

	mu   sync.RWMutex
	cats map[catKey]*category
	db   *bolt.DB // nil: memory only
}

// Level of a category: the fall-back order, finest first.
type Level uint8

// The levels, in fall-back order.
const (
	LevelUser       Level = iota // executable and user
	LevelExecutable              // executable, all users
	LevelSystem                  // every job
)

func (l Level) String() string {
	switch l {
	case LevelUser:
		return "user"
	case LevelExecutable:
		return "executable"
	}
	return "system"
}

type catKey struct {
	level     Level
	exe, user string
}

// cell is one processor bin × run-time bin of a category.
type cell struct{ proc, time uint8 }

// category holds its cells sorted by (proc, time), so that sums over cells
// are taken in one order and a simulation is repeatable to the last bit.
type category struct {
	cells []cellStats
}

type cellStats struct {
	cell
	Stats
}

func (c *category) add(k cell, s Stats) {
	i, found := slices.BinarySearchFunc(c.cells, k, func(a cellStats, k cell) int {
		if a.proc != k.proc {
			return int(a.proc) - int(k.proc)
		}
		return int(a.time) - int(k.time)
	})
	if !found {
		c.cells = slices.Insert(c.cells, i, cellStats{cell: k})
	}
	c.cells[i].Merge(s)
}

// New returns a profiler that keeps its statistics in memory only (the
// simulator's).
func New(o Options) (*Profiler, error) {
	if o.Confidence == 0 {
		o.Confidence = DefaultConfidence
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return nil, fmt.Errorf("profiler: confidence %v not in (0, 1)", o.Confidence)
	}
	return &Profiler{level: o.Confidence, cats: map[catKey]*category{}}, nil
}

// Confidence is the level of the profiler's intervals.
func (p *Profiler) Confidence() float64 { return p.level }

// ErrBadObservation is returned for a run that cannot be counted.
var ErrBadObservation = errors.New("profiler: bad observation")

// Observe counts one finished run of exe by user: seconds of wall time on
// procs processors. Names must not contain NUL (argv and user names cannot).
func (p *Profiler) Observe(exe, user string, procs int, seconds float64) error {
	r := run{exe, user, procs, seconds}
	if err := r.check(); err != nil {
		return err
	}
	return p.observe([]run{r}, nil)
}

// run is one finished run, as Observe counts it.
type run struct {
	exe, user string
	procs     int
	seconds   float64
}

// check is ErrBadObservation for a run that cannot be counted: its store
// key (encodeKey) must also fit bbolt's largest.
func (r run) check() error {
	if r.procs < 1 || !(r.seconds >= 0) || math.IsInf(r.seconds, 0) || strings.ContainsRune(r.exe, 0) || strings.ContainsRune(r.user, 0) ||
		len(r.exe)+len(r.user)+4 > bolt.MaxKeySize {
		return fmt.Errorf("%w: %q/%q (%d/%d bytes) on %d processors, %v s", ErrBadObservation, clip(r.exe, 200), clip(r.user, 200), len(r.exe), len(r.user), r.procs, r.seconds)
	}
	return nil
}

// observe counts runs and, with a file, writes them in one transaction with
// the meta entries in meta (the accounting feed's position, acct.Pos), so
// that a crash never counts a record twice. The runs have passed check.
func (p *Profiler) observe(runs []run, meta map[string][]byte) error {
	// The runs of one cell are summed first, in the order given (the sums
	// do not depend on a map's order): one write per cell.
	type key struct {
		exe, user string
		c         cell
	}
	var keys []key
	var sums []Stats
	at := map[key]int{}
	for _, r := range runs {
		k := key{r.exe, r.user, cell{uint8(ProcBin(r.procs)), uint8(TimeBin(r.seconds))}}
		i, ok := at[k]
		if !ok {
			i = len(keys)
			at[k] = i
			keys, sums = append(keys, k), append(sums, Stats{})
		}
		sums[i].Add(r.seconds, r.procs)
	}
	if len(keys) == 0 && len(meta) == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.db != nil {
		err := p.db.Update(func(tx *bolt.Tx) error {
			for i, k := range keys {
				if err := putCell(tx, k.exe, k.user, k.c, sums[i]); err != nil {
					return err
				}
			}
			for mk, mv := range meta {
				if err := tx.Bucket(bucketMeta).Put([]byte(mk), mv); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("profiler: %w", err)
		}
	}
	for i, k := range keys {
		p.addLocked(k.exe, k.user, k.c, sums[i])
	}
	return nil
}

// addLocked adds s to the cell of (exe, user) and of its two coarser levels.
func (p *Profiler) addLocked(exe, user string, k cell, s Stats) {
	for _, ck := range []catKey{{LevelUser, exe, user}, {LevelExecutable, exe, ""}, {LevelSystem, "", ""}} {
		c := p.cats[ck]
		if c == nil {
			c = &category{}
			p.cats[ck] = c
		}
		c.add(k, s)
	}
}

// Count is the number of runs the profiler has seen.
func (p *Profiler) Count() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	c := p.cats[catKey{level: LevelSystem}]
	if c == nil {
		return 0
	}
	n := 0.0
	for _, s := range c.cells {
		n += s.N
	}
	return int(n)
}

// Bins returns a category's statistics per processor bin (index ProcBin),
// counting only runs of at least attained seconds (see the package comment
// for the approximation). Exe and user are ignored at the levels that do
// not use them. Empty bins have N = 0.
func (p *Profiler) Bins(level Level, exe, user string, attained float64) []Stats {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.binsLocked(level, exe, user, attained)
}

func (p *Profiler) binsLocked(level Level, exe, user string, attained float64) []Stats {
	ck := catKey{level: level}
	switch level {
	case LevelUser:
		ck.exe, ck.user = exe, user
	case LevelExecutable:
		ck.exe = exe
	}
	c := p.cats[ck]
	if c == nil {
		return nil
	}
	from := uint8(0)
	if attained > 0 {
		from = uint8(TimeBin(attained))
	}
	var out []Stats
	for _, s := range c.cells {
		if s.time < from {
			continue
		}
		for int(s.proc) >= len(out) {
			out = append(out, Stats{})
		}
		out[s.proc].Merge(s.Stats)
	}
	return out
}
