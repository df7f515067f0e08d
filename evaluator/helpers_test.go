package evaluator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"

	"msched/models"
)

// probe wraps a model, counting its calls and recording the host vectors it
// is given. before, when set, runs first on every call (to fail or block).
type probe struct {
	inner     models.Model
	orderFree bool
	calls     atomic.Int64
	before    func(call int64) error

	mu   sync.Mutex
	seen [][]models.HostSpec
}

func (p *probe) Predict(ctx context.Context, s models.Scenario) (float64, error) {
	n := p.calls.Add(1)
	p.mu.Lock()
	p.seen = append(p.seen, slices.Clone(s.Hosts))
	p.mu.Unlock()
	if p.before != nil {
		if err := p.before(n); err != nil {
			return 0, err
		}
	}
	return p.inner.Predict(ctx, s)
}

func (p *probe) HostOrderIrrelevant() bool { return p.orderFree }

// failCall is a probe's before that fails the n-th call with msg.
func failCall(n int64, msg string) func(int64) error {
	return func(call int64) error {
		if call == n {
			return errors.New(msg)
		}
		return nil
	}
}

// resolver serves models by name.
type resolver map[string]models.Model

func (r resolver) Get(name string) (models.Model, error) {
	if m, ok := r[name]; ok {
		return m, nil
	}
	return nil, fmt.Errorf("models: unknown model %q", name)
}

// firstHost is an order-dependent model: 100 s on the first host's
// effective speed, whatever the others are.
type firstHost struct{ hw *models.Hardware }

func (f firstHost) Predict(_ context.Context, s models.Scenario) (float64, error) {
	sp, err := f.hw.EffectiveSpeed(s.Hosts[0])
	return 100 / sp, err
}

// library loads the models of ../models/testdata.
func library(t testing.TB) *models.Library {
	t.Helper()
	lib, err := models.LoadDir("../models/testdata/models", models.DefaultHardware())
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

// probed returns a resolver with the library's model name wrapped in a
// probe (order-free like the built-ins).
func probed(t testing.TB, name string) (resolver, *probe) {
	t.Helper()
	m, err := library(t).Get(name)
	if err != nil {
		t.Fatal(err)
	}
	p := &probe{inner: m, orderFree: true}
	return resolver{name: p}, p
}

func open(t testing.TB, r Resolver, path string, size int) *Evaluator {
	t.Helper()
	e, err := Open(context.Background(), Options{Models: r, Hardware: models.DefaultHardware(), Path: path, Size: size})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// storedKeys lists the level-2 keys of a closed evaluator's file.
func storedKeys(t *testing.T, path string) []string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var keys []string
	err = db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketName).ForEach(func(k, _ []byte) error {
			keys = append(keys, string(k))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func dbPath(t *testing.T) string { return filepath.Join(t.TempDir(), "evaluations.db") }

func hosts(specs ...any) []models.HostSpec {
	var hs []models.HostSpec
	for k := 0; k < len(specs); k += 2 {
		hs = append(hs, models.HostSpec{Arch: specs[k].(string), Load: specs[k+1].(float64)})
	}
	return hs
}
