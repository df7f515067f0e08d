package evaluator

import (
	"fmt"
	"math"
	"sync"

	"msched/models"
)

// Class is an interned host class: an architecture and a load rounded to the
// architecture's load step. Hosts with equal classes are interchangeable to
// every model. Classes belong to the Evaluator that made them; the zero
// Class is invalid.
type Class uint32

type classKey struct {
	arch  string
	units int64 // the rounded load is units × the arch's load step
}

type classInfo struct {
	arch  string
	units int64
	load  float64 // units × step: what the model is given
}

// classTable interns classes. Ids are dense, so a Class indexes infos.
type classTable struct {
	hw    *models.Hardware
	mu    sync.RWMutex
	ids   map[classKey]Class
	infos []classInfo // infos[0] is the invalid zero Class
}

func newClassTable(hw *models.Hardware) *classTable {
	return &classTable{hw: hw, ids: make(map[classKey]Class), infos: make([]classInfo, 1)}
}

// intern returns h's class. The load is rounded to the nearest multiple of
// the architecture's load step (halves away from zero).
func (t *classTable) intern(h models.HostSpec) (Class, error) {
	a, err := t.hw.Lookup(h.Arch)
	if err != nil {
		return 0, fmt.Errorf("evaluator: %w", err)
	}
	if !(h.Load >= 0) || math.IsInf(h.Load, 0) {
		return 0, fmt.Errorf("evaluator: host %s: invalid load %v", h.Arch, h.Load)
	}
	units := math.Round(h.Load / a.LoadStep)
	if units > math.MaxInt32 {
		return 0, fmt.Errorf("evaluator: host %s: load %v out of range", h.Arch, h.Load)
	}
	k := classKey{a.Name, int64(units)}
	t.mu.RLock()
	c, ok := t.ids[k]
	t.mu.RUnlock()
	if ok {
		return c, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.ids[k]; ok {
		return c, nil
	}
	if len(t.infos) > math.MaxUint32 {
		return 0, fmt.Errorf("evaluator: too many host classes")
	}
	c = Class(len(t.infos))
	t.infos = append(t.infos, classInfo{arch: a.Name, units: k.units, load: float64(k.units) * a.LoadStep})
	t.ids[k] = c
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
