package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"msched/ga"
	"msched/workload"
)

// Co-allocation, after Bucur and Epema ("The Influence of the Structure and
// Sizes of Jobs on the Performance of Co-Allocation", JSSPP 2000): the rules
// that place a multicluster request (QueuedJob.Request) on the hosts free
// now, in one home. fcfs, fcfs-fill and fpfs place such jobs with them (the
// machine model, machine.go); Check (check.go) accepts what they produce;
// every other policy rejects a co-allocated job (machine.load).
//
// A request is placed on clusters in ClusterOrder (the hosts file's order):
//
//   - ordered: component i inside the i-th cluster;
//   - unordered: components in decreasing size (ties in Components' order),
//     each inside a distinct cluster chosen by the Fit: First Fit, the first
//     cluster in ClusterOrder with room that holds no other component (the
//     paper's choice), or Worst Fit, the one with the most free hosts (ties
//     in ClusterOrder). Taking components largest first, any cluster with
//     room for a component has room for every smaller one, so if this
//     placement fails no other succeeds, whatever the fit (the paper's
//     argument); the fit only changes where the job goes, and so what room
//     it leaves for the jobs behind it;
//   - total: Min hosts anywhere, across clusters.
//
// Only hosts that meet the job's Arch (and Cluster, if it names one) count.
// The hosts of a placement are listed component by component, in
// Components' order, each component's hosts in the order its cluster's free
// hosts were given.

// Fit is how an unordered request's components choose their clusters.
type Fit uint8

const (
	// FirstFit: each component, largest first, to the first cluster in
	// ClusterOrder that has room and holds no other component. The default
	// (Options.Fit's zero value), as in the paper.
	FirstFit Fit = iota
	// WorstFit: each component, largest first, to the cluster with the
	// most free hosts among those holding no other component (ties in
	// ClusterOrder): it leaves each cluster as much room as it can for the
	// jobs behind.
	WorstFit
)

// String is the fit's name in config and flags: "first" or "worst".
func (f Fit) String() string {
	switch f {
	case FirstFit:
		return "first"
	case WorstFit:
		return "worst"
	}
	return fmt.Sprintf("Fit(%d)", int(f))
}

// ParseFit reads "first" or "worst" ("" is first).
func ParseFit(s string) (Fit, error) {
	switch strings.ToLower(s) {
	case "", "first", "firstfit", "first-fit":
		return FirstFit, nil
	case "worst", "worstfit", "worst-fit":
		return WorstFit, nil
	}
	return 0, fmt.Errorf("policy: fit %q: want first or worst", s)
}

// AssignClusters chooses the cluster of each component of an ordered or
// unordered request (t), comps the components' sizes, free[c] the hosts
// that the job may use free in the c-th cluster of ClusterOrder. It sets
// to[i] (len(to) ≥ len(comps)) to the cluster of component i and reports
// whether the request fits; to is left in an unspecified state when it does
// not. A total request has no components to assign: it fits when the sum
// of free holds the sum of comps.
func AssignClusters(t workload.RequestType, comps, free []int, fit Fit, to []int) bool {
	switch t {
	case workload.Total:
		need, have := 0, 0
		for _, c := range comps {
			need += c
		}
		for _, f := range free {
			have += f
		}
		return need <= have
	case workload.Ordered:
		if len(comps) > len(free) {
			return false
		}
		for i, c := range comps {
			if c > free[i] {
				return false
			}
			to[i] = i
		}
		return true
	case workload.Unordered:
	default:
		return false
	}
	if len(comps) > len(free) {
		return false
	}
	// Components by decreasing size, ties in their order; clusters taken.
	// Stack buffers: requests have a few components, systems a few clusters.
	var obuf [16]int
	var ubuf [16]bool
	order := obuf[:0]
	for i := range comps {
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int { return comps[b] - comps[a] })
	used := ubuf[:0]
	for range free {
		used = append(used, false)
	}
	for _, i := range order {
		best := -1
		for c, f := range free {
			if used[c] || f < comps[i] {
				continue
			}
			if fit == FirstFit {
				best = c
				break
			}
			if best < 0 || f > free[best] {
				best = c
			}
		}
		if best < 0 {
			return false
		}
		used[best] = true
		to[i] = best
	}
	return true
}

// Coallocate places q, a co-allocated request, on hosts free now: free[c]
// lists the hosts (any identifiers: indexes, say) free now that q may use
// in the c-th cluster of ClusterOrder, in the order they are to be taken.
// It appends to out the hosts given to q, component by component in
// Components' order (a total request: RequestSize(q) hosts from the first
// cluster on), and reports whether q fits now; when it does not, out is
// returned as it was.
func Coallocate(q *QueuedJob, free [][]int, fit Fit, out []int) ([]int, bool) {
	if q.Request == workload.Total {
		need := RequestSize(q)
		start := len(out)
		for _, hs := range free {
			k := min(len(hs), need-(len(out)-start))
			out = append(out, hs[:k]...)
		}
		if len(out)-start < need {
			return out[:start], false
		}
		return out, true
	}
	var cbuf [16]int
	counts := cbuf[:0]
	for _, hs := range free {
		counts = append(counts, len(hs))
	}
	var tbuf [16]int
	to := tbuf[:0]
	for range q.Components {
		to = append(to, 0)
	}
	if !AssignClusters(q.Request, q.Components, counts, fit, to) {
		return out, false
	}
	// Each cluster takes at most one component (ordered and unordered
	// alike), so it gives its first hosts.
	for i, c := range q.Components {
		out = append(out, free[to[i]][:c]...)
	}
	return out, true
}

// RequestSize is the number of hosts a multicluster request takes: the sum
// of its components, or for a total request without components max(Min, 1).
func RequestSize(q *QueuedJob) int {
	if len(q.Components) == 0 {
		return max(q.Min, 1)
	}
	n := 0
	for _, c := range q.Components {
		n += c
	}
	return n
}

// coallocated reports whether q must be co-allocated (placed across
// clusters by the rules above) on hosts that are in many (true: more than
// one) clusters: an ordered or unordered request always, a total one only
// when there is more than one cluster (on one cluster it is an ordinary
// rigid job).
func coallocated(q *QueuedJob, many bool) bool {
	return q.Request == workload.Ordered || q.Request == workload.Unordered || q.Request != 0 && many
}

// coallocPolicies names the policies that place co-allocated requests, for
// the other policies' rejections.
const coallocPolicies = "fcfs, fcfs-fill and fpfs"

// notCoallocated is the reason a policy that keeps every job inside one
// cluster rejects co-allocated job q.
func notCoallocated(q *QueuedJob) string {
	return fmt.Sprintf("%s: co-allocated requests are placed by %s; this policy keeps a job inside one cluster",
		describeRequest(q), coallocPolicies)
}

// refuseCoalloc is the rejection of q by a policy that keeps every job
// inside one cluster, on hosts that are in many (true: more than one)
// clusters: q's request is malformed, or q must be co-allocated. ok is
// false for any other job (a total request on one cluster is an ordinary
// rigid job). The machine model asks it for its policies (machine.load);
// a policy built otherwise asks it too.
func refuseCoalloc(q *QueuedJob, many bool) (r Rejection, ok bool) {
	if q.Request == 0 {
		return Rejection{}, false
	}
	if why := malformedRequest(q); why != "" {
		return Rejection{Job: q.ID, Reason: why}, true
	}
	if coallocated(q, many) {
		return Rejection{Job: q.ID, Reason: notCoallocated(q)}, true
	}
	return Rejection{}, false
}

// describeRequest is q's request in words: "unordered request [3 1 4 2]".
func describeRequest(q *QueuedJob) string {
	if q.Request == workload.Total {
		return fmt.Sprintf("total request of %d hosts", RequestSize(q))
	}
	return fmt.Sprintf("%v request %v", q.Request, q.Components)
}

// malformedRequest says what is wrong with q's request in itself, whatever
// the hosts ("" when nothing is): an unknown type, an ordered or unordered
// request without components, a component below 1, or components whose sum
// is not the job's host count (Min == Max == the sum).
func malformedRequest(q *QueuedJob) string {
	switch q.Request {
	case workload.Total, workload.Ordered, workload.Unordered:
	default:
		return fmt.Sprintf("unknown request type %d", int(q.Request))
	}
	if q.Request != workload.Total && len(q.Components) == 0 {
		return fmt.Sprintf("%v request without components", q.Request)
	}
	for _, c := range q.Components {
		if c < 1 {
			return fmt.Sprintf("%s: a component of %d hosts (want at least 1)", describeRequest(q), c)
		}
	}
	if n := RequestSize(q); len(q.Components) > 0 && (q.Min != n || q.Max != 0 && q.Max != n) {
		return fmt.Sprintf("%s: components of %d hosts in all, but the job asks for %d to %d hosts", describeRequest(q), n, q.Min, q.Max)
	}
	return ""
}

// neverFits says why q's request can never be placed on clusters whose
// hosts that q may use number size[c] (in ClusterOrder, named names), even
// with every host free; "" when it can be.
func neverFits(q *QueuedJob, names []string, size []int) string {
	if fitsEver(q, size) {
		return ""
	}
	all, largest := 0, 0
	for _, n := range size {
		all += n
		largest = max(largest, n)
	}
	// hosts is "1 host", "2 sparc hosts", …
	hosts := func(n int, arch string) string {
		s := strconv.Itoa(n) + " "
		if arch != "" {
			s += arch + " "
		}
		if n == 1 {
			return s + "host"
		}
		return s + "hosts"
	}
	what := "hosts"
	if q.Arch != "" {
		what = q.Arch + " hosts"
	}
	req := describeRequest(q)
	switch {
	case q.Request == workload.Total:
		verb := "exist"
		if all == 1 {
			verb = "exists"
		}
		return fmt.Sprintf("%s: only %s %s", req, hosts(all, q.Arch), verb)
	case len(q.Components) > len(size):
		return fmt.Sprintf("%s: %d components, each in its own cluster, but only %s", req, len(q.Components), clusters(len(size)))
	case q.Request == workload.Ordered:
		for i, c := range q.Components {
			if c > size[i] {
				return fmt.Sprintf("%s: component %d needs %s in cluster %q (the %s), which has %s",
					req, i+1, hosts(c, ""), names[i], nth(i+1), hosts(size[i], q.Arch))
			}
		}
	case slices.Max(q.Components) > largest:
		return fmt.Sprintf("%s: a component of %s is larger than every cluster (the largest has %s)",
			req, hosts(slices.Max(q.Components), ""), hosts(largest, q.Arch))
	}
	return fmt.Sprintf("%s: no %d distinct clusters hold the components (clusters of %v %s)", req, len(q.Components), size, what)
}

// clusterIndex is ClusterOrder(hs) and each host's index in it, reusing
// clusterOf.
func clusterIndex(hs []Host, clusterOf []int) ([]string, []int) {
	order := ClusterOrder(hs)
	clusterOf = resize(clusterOf, len(hs))
	for i := range hs {
		clusterOf[i] = slices.Index(order, hs[i].Cluster)
	}
	return order, clusterOf
}

// launchers lists hs's launchers (Host.Via) in order of first appearance,
// appending to vias, and sets viaOf[i] to host i's index in them.
func launchers(hs []Host, vias []string, viaOf []int) ([]string, []int) {
	for i := range hs {
		v := slices.Index(vias, hs[i].Via)
		if v < 0 {
			v, vias = len(vias), append(vias, hs[i].Via)
		}
		viaOf[i] = v
	}
	return vias, viaOf
}

// launcherSizes counts, for each of nvia launchers and ncl clusters, the
// hosts a job may use (allow; nil: all) that the launcher reaches in the
// cluster (viaOf, clusterOf: each host's), reusing buf.
func launcherSizes(viaOf []int, nvia int, clusterOf []int, ncl int, allow ga.Bits, buf [][]int) [][]int {
	buf = resize(buf, nvia)
	for v := range buf {
		buf[v] = resize(buf[v], ncl)
		clear(buf[v])
	}
	for i, v := range viaOf {
		if allow == nil || allow.Has(i) {
			buf[v][clusterOf[i]]++
		}
	}
	return buf
}

// fitsEver reports whether q's request can be placed on clusters whose
// hosts that q may use number size[c], with every host free.
func fitsEver(q *QueuedJob, size []int) bool {
	var tbuf [16]int
	to := tbuf[:0]
	for range q.Components {
		to = append(to, 0)
	}
	comps := q.Components
	if q.Request == workload.Total {
		comps = []int{RequestSize(q)}
	}
	return AssignClusters(q.Request, comps, size, FirstFit, to)
}

// neverFitsOneWay is neverFits for clusters reached in several ways
// (Host.Via, named vias): a job runs through one launcher, so q can be
// placed only if the clusters of one of them can hold it. size[v][c] counts
// the hosts q may use in cluster c that launcher v reaches. "" when one
// can.
func neverFitsOneWay(q *QueuedJob, names, vias []string, size [][]int) string {
	if len(size) == 1 {
		return neverFits(q, names, size[0])
	}
	for _, sz := range size {
		if fitsEver(q, sz) {
			return ""
		}
	}
	all := make([]int, len(names))
	for _, sz := range size {
		for c, n := range sz {
			all[c] += n
		}
	}
	if why := neverFits(q, names, all); why != "" {
		return why
	}
	return fmt.Sprintf("%s: only clusters reached in different ways (%s) could hold it together, and a job runs through one launcher",
		describeRequest(q), strings.Join(vias, ", "))
}

// clusters is "1 cluster", "2 clusters", …
func clusters(n int) string {
	if n == 1 {
		return "1 cluster"
	}
	return strconv.Itoa(n) + " clusters"
}

// nth is "1st", "2nd", "3rd", "4th", …
func nth(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprint(n) + suffix
}
