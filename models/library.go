package models

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Fingerprinter is implemented by models that can name the exact version of
// themselves: the evaluator puts the fingerprint into its persistent cache
// keys, so editing a model file (or the hardware database) never serves
// predictions made by the old version.
type Fingerprinter interface {
	Fingerprint() string
}

// Library is the set of models loaded from a models directory. It is
// read-only after LoadDir and safe for concurrent use.
type Library struct {
	hw     *Hardware
	models map[string]*loaded
}

// loaded is a model as the library hands it out: the kind's model plus the
// fingerprint of its file and of the hardware database it was built with.
type loaded struct {
	Model
	spec        Spec
	fingerprint string
	orderFree   bool
}

func (l *loaded) Fingerprint() string       { return l.fingerprint }
func (l *loaded) HostOrderIrrelevant() bool { return l.orderFree }

// LoadDir loads every *.yaml and *.yml file of dir (not its subdirectories)
// as one model each, built against hw. Any bad file fails the whole load, and
// two files naming the same model are an error naming both files.
func LoadDir(dir string, hw *Hardware) (*Library, error) {
	if hw == nil {
		return nil, fmt.Errorf("models: LoadDir %s: nil hardware database", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	lib := &Library{hw: hw, models: make(map[string]*loaded)}
	for _, e := range entries { // os.ReadDir sorts by name: errors are reproducible
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		spec, data, err := ReadSpec(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if prev, dup := lib.models[spec.Name]; dup {
			return nil, fmt.Errorf("models: model %q defined twice: %s and %s", spec.Name, prev.spec.Source, spec.Source)
		}
		m, err := Build(spec, hw)
		if err != nil {
			return nil, err
		}
		of, _ := m.(OrderFree)
		sum := sha256.Sum256(append(append([]byte(hw.Fingerprint()), 0), data...))
		if f, ok := m.(Fingerprinter); ok {
			// The kind knows more than the file says (an external
			// model's program): mix that in too.
			sum = sha256.Sum256(append(sum[:], f.Fingerprint()...))
		}
		lib.models[spec.Name] = &loaded{
			Model:       m,
			spec:        spec,
			fingerprint: hex.EncodeToString(sum[:8]),
			orderFree:   of != nil && of.HostOrderIrrelevant(),
		}
	}
	return lib, nil
}

// Get returns the named model. It implements Fingerprinter, and OrderFree
// exactly when the underlying kind does.
func (lib *Library) Get(name string) (Model, error) {
	m, ok := lib.models[name]
	if !ok {
		return nil, fmt.Errorf("models: unknown model %q", name)
	}
	return m, nil
}

// Spec returns the named model's file as loaded.
func (lib *Library) Spec(name string) (Spec, error) {
	m, ok := lib.models[name]
	if !ok {
		return Spec{}, fmt.Errorf("models: unknown model %q", name)
	}
	return m.spec, nil
}

// Names returns the model names, sorted.
func (lib *Library) Names() []string {
	names := make([]string, 0, len(lib.models))
	for n := range lib.models {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Close stops what the models hold open (an external model's processes).
// The library's models fail after Close.
func (lib *Library) Close() error {
	var errs []error
	for _, n := range lib.Names() {
		if c, ok := lib.models[n].Model.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// Hardware returns the hardware database the models were built with.
func (lib *Library) Hardware() *Hardware { return lib.hw }

// String lists the models, for logs.
func (lib *Library) String() string {
	return "models.Library[" + strings.Join(lib.Names(), " ") + "]"
}
