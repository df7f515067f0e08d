package policy

import (
	"cmp"
	"fmt"
	"slices"

	"msched/workload"
)

// CanHold reports why hosts hs can never hold co-allocated job q (nil:
// they can, when all are free): an ordered request needs component i's
// hosts in the i-th cluster (ClusterOrder), an unordered one its
// components in distinct clusters (a cluster per component, the largest
// component in the largest cluster and so on), a total one the sum
// anywhere. Only hosts meeting q's Arch count. For a job without a
// request it returns nil: policies judge those.
func CanHold(q *QueuedJob, hs []Host) error {
	if q.Request == 0 {
		return nil
	}
	order := ClusterOrder(hs)
	size := make([]int, len(order))
	total := 0
	for i := range hs {
		if q.Arch == "" || hs[i].Arch == q.Arch {
			size[slices.Index(order, hs[i].Cluster)]++
			total++
		}
	}
	what := "hosts"
	if q.Arch != "" {
		what = q.Arch + " hosts"
	}
	sum := 0
	for _, c := range q.Components {
		sum += c
	}
	switch q.Request {
	case workload.Total:
		if sum > total {
			return fmt.Errorf("a total request of %d hosts, but only %d %s exist", sum, total, what)
		}
		return nil
	case workload.Ordered, workload.Unordered:
	default:
		return fmt.Errorf("unknown request type %v", q.Request)
	}
	if len(q.Components) > len(order) {
		return fmt.Errorf("%d components, one per cluster, but only %d clusters exist", len(q.Components), len(order))
	}
	if q.Request == workload.Ordered {
		for i, c := range q.Components {
			if c > size[i] {
				return fmt.Errorf("component %d needs %d hosts in cluster %s (the %s in the hosts file), which has %d %s", i+1, c, order[i], ordinal(i+1), size[i], what)
			}
		}
		return nil
	}
	comps := slices.Clone(q.Components)
	slices.SortFunc(comps, func(a, b int) int { return cmp.Compare(b, a) })
	slices.SortFunc(size, func(a, b int) int { return cmp.Compare(b, a) })
	for i, c := range comps {
		if c > size[i] {
			return fmt.Errorf("components %v need %d distinct clusters of at least %v %s, the clusters have %v", q.Components, len(comps), comps, what, size)
		}
	}
	return nil
}

func ordinal(n int) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		return fmt.Sprintf("%dst", n)
	case n%10 == 2:
		return fmt.Sprintf("%dnd", n)
	case n%10 == 3:
		return fmt.Sprintf("%drd", n)
	}
	return fmt.Sprintf("%dth", n)
}
