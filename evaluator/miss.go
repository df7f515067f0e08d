package evaluator

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"msched/models"
)

// source says where a flight found its answer.
type source int

const (
	fromL1 source = iota // another flight filled level 1 meanwhile
	fromL2
	fromModel
)

type result struct {
	v   float64
	src source
}

// miss runs (or joins) the one flight for key. The flight runs detached from
// the caller's cancellation, so its answer is cached for the callers that
// remain; each caller stops waiting when its own ctx is done.
func (e *Evaluator) miss(ctx context.Context, h *Handle, key string, hosts []Class) (float64, error) {
	owned := slices.Clone(hosts) // the flight may outlive the caller's slice
	flightCtx := context.WithoutCancel(ctx)
	ch := e.flight.DoChan(key, func() (any, error) {
		return e.resolve(flightCtx, h, key, owned)
	})
	select {
	case r := <-ch:
		if r.Shared {
			e.st.shared.Add(1)
		}
		res, _ := r.Val.(result)
		switch {
		case r.Err != nil:
			e.st.misses.Add(1)
			return 0, r.Err
		case res.src == fromL1:
			e.st.l1Hits.Add(1)
		case res.src == fromL2:
			e.st.l2Hits.Add(1)
		default:
			e.st.misses.Add(1)
		}
		return res.v, nil
	case <-ctx.Done():
		e.st.misses.Add(1)
		return 0, fmt.Errorf("evaluator: %w", ctx.Err())
	}
}

// resolve is one flight: level 1 again (a flight for the key may have ended
// since the caller looked), level 2, then the model.
func (e *Evaluator) resolve(ctx context.Context, h *Handle, key string, cs []Class) (result, error) {
	e.life.RLock()
	defer e.life.RUnlock()
	if e.closed.Load() {
		return result{src: fromModel}, ErrClosed
	}
	if v, ok := e.l1.Get(key); ok {
		return result{v, fromL1}, nil
	}
	infos, err := e.classes.resolve(make([]classInfo, 0, len(cs)), cs)
	if err != nil {
		return result{src: fromModel}, err
	}
	hosts, l2key := canonicalHosts(h.prefix, infos, h.orderFree)

	if e.l2 != nil {
		// A level-2 read error is counted (Stats.L2Errors) and treated as a
		// miss: the model can still answer.
		if v, ok, err := e.l2.get(l2key); err == nil && ok {
			e.l1.Add(key, v)
			return result{v, fromL2}, nil
		}
	}

	start := time.Now()
	v, err := h.model.Predict(ctx, models.Scenario{Params: h.params, Hosts: hosts})
	e.st.modelNanos.Add(uint64(time.Since(start)))
	e.st.modelCalls.Add(1)
	if err == nil && (math.IsNaN(v) || math.IsInf(v, 0) || v < 0) {
		err = fmt.Errorf("prediction %v is not a run time", v)
	}
	if err != nil {
		e.st.modelErrors.Add(1)
		return result{src: fromModel}, fmt.Errorf("evaluator: model %q on %s: %w", h.name, l2key[len(h.prefix):], err)
	}
	e.l1.Add(key, v)
	if e.l2 != nil {
		e.l2.put(l2key, v)
	}
	return result{v, fromModel}, nil
}
