package sim

import (
	"fmt"
	"iter"

	"msched/policy"
	"msched/workload"
)

// Multicluster workloads (Bucur and Epema's co-allocation; workload's
// multicluster convention): a machine of clusters, and traces whose jobs
// carry a request (Job.Request, Job.Components), which the policy places
// (policy's coalloc.go) and the simulator runs on the hosts the placement
// names, as any other.

// Clusters returns a machine of len(sizes) clusters, cluster i of sizes[i]
// identical hosts of speed 1 and architecture "generic", named c<i>p<j>,
// in cluster "c<i>" (i and j from 0), listed cluster by cluster: the
// clusters' order (policy.ClusterOrder) is the order of sizes, which is
// the order of a multicluster trace's components.
func Clusters(sizes []int) Machine {
	var m Machine
	for i, n := range sizes {
		for j := range n {
			m.Hosts = append(m.Hosts, policy.Host{Name: fmt.Sprintf("c%dp%d", i, j), Arch: policy.GenericArch, Cluster: fmt.Sprintf("c%d", i)})
			m.Speed = append(m.Speed, 1)
		}
	}
	return m
}

// FromSWFHeader is FromSWF for a trace read with its header: when the
// header has a Clusters line (a multicluster trace, workload.Clusters),
// each job whose record's queue field holds a request type also gets its
// request (workload.Components). An ordered or unordered job then takes
// the sum of its components (Min == Max), which is never clamped to the
// machine: the policy rejects a request no cluster can hold. A total
// request is a rigid job of the record's processors, clamped as any. Run
// it on the trace's clusters (Clusters of workload.Clusters' sizes).
func FromSWFHeader(h workload.Header, recs iter.Seq2[workload.Job, error], procs int, est EstimateKind, pyss bool) (*Trace, error) {
	_, multi := h.Get("Clusters")
	return fromSWF(recs, procs, est, pyss, multi)
}

// readRequest gives j the request that its record r holds, if any; whole
// says it is an ordered or unordered one, whose host count is then its
// components' sum, never clamped.
func readRequest(j *Job, r workload.Job) (whole bool, err error) {
	if r.Queue < int(workload.Total) || r.Queue > int(workload.Ordered) {
		return false, nil // not a request: an ordinary job
	}
	t, comps, err := workload.Components(r)
	if err != nil {
		return false, fmt.Errorf("sim: %w", err)
	}
	j.Request, j.Components = t, comps
	if t == workload.Total {
		return false, nil
	}
	n := 0
	for _, c := range comps {
		n += c
	}
	j.Min, j.Max = n, n
	return true, nil
}
