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
	one := []Host{{Name: "h1", Cluster: "a"}, {Name: "h2", Cluster: "a"}}
	q := &QueuedJob{ID: "J", Request: workload.Unordered, Components: []int{1, 1}, Min: 2, Max: 2}
	if err := CanHold(q, one); err == nil || !strings.HasSuffix(err.Error(), "2 components, each in its own cluster, but only 1 cluster") {
		t.Errorf("two components on one cluster: %v", err)
	}
}

// Clusters reached in different ways (Host.Via) cannot share a job: a
// request that only clusters of both launchers could hold together can
// never be held, and says so; one that the clusters of one launcher hold
// can.
func TestCanHold_OneLauncher(t *testing.T) {
	var hs []Host
	for _, h := range []struct{ name, cluster, via string }{
		{"a0", "a", "local"}, {"a1", "a", "local"}, {"b0", "b", "local"}, {"c0", "c", "ssh"}, {"c1", "c", "ssh"}, {"c2", "c", "ssh"},
	} {
		hs = append(hs, Host{Name: h.name, Cluster: h.cluster, Via: h.via, Arch: "x86"})
	}
	for _, tc := range []struct {
		req   workload.RequestType
		comps []int
		want  string
	}{
		{workload.Unordered, []int{2, 1}, ""}, // a and b, local
		{workload.Unordered, []int{3}, ""},    // c, ssh
		{workload.Ordered, []int{2, 1}, ""},   // a, b
		{workload.Total, []int{3}, ""},        // a and b, or c
		{workload.Unordered, []int{3, 1}, "unordered request [3 1]: only clusters reached in different ways (local, ssh) could hold it together, and a job runs through one launcher"},
		{workload.Unordered, []int{1, 1, 1}, "only clusters reached in different ways"},
		{workload.Ordered, []int{1, 1, 1}, "only clusters reached in different ways"},
		{workload.Total, []int{4}, "total request of 4 hosts: only clusters reached in different ways"},
		{workload.Total, []int{7}, "total request of 7 hosts: only 6 hosts exist"}, // never, whatever the launchers
	} {
		n := 0
		for _, c := range tc.comps {
			n += c
		}
		err := CanHold(&QueuedJob{ID: "J", Request: tc.req, Components: tc.comps, Min: n, Max: n}, hs)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v %v: %v, want it held", tc.req, tc.comps, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v %v: %v, want %q", tc.req, tc.comps, err, tc.want)
		}
	}
}
