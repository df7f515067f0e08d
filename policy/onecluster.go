package policy

import (
	"fmt"
	"slices"
	"time"
)

// OneCluster keeps every job of s inside one cluster, for every policy: a
// policy keeps a job that names a cluster inside it, so OneCluster gives
// each queued job that names none the cluster where it can start soonest.
// The launchers reach the hosts of a cluster one way (ssh, a Slurm
// controller, this machine), and Check refuses an ordinary job across
// clusters. A job with a multicluster request (QueuedJob.Request) is left
// alone: it is co-allocated across clusters by the policies that place such
// requests (coalloc.go) and rejected by the others; its hosts are not held
// for the jobs behind it here.
//
// With the hosts in one cluster it returns s as it is. Otherwise it returns
// s with a copy of its queue in which every job names a cluster, the
// cluster given to each job that named none (by job ID: pass it back as
// prev on the next call), and the jobs without a cluster that no cluster
// can hold (they need more hosts meeting their arch than any one cluster
// has), left out of the queue: reject them.
//
// A job's cluster is the one where max(Min, 1) hosts meeting its arch are
// free soonest, by the hosts' FreeAt and running jobs' ends, after the jobs
// before it in the queue took theirs (until the end of their Estimate; for
// the rest of this call when they have none). Ties go to the cluster of
// prev (so that a job does not move between equals from one call to the
// next), then to the cluster with more hosts it may use free by then (room
// for a moldable job), then by name.
func OneCluster(s Snapshot, prev map[string]string) (Snapshot, map[string]string, []Rejection) {
	if !manyClusters(s.Hosts) {
		return s, nil, nil // the common case, kept cheap: the simulator calls this on every decision
	}
	if !slices.ContainsFunc(s.Queue, func(q QueuedJob) bool { return q.Request == 0 }) {
		return s, nil, nil // only multicluster requests wait (a co-allocation simulation)
	}
	type slot struct {
		arch string
		free time.Time
	}
	byCluster := map[string][]slot{}
	index := map[string][2]int{} // host → (cluster order, slot)
	var names []string
	for _, h := range s.Hosts {
		if _, ok := byCluster[h.Cluster]; !ok {
			names = append(names, h.Cluster)
		}
		free := h.FreeAt
		if free.Before(s.Now) {
			free = s.Now
		}
		index[h.Name] = [2]int{len(names) - 1, len(byCluster[h.Cluster])}
		byCluster[h.Cluster] = append(byCluster[h.Cluster], slot{arch: h.Arch, free: free})
	}
	slices.Sort(names)
	for _, h := range s.Hosts { // cluster order changed with the sort
		i := index[h.Name]
		i[0] = slices.Index(names, h.Cluster)
		index[h.Name] = i
	}
	for _, r := range s.Running {
		for _, h := range r.Hosts {
			if i, ok := index[h]; ok {
				sl := &byCluster[names[i[0]]][i[1]]
				if r.End.After(sl.free) {
					sl.free = r.End
				}
			}
		}
	}
	never := s.Now.Add(time.Duration(maxEstimate))
	pins := map[string]string{}
	var rejects []Rejection
	queue := make([]QueuedJob, 0, len(s.Queue))
	var cand []int // slots of one cluster that the job may use
	for _, q := range s.Queue {
		if q.Request != 0 {
			queue = append(queue, q) // co-allocated, or rejected, by the policy
			continue
		}
		need := max(q.Min, 1)
		best, bestN := "", 0
		var bestAt time.Time
		var bestSlots []int
		largest := 0
		for _, c := range names {
			if q.Cluster != "" && c != q.Cluster {
				continue
			}
			slots := byCluster[c]
			cand = cand[:0]
			for k, sl := range slots {
				if q.Arch == "" || sl.arch == q.Arch {
					cand = append(cand, k)
				}
			}
			largest = max(largest, len(cand))
			if len(cand) < need {
				continue
			}
			slices.SortStableFunc(cand, func(a, b int) int { return slots[a].free.Compare(slots[b].free) })
			at := slots[cand[need-1]].free
			n := need // hosts free by then: room for a moldable job
			for n < len(cand) && !slots[cand[n]].free.After(at) {
				n++
			}
			better := best == "" || at.Before(bestAt)
			if !better && at.Equal(bestAt) {
				switch p, ok := prev[q.ID]; {
				case ok && (p == c || p == best):
					better = p == c
				case n != bestN:
					better = n > bestN
				}
			}
			if better {
				best, bestAt, bestN = c, at, n
				bestSlots = append(bestSlots[:0], cand[:need]...)
			}
		}
		if best == "" {
			if q.Cluster == "" {
				what := ""
				if q.Arch != "" {
					what = " of arch " + q.Arch
				}
				rejects = append(rejects, Rejection{Job: q.ID, Reason: fmt.Sprintf(
					"needs at least %d hosts%s in one cluster (a job runs inside one cluster); the largest cluster has %d", need, what, largest)})
				continue
			}
			queue = append(queue, q) // a cluster of too few hosts: the policy rejects it
			continue
		}
		until := never
		if q.Estimate > 0 && time.Duration(maxEstimate)-q.Estimate > bestAt.Sub(s.Now) {
			until = bestAt.Add(q.Estimate)
		}
		for _, k := range bestSlots {
			byCluster[best][k].free = until
		}
		if q.Cluster == "" {
			q.Cluster = best
			pins[q.ID] = best
		}
		queue = append(queue, q)
	}
	s.Queue = queue
	return s, pins, rejects
}

// manyClusters reports whether hs are in more than one cluster.
func manyClusters(hs []Host) bool {
	for i := 1; i < len(hs); i++ {
		if hs[i].Cluster != hs[0].Cluster {
			return true
		}
	}
	return false
}
