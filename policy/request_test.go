package policy

import (
	"strings"
	"testing"

	"msched/workload"
)

func TestCanHold(t *testing.T) {
	// Clusters in hosts-file order: b (3 hosts, one of them arm), a (2), c (1).
	var hs []Host
	for _, h := range []struct{ name, cluster, arch string }{
		{"b0", "b", "x86"}, {"a0", "a", "x86"}, {"b1", "b", "x86"}, {"a1", "a", "x86"}, {"c0", "c", "x86"}, {"b2", "b", "arm"},
	} {
		hs = append(hs, Host{Name: h.name, Cluster: h.cluster, Arch: h.arch})
	}
	for _, tc := range []struct {
		req   workload.RequestType
		comps []int
		arch  string
		want  string // "" holds
		cl    string // the job's cluster constraint
	}{
		{workload.Unordered, []int{3, 2, 1}, "", "", ""},
		{workload.Unordered, []int{1, 2, 3}, "", "", ""},
		{workload.Unordered, []int{2, 2, 2}, "", "no 3 distinct clusters hold the components (clusters of [3 2 1] hosts)", ""},
		{workload.Unordered, []int{3, 2, 1}, "x86", "unordered request [3 2 1]: a component of 3 hosts is larger than every cluster (the largest has 2 x86 hosts)", ""},
		{workload.Unordered, []int{1, 1, 1, 1}, "", "4 components, each in its own cluster, but only 3 clusters", ""},
		{workload.Ordered, []int{3, 2, 1}, "", "", ""},
		{workload.Ordered, []int{2, 3}, "", `component 2 needs 3 hosts in cluster "a" (the 2nd), which has 2 hosts`, ""},
		{workload.Ordered, []int{3}, "x86", "which has 2 x86 hosts", ""},
		{workload.Total, []int{4, 2}, "", "", ""},
		{workload.Total, []int{4, 3}, "", "total request of 7 hosts: only 6 hosts exist", ""},
		{0, []int{99}, "", "", ""}, // not a co-allocated job: the policies judge it
		// A cluster constraint leaves the other clusters out, as the
		// policies count them (machine.request): fcfs rejects this job.
		{workload.Unordered, []int{1, 1}, "", "no 2 distinct clusters hold the components (clusters of [0 2 0] hosts)", "a"},
	} {
		n := 0
		for _, c := range tc.comps {
			n += c
		}
		q := &QueuedJob{ID: "J", Request: tc.req, Components: tc.comps, Arch: tc.arch, Cluster: tc.cl, Min: n, Max: n}
		err := CanHold(q, hs)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v %v %q: %v, want it held", tc.req, tc.comps, tc.arch, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v %v %q: %v, want %q", tc.req, tc.comps, tc.arch, err, tc.want)
		}
	}
}
