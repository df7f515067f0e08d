package evaluator

import (
	"sync/atomic"
	"time"
)

// counters are updated with atomics on every path, so Stats may be called
// concurrently with predictions.
type counters struct {
	l1Hits, l2Hits, misses, shared atomic.Uint64
	modelCalls, modelErrors        atomic.Uint64
	modelNanos                     atomic.Uint64 // summed model latency
}

// Stats is a snapshot of an Evaluator's counters. Every Predict call counts
// once in exactly one of L1Hits, L2Hits and Misses, so their sum is the
// number of lookups. (The counters are read one by one, so a snapshot taken
// under load may be off by the lookups in flight.)
type Stats struct {
	Lookups uint64 `json:"lookups"`
	L1Hits  uint64 `json:"l1_hits"` // answered from memory
	L2Hits  uint64 `json:"l2_hits"` // answered from the bbolt file
	// Misses were answered by a model call, or failed.
	Misses uint64 `json:"misses"`
	// Shared lookups waited for another caller's flight for the same key
	// (and are also counted by where that flight found its answer).
	Shared           uint64        `json:"shared"`
	ModelCalls       uint64        `json:"model_calls"`
	ModelErrors      uint64        `json:"model_errors"`
	MeanModelLatency time.Duration `json:"mean_model_latency_ns"`
	L1Entries        int           `json:"l1_entries"`
	L2Writes         uint64        `json:"l2_writes"`  // evaluations committed to the file
	L2Pending        int           `json:"l2_pending"` // queued, not yet committed
	L2Errors         uint64        `json:"l2_errors"`  // failed commits and unreadable entries
}

// HitRate is the fraction of lookups answered by either cache level.
func (s Stats) HitRate() float64 {
	if s.Lookups == 0 {
		return 0
	}
	return float64(s.L1Hits+s.L2Hits) / float64(s.Lookups)
}

// Stats returns a snapshot of the counters.
func (e *Evaluator) Stats() Stats {
	s := Stats{
		L1Hits:      e.st.l1Hits.Load(),
		L2Hits:      e.st.l2Hits.Load(),
		Misses:      e.st.misses.Load(),
		Shared:      e.st.shared.Load(),
		ModelCalls:  e.st.modelCalls.Load(),
		ModelErrors: e.st.modelErrors.Load(),
		L1Entries:   e.l1.Len(),
	}
	s.Lookups = s.L1Hits + s.L2Hits + s.Misses
	if s.ModelCalls > 0 {
		s.MeanModelLatency = time.Duration(e.st.modelNanos.Load() / s.ModelCalls)
	}
	if e.l2 != nil {
		s.L2Writes = e.l2.writes.Load()
		s.L2Pending = e.l2.pendingLen()
		s.L2Errors = e.l2.errs.Load()
	}
	return s
}
