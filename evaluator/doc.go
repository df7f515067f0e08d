// Package evaluator answers "how long would this job take on these hosts?"
// for the schedulers, the way the Warwick MS system's evaluation library did:
// a performance model behind two caches.
//
//	Predict ─▶ level 1: in-memory LRU (golang-lru/v2), keyed by interned ids
//	        ─▶ one flight per key (singleflight)
//	        ─▶ level 2: every past evaluation, in one bbolt file (spool/db)
//	        ─▶ the model (models.Model)
//
// A GA generation asks for about a thousand predictions, most of them
// repeated, so the level-1 hit is the hot path: a Handle (one per model and
// parameter set) and interned host Classes make it a sort of small integers,
// a byte key built on the stack, and one map lookup, with no allocation.
// Level 2 survives restarts, so a repeated job is evaluated once; its writes
// go through a background writer, so no fsync is ever on a caller's path.
//
// Keys are canonical. A host is seen as its architecture and its load rounded
// to the architecture's load step (the paper's "SunUltra1:hardware/CPU_LOAD=0"),
// and the model is called with exactly those rounded loads, so a cached value
// is what the model says for its key. For models that implement
// models.OrderFree the host vector is a sorted multiset, so permutations of
// one host set share an entry; for other models the order is kept. Errors
// are never cached.
package evaluator
