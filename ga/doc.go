// Package ga is msched's scheduling core for the MS problem of the Warwick
// MS system (SEEDS.md §1): tasks, each needing a set of hosts for its whole
// run, are packed onto heterogeneous hosts whose running work ends at a
// per-host "base" time.
//
// A solution is the paper's two-part string: an ordering part (a permutation
// of the tasks) and a mapping part (one bit per task and host). Decoding is
// list scheduling in string order: each task starts when all of its hosts are
// free. Costs are the makespan (MS) and the extended cost XMS (Eq. 3), which
// penalises hosts left idle from now, at the bottom of the schedule.
//
// The package holds the decoder and costs, the genetic algorithm with a live
// population (built on eaopt's Genome interface), simulated annealing, random
// search, list heuristics and lower bounds, all on the same coding so that
// they can be compared fairly.
//
// Nothing here is safe for concurrent use unless it says so: a Problem and its
// tasks' memoised run times belong to one optimiser at a time.
package ga
