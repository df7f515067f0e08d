package profiler

import (
	"math"
	"strconv"
	"testing"

	"msched/workload"
)

// On the SDSC SP2 sample, each job predicted from the jobs before it (then
// learnt from): the profiler's mean is closer to the actual run time than
// the user's requested time, on the jobs that have both. SWF user 12 and
// executable 14 name the category.
func TestSDSC_ProfilerBeatsRequestedTime(t *testing.T) {
	_, recs, err := workload.ReadFile("../workload/testdata/SDSC-SP2-1998-4.2-cln.first5k.swf")
	if err != nil {
		t.Fatal(err)
	}
	p := newMem(t)
	name := func(n int) string {
		if n < 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	var n int
	var errMean, errUpper, errReq float64
	sources := map[string]int{}
	for _, r := range recs {
		procs := r.P()
		if r.Run < 0 || procs <= 0 {
			continue
		}
		exe, user := name(r.Executable), name(r.User)
		if e, ok := p.Estimate(exe, user, procs, 0); ok && r.ReqTime > 0 {
			n++
			errMean += math.Abs(e.Mean - r.Run)
			errUpper += math.Abs(e.Upper() - r.Run)
			errReq += math.Abs(r.ReqTime - r.Run)
			sources[e.Source]++
		}
		if err := p.Observe(exe, user, procs, r.Run); err != nil {
			t.Fatal(err)
		}
	}
	if n < 4000 {
		t.Fatalf("only %d jobs compared", n)
	}
	mae, maeUpper, maeReq := errMean/float64(n), errUpper/float64(n), errReq/float64(n)
	t.Logf("SDSC SP2, %d jobs: mean absolute error of the profiler's mean %.0f s, of its 95%% upper limit %.0f s, of the requested time %.0f s", n, mae, maeUpper, maeReq)
	t.Logf("sources: %v", sources)
	if !(mae < maeReq) {
		t.Errorf("profiler MAE %.0f s not below the requested times' %.0f s", mae, maeReq)
	}
}
