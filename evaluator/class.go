package evaluator

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"msched/models"
)

// Class is an interned host class: an architecture and a load rounded to the
// architecture's load step. Hosts with equal classes are interchangeable to
// every model. Classes belong to the Evaluator that made them; the zero
// Class is invalid.
type Class uint32

type classInfo struct {
	arch  string
	units int64   // the rounded load is units × the arch's load step
	load  float64 // units × step: what the model is given
}

// denseUnits is how many load steps per architecture are found by indexing
// rather than by a map: loads up to 64 run-queue slots at the default step.
const denseUnits = 256

// archClasses is one architecture's classes by load units. Published values
// are never modified; interning a new class publishes a copy.
type archClasses struct {
	step   float64
	dense  []Class         // units < denseUnits; 0 = not interned yet
	sparse map[int64]Class // larger loads
}

// classTable interns classes. Lookups read an immutable snapshot without
// locking, so interning a scheduler's hosts costs a map lookup per host;
// new classes (a few per architecture in a scheduler's life) copy the
// snapshot under mu.
type classTable struct {
	hw   *models.Hardware
	snap atomic.Pointer[map[string]*archClasses]

	mu    sync.RWMutex // writers of snap and infos; readers of infos
	infos []classInfo  // by Class; infos[0] is the invalid zero Class
}

func newClassTable(hw *models.Hardware) *classTable {
	t := &classTable{hw: hw, infos: make([]classInfo, 1)}
	empty := map[string]*archClasses{}
	t.snap.Store(&empty)
	return t
}

// intern returns h's class. The load is rounded to the nearest multiple of
// the architecture's load step (halves away from zero).
func (t *classTable) intern(h models.HostSpec) (Class, error) {
	if !(h.Load >= 0) || h.Load > math.MaxInt32 {
		return 0, fmt.Errorf("evaluator: host %s: invalid load %v", h.Arch, h.Load)
	}
	if ac, ok := (*t.snap.Load())[h.Arch]; ok {
		if c := ac.find(int64(math.Round(h.Load / ac.step))); c != 0 {
			return c, nil
		}
	}
	return t.add(h)
}

func (ac *archClasses) find(units int64) Class {
	if units < int64(len(ac.dense)) {
		return ac.dense[units]
	}
	return ac.sparse[units]
}

// add interns a class not in the snapshot.
func (t *classTable) add(h models.HostSpec) (Class, error) {
	a, err := t.hw.Lookup(h.Arch)
	if err != nil {
		return 0, fmt.Errorf("evaluator: %w", err)
	}
	units := int64(math.Round(h.Load / a.LoadStep))
	t.mu.Lock()
	defer t.mu.Unlock()
	old := *t.snap.Load()
	if ac, ok := old[a.Name]; ok {
		if c := ac.find(units); c != 0 { // interned since the caller looked
			return c, nil
		}
	}
	if len(t.infos) > math.MaxUint32 {
		return 0, fmt.Errorf("evaluator: too many host classes")
	}
	c := Class(len(t.infos))
	t.infos = append(t.infos, classInfo{arch: a.Name, units: units, load: float64(units) * a.LoadStep})

	ac := &archClasses{step: a.LoadStep}
	if prev, ok := old[a.Name]; ok {
		ac.dense, ac.sparse = slices.Clone(prev.dense), maps.Clone(prev.sparse)
	}
	if units < denseUnits {
		if int(units) >= len(ac.dense) {
			ac.dense = append(ac.dense, make([]Class, int(units)+1-len(ac.dense))...)
		}
		ac.dense[units] = c
	} else {
		if ac.sparse == nil {
			ac.sparse = make(map[int64]Class)
		}
		ac.sparse[units] = c
	}
	next := maps.Clone(old)
	next[a.Name] = ac
	t.snap.Store(&next)
	return c, nil
}

// resolve appends the infos of cs to dst; an unknown Class is an error.
func (t *classTable) resolve(dst []classInfo, cs []Class) ([]classInfo, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, c := range cs {
		if c == 0 || int(c) >= len(t.infos) {
			return nil, fmt.Errorf("evaluator: invalid host class %d", c)
		}
		dst = append(dst, t.infos[c])
	}
	return dst, nil
}
