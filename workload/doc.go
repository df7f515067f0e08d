// Package workload holds job streams and benchmark instances for msched:
// SWF traces, synthetic generators, ETC matrices.
//
// Everything here is data in, data out: readers and writers of published
// formats and generators that take an explicit *rand.Rand, so that a
// benchmark instance is reproducible from its seed. Turning an instance into
// a scheduling problem is the consumer's business (for example ga.FromETC).
package workload
