package policy

// Least Work First, Gibbons' LEWF. SEEDS.md §2 reads the thesis as ordering
// by estimated run time, and so does msched: the queue is sorted by
// estimated run time alone (not run time × processors), ties in arrival
// order.
//
//   - lwf: LEWF-fill: in that order, start every job that fits now, skipping
//     those that do not (first fit).
//   - lwf-strict: plain LEWF: in that order, stop at the first job that does
//     not fit. A wide short job can then hold back the whole queue, as in the
//     thesis.
//
// Neither bounds overtaking: a long job can starve under a stream of short
// ones, as in the thesis (Table 6.4 measures mean response only).
var (
	_ = register("lwf", func(o Options) (Policy, error) {
		return &scanPolicy{name: "lwf", m: newMachine(o), byEstimate: true, fill: true}, nil
	})
	_ = register("lwf-strict", func(o Options) (Policy, error) {
		return &scanPolicy{name: "lwf-strict", m: newMachine(o), byEstimate: true}, nil
	})
)
