package models

// newAmdahl builds the "amdahl" kind: Amdahl's law with a serial fraction.
//
//	t = T1·(f + (1−f)/i) / s_min
//
// T1 is the run time on one idle speed-1 host and f the fraction of it that
// is serial. The parallel part is split evenly over the i hosts and the
// serial part runs on one of them; both are scaled by the slowest effective
// speed s_min, since the slowest host governs an even split. This is also
// Gibbons' synthetic workload model t = W·(D + (1−D)/p).
//
// Parameters: T1 > 0 (seconds), 0 ≤ f ≤ 1.
func newAmdahl(spec Spec, hw *Hardware) (Model, error) {
	return newFormula(spec, hw, []param{
		{"T1", "> 0", positive},
		{"f", "in [0, 1]", fraction},
	}, func(p []float64, i int, sMin float64) float64 {
		t1, f := p[0], p[1]
		return t1 * (f + (1-f)/float64(i)) / sMin
	})
}
