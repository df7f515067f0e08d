package sim

import (
	"math/rand"
	"testing"

	"msched/workload"
)

// The speed targets, measured as benchmarks (never as timed
// tests: the machines are shared): easy over the SDSC-SP2 sample in at most
// 1 s, over 100,000 generated o2k jobs (960 processors) in at most 20 s.
//
//	go test -run XXX -bench EASY -benchtime 1x ./sim
func BenchmarkEASY_SDSC(b *testing.B) {
	_, recs, err := workload.ReadFile(sdscTrace)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		m := simulateRecs(b, recs, 128, "easy", Request, false, 0)
		b.ReportMetric(float64(m.Decisions), "decisions")
	}
}

func BenchmarkEASY_O2K100k(b *testing.B) {
	_, o2k, err := workload.GenerateO2K(workload.O2KConfig{Jobs: 100000}, rand.New(rand.NewSource(1)))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := simulateRecs(b, o2k, workload.O2KMachineProcs, "easy", Request, false, 0)
		b.ReportMetric(m.Utilization, "utilisation")
	}
}
