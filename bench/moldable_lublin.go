package bench

import (
	"fmt"
	"math/rand"

	"msched/workload"
)

// LublinTrace is n jobs of the Lublin–Feitelson model
// (workload.GenerateLublin) with inter-arrival parameter alpha
// (workload.LublinAlphaW1 or LublinAlphaW2; 0 is W1's), drawn with seed, as
// a trace on the model's 128 nodes. n must be positive (the generator
// would take 0 for its default).
func LublinTrace(name string, n int, alpha float64, seed int64) (Trace, error) {
	if n <= 0 {
		return Trace{}, fmt.Errorf("bench: %s: %d jobs of the Lublin-Feitelson model", name, n)
	}
	h, recs, err := workload.GenerateLublin(workload.LublinConfig{Jobs: n, Alpha: alpha}, rand.New(rand.NewSource(seed)))
	if err != nil {
		return Trace{}, fmt.Errorf("bench: %s: %w", name, err)
	}
	return Trace{Name: name, Procs: workload.LublinProcs, Records: recs, Header: h,
		Source: fmt.Sprintf("Lublin-Feitelson model, %d jobs, alpha %g, seed %d", n, alpha, seed)}, nil
}
