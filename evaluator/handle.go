package evaluator

import (
	"context"
	"fmt"
	"maps"
	"math"

	"msched/models"
)

// Handle is a prepared (model, parameters) pair: the model resolved, its
// order-freedom known and both key prefixes computed, so that a prediction
// only has to add the hosts. Handles are safe for concurrent use and cheap to
// keep, e.g. one per queued job. Every model call of a handle is given the
// same Params map, which models must treat as read-only.
type Handle struct {
	e         *Evaluator
	model     models.Model
	name      string
	params    map[string]float64 // a private copy, handed to the model
	orderFree bool
	id        uint64 // level-1 key prefix; never reused in a process
	prefix    string // level-2 key prefix
}

// Prepare resolves model and fixes params (copied). Two Prepare calls with
// the same model and parameters return the same Handle while it is in the
// evaluator's handle cache, so they share level-1 entries; they always share
// level-2 entries. Handles are told apart by model name and fingerprint: a
// model without a Fingerprint (see models.Fingerprinter) must not change
// behind its name while its predictions are cached, in either level.
func (e *Evaluator) Prepare(model string, params map[string]float64) (*Handle, error) {
	if e.closed.Load() {
		return nil, ErrClosed
	}
	m, err := e.models.Get(model)
	if err != nil {
		return nil, fmt.Errorf("evaluator: %w", err)
	}
	for n, v := range params {
		if !models.ValidName(n) {
			return nil, fmt.Errorf("evaluator: model %q: invalid parameter name %q", model, n)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("evaluator: model %q: parameter %q is not finite", model, n)
		}
	}
	var fp string
	if f, ok := m.(models.Fingerprinter); ok {
		fp = f.Fingerprint()
	}
	prefix := l2Prefix(model, fp, params)

	e.handleMu.Lock()
	defer e.handleMu.Unlock()
	if h, ok := e.handles.Get(prefix); ok {
		return h, nil
	}
	of, _ := m.(models.OrderFree)
	e.nextID++
	h := &Handle{
		e: e, model: m, name: model, params: maps.Clone(params),
		orderFree: of != nil && of.HostOrderIrrelevant(),
		id:        e.nextID, prefix: prefix,
	}
	e.handles.Add(prefix, h)
	return h, nil
}

// Model is the handle's model name.
func (h *Handle) Model() string { return h.name }

// Predict interns hosts and predicts. It costs a map lookup per host more
// than PredictClasses.
func (h *Handle) Predict(ctx context.Context, hosts []models.HostSpec) (float64, error) {
	var buf [stackHosts]Class
	cs, err := h.e.Classes(buf[:0], hosts)
	if err != nil {
		return 0, err
	}
	return h.PredictClasses(ctx, cs)
}

// PredictClasses predicts the run time, in seconds, on hosts (classes from
// this Evaluator). This is the hot path: a level-1 hit allocates nothing for
// vectors of up to stackHosts hosts.
func (h *Handle) PredictClasses(ctx context.Context, hosts []Class) (float64, error) {
	if h.e.closed.Load() {
		return 0, ErrClosed
	}
	if len(hosts) > stackHosts {
		key := appendL1Key(make([]byte, 0, 8+4*len(hosts)), h.id, h.orderFree, hosts, make([]Class, len(hosts)))
		return h.lookup(ctx, key, hosts)
	}
	var kb [8 + 4*stackHosts]byte
	var sorted [stackHosts]Class
	key := appendL1Key(kb[:0], h.id, h.orderFree, hosts, sorted[:])
	return h.lookup(ctx, key, hosts)
}

func (h *Handle) lookup(ctx context.Context, key []byte, hosts []Class) (float64, error) {
	if v, ok := h.e.l1.Get(unsafeString(key)); ok {
		h.e.st.l1Hits.Add(1)
		return v, nil
	}
	if testHookL1Miss != nil {
		testHookL1Miss()
	}
	return h.e.miss(ctx, h, string(key), hosts)
}

// testHookL1Miss, when set by a test, runs after a level-1 miss and before
// the flight: it lets a test hold many callers between the two.
var testHookL1Miss func()
