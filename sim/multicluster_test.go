package sim

import (
	"bytes"
	"context"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"msched/policy"
	"msched/workload"
)

func TestClusters(t *testing.T) {
	m := Clusters([]int{2, 3})
	var names []string
	for i, h := range m.Hosts {
		names = append(names, h.Cluster+":"+h.Name)
		if m.Speed[i] != 1 || h.Arch != policy.GenericArch {
			t.Errorf("%s: speed %v, arch %q", h.Name, m.Speed[i], h.Arch)
		}
	}
	if got := strings.Join(names, " "); got != "c0:c0p0 c0:c0p1 c1:c1p0 c1:c1p1 c1:c1p2" {
		t.Errorf("hosts %s", got)
	}
	if got := policy.ClusterOrder(m.Hosts); !slices.Equal(got, []string{"c0", "c1"}) {
		t.Errorf("cluster order %v", got)
	}
}

// multiclusterTrace writes n generated jobs of request type rt (4 clusters
// of 8) as SWF and reads them back: the header and the records.
func multiclusterTrace(t *testing.T, rt workload.RequestType, n int) (workload.Header, []workload.Job) {
	t.Helper()
	h, jobs, err := workload.GenerateMulticluster(workload.MulticlusterConfig{Jobs: n, Request: rt, N2: 4, Utilisation: 0.5, TimeUnit: 100},
		rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := workload.WriteAll(&buf, h, jobs); err != nil {
		t.Fatal(err)
	}
	h, jobs, err = workload.ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return h, jobs
}

func TestFromSWFHeader_Requests(t *testing.T) {
	h, recs := multiclusterTrace(t, workload.Ordered, 50)
	tr, err := FromSWFHeader(h, workload.Slice(recs), 32, Exact, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Jobs) != 50 {
		t.Fatalf("%d jobs", len(tr.Jobs))
	}
	for i, j := range tr.Jobs {
		_, comps, _ := workload.Components(recs[i])
		n := 0
		for _, c := range comps {
			n += c
		}
		if j.Request != workload.Ordered || !slices.Equal(j.Components, comps) || len(comps) != 4 || j.Min != n || j.Max != n {
			t.Fatalf("job %s: %v %v on %d..%d, record's components %v", j.ID, j.Request, j.Components, j.Min, j.Max, comps)
		}
	}
	// Without the header's Clusters line, or through FromSWF, the queue
	// and partition fields are only numbers.
	plain, err := FromSWF(workload.Slice(recs), 32, Exact, false)
	if err != nil {
		t.Fatal(err)
	}
	noClusters, err := FromSWFHeader(workload.Header{}, workload.Slice(recs), 32, Exact, false)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Jobs[0].Request != 0 || noClusters.Jobs[0].Request != 0 {
		t.Error("requests read from a trace without Clusters")
	}
	// A request wider than the machine is kept whole (the policy rejects
	// it), not clamped.
	wide := recs[0]
	if err := workload.SetComponents(&wide, workload.Unordered, []int{20, 20}); err != nil {
		t.Fatal(err)
	}
	tr, err = FromSWFHeader(h, workload.Slice([]workload.Job{wide}), 32, Exact, false)
	if err != nil || tr.Jobs[0].Min != 40 || tr.Clamped != 0 {
		t.Errorf("wide request: %+v, clamped %d, %v", tr.Jobs, tr.Clamped, err)
	}
	// Its record's processors may be exactly the machine's: nothing was
	// clamped then either (the count once went to -1).
	full := wide
	full.Procs, full.ReqProcs = 32, 32
	tr, err = FromSWFHeader(h, workload.Slice([]workload.Job{full}), 32, Exact, false)
	if err != nil || tr.Jobs[0].Min != 40 || tr.Clamped != 0 {
		t.Errorf("wide request of a machine's processors: %+v, clamped %d, %v", tr.Jobs, tr.Clamped, err)
	}
	bad := recs[0]
	bad.Partition = 0
	if _, err := FromSWFHeader(h, workload.Slice([]workload.Job{bad}), 32, Exact, false); err == nil {
		t.Error("a request without components read")
	}
}

// fcfs and fpfs run ordered, unordered and total requests of a generated
// multicluster trace through the simulator on 4 clusters of 8: every job
// ends, each on hosts that respect its request, and one no cluster can hold
// is rejected.
func TestSim_Coallocation(t *testing.T) {
	for _, rt := range []workload.RequestType{workload.Ordered, workload.Unordered, workload.Total} {
		h, recs := multiclusterTrace(t, rt, 300)
		tr, err := FromSWFHeader(h, workload.Slice(recs), 32, Exact, false)
		if err != nil {
			t.Fatal(err)
		}
		sizes, err := workload.Clusters(h)
		if err != nil {
			t.Fatal(err)
		}
		jobs := append(tr.Jobs, Job{ID: "never", Submit: 10, Min: 9, Max: 9, Run: 1, Estimate: 1,
			Request: workload.Unordered, Components: []int{9}})
		for _, name := range []string{"fcfs", "fpfs"} {
			t.Run(rt.String()+"/"+name, func(t *testing.T) {
				m := Clusters(sizes)
				s, err := New(Config{Machine: m, Record: true}, jobs)
				if err != nil {
					t.Fatal(err)
				}
				p, err := policy.New(name, policy.Options{Predictor: s.Predictor()})
				if err != nil {
					t.Fatal(err)
				}
				res, err := s.Run(context.Background(), p)
				if err != nil {
					t.Fatal(err)
				}
				for k, j := range res.Jobs {
					if j.ID == "never" {
						if res.Status[k] != Rejected || !strings.Contains(res.Reasons[j.ID], "larger than every cluster") {
							t.Errorf("never: %v, %q", res.Status[k], res.Reasons[j.ID])
						}
						continue
					}
					if res.Status[k] != Done {
						t.Fatalf("job %s: %v", j.ID, res.Status[k])
					}
					hs := res.HostsOf[k]
					if len(hs) != j.Min {
						t.Fatalf("job %s on %d hosts, takes %d", j.ID, len(hs), j.Min)
					}
					if rt == workload.Total {
						continue
					}
					off := 0
					var used []string
					for i, c := range j.Components {
						cl := m.Hosts[hs[off]].Cluster
						for _, x := range hs[off : off+c] {
							if m.Hosts[x].Cluster != cl {
								t.Fatalf("job %s: component %d across clusters", j.ID, i)
							}
						}
						if rt == workload.Ordered && cl != m.Hosts[8*i].Cluster || slices.Contains(used, cl) {
							t.Fatalf("job %s: component %d in %s (components before in %v)", j.ID, i, cl, used)
						}
						used = append(used, cl)
						off += c
					}
				}
			})
		}
	}
}
