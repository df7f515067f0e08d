package ga

import "context"

// Optimizer is what the GA, simulated annealing and random search have in
// common, so that they can be compared at an equal budget of evaluations
// (one evaluation = one decode and cost of a chromosome).
type Optimizer interface {
	// Run optimises until the optimiser's total evaluation count reaches
	// maxEvals or ctx is done (then it returns ctx.Err()). It may be called
	// again with a larger budget to continue.
	Run(ctx context.Context, maxEvals int) error
	// Best returns the best chromosome found so far and its cost.
	Best() (*Chromosome, float64)
	// Evaluations is the number of evaluations made so far.
	Evaluations() int
}

// TraceFunc is told every improvement of the best cost, with the evaluation
// count at which it was found; the convergence benchmark plots it.
type TraceFunc func(evals int, best float64)
