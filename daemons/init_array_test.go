package daemons

import (
	"strings"
	"testing"

	"msched/spool"
)

// Init queues an array submission as one job per index, each with its
// index and the array's JID (the first member's), and rejects one whose
// members would be too many bytes, with the reason.
func TestInit_ExpandsArrays(t *testing.T) {
	sp := newTestSpool(t)
	if _, err := sp.Submit("sweep.yaml", []byte("name: sweep\ncommand: [\"true\"]\narray: 1-4,10%2\n")); err != nil {
		t.Fatal(err)
	}
	big := "command: [\"true\"]\narray: 0-9999\n" + strings.Repeat("#", 8<<10) + "\n"
	if _, err := sp.Submit("big.yaml", []byte(big)); err != nil {
		t.Fatal(err)
	}
	startDaemon(t, (&Init{testEnv(t, sp)}).Run)
	eventually(t, "both judged", func() bool {
		return jobsIn(t, sp, spool.Queued) == 5 && jobsIn(t, sp, spool.Rejected) == 1
	})
	es, _ := sp.List(spool.Queued)
	var first string
	indexes := map[int]string{}
	for _, e := range es {
		j, err := sp.Read(spool.Queued, e.Name)
		if err != nil {
			t.Fatal(err)
		}
		if first == "" {
			first = j.JID
		}
		if j.ArrayIndex == nil || j.ArrayJob != first || j.Name != "sweep" || j.Array != "1-4,10%2" {
			t.Fatalf("member %s: array_job %q index %v name %q array %q", j.JID, j.ArrayJob, j.ArrayIndex, j.Name, j.Array)
		}
		indexes[*j.ArrayIndex] = j.JID
	}
	for _, i := range []int{1, 2, 3, 4, 10} {
		if indexes[i] == "" {
			t.Errorf("no member of index %d: %v", i, indexes)
		}
	}
	if indexes[1] != first {
		t.Errorf("the array's JID %s is not its first member's (%s)", first, indexes[1])
	}
	r, _ := sp.List(spool.Rejected)
	rj, err := sp.Read(spool.Rejected, r[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rj.Reason, "big.yaml: array: 10000 members of a") || !strings.Contains(rj.Reason, "over the limit of 64 MiB") {
		t.Errorf("reason %q", rj.Reason)
	}
	eventually(t, "the claims removed", func() bool { return len(claimsLeft(t, sp)) == 0 })
}
