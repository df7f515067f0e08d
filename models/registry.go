package models

import (
	"fmt"
	"slices"
	"sync"
)

// Factory builds a model of one kind from its spec. hw is the hardware
// database the model must use for architecture speeds. A factory checks the
// spec's defaults and Data and reports problems naming the model.
type Factory func(spec Spec, hw *Hardware) (Model, error)

// registry maps a kind name to its factory. It starts with the built-in kinds
// (a plain initialiser, not an init function); Register adds more, e.g. the
// "external" kind for PACE-like model programs.
var registry = struct {
	sync.RWMutex
	kinds map[string]Factory
}{kinds: map[string]Factory{
	"warwick": newWarwick,
	"amdahl":  newAmdahl,
	"downey":  newDowney,
	"table":   newTable,
}}

// Register makes a model kind available to model files. It panics if kind is
// empty, f is nil or the kind is already registered, as database/sql does:
// these are programming errors in the caller's wiring.
func Register(kind string, f Factory) {
	if kind == "" || f == nil {
		panic("models: Register with empty kind or nil factory")
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.kinds[kind]; dup {
		panic(fmt.Sprintf("models: Register called twice for kind %q", kind))
	}
	registry.kinds[kind] = f
}

// Kinds returns the registered kinds, sorted.
func Kinds() []string {
	registry.RLock()
	defer registry.RUnlock()
	ks := make([]string, 0, len(registry.kinds))
	for k := range registry.kinds {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func lookupKind(kind string) (Factory, bool) {
	registry.RLock()
	defer registry.RUnlock()
	f, ok := registry.kinds[kind]
	return f, ok
}

// Build makes the model a spec describes with its kind's factory.
func Build(spec Spec, hw *Hardware) (Model, error) {
	f, ok := lookupKind(spec.Kind)
	if !ok {
		return nil, fmt.Errorf("models: %s: model %q: unknown kind %q (known: %v)", spec.Source, spec.Name, spec.Kind, Kinds())
	}
	return f(spec, hw)
}
