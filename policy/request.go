package policy

import (
	"errors"
)

// CanHold reports why hosts hs can never hold co-allocated job q (nil:
// they can, when all are free), by the placement rules of coalloc.go: an
// ordered request needs component i's hosts in the i-th cluster
// (ClusterOrder), an unordered one its components in distinct clusters, a
// total one the sum anywhere. Only hosts meeting q's constraints count
// (allowed, as the policies count them). For a
// job without a request it returns nil: the policies judge those. msched
// submit and the sched daemon's hold-back of jobs waiting for down hosts
// ask it; the policies reject such a job with the same reason.
func CanHold(q *QueuedJob, hs []Host) error {
	if q.Request == 0 {
		return nil
	}
	if why := malformedRequest(q); why != "" {
		return errors.New(why)
	}
	order, clusterOf := clusterIndex(hs, nil)
	vias, viaOf := launchers(hs, nil, make([]int, len(hs)))
	size := launcherSizes(viaOf, len(vias), clusterOf, len(order), allowed(hs, q), nil)
	if why := neverFitsOneWay(q, order, vias, size); why != "" {
		return errors.New(why)
	}
	return nil
}
