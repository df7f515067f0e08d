package models

// newWarwick builds the "warwick" kind: the test task model of the Warwick MS
// paper (Eq. 2), made heterogeneous.
//
//	t = C_cpu/(i·s_min) + C_com·i
//
// C_cpu is the computation, in seconds on one speed-1 host, split evenly over
// the i hosts, so the slowest effective speed s_min governs it; C_com·i is the
// communication cost, which grows with i and does not depend on host speed.
// On i identical idle speed-1 hosts this is the paper's t_x(i) = C_cpu/i +
// C_com·i, with its peak speedup at i* = sqrt(C_cpu/C_com).
//
// Parameters: C_cpu ≥ 0, C_com ≥ 0 (seconds).
func newWarwick(spec Spec, hw *Hardware) (Model, error) {
	return newFormula(spec, hw, []param{
		{"C_cpu", ">= 0", nonNegative},
		{"C_com", ">= 0", nonNegative},
	}, func(p []float64, i int, sMin float64) float64 {
		n := float64(i)
		return p[0]/(n*sMin) + p[1]*n
	})
}
