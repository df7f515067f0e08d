package workload_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"msched/workload"
)

func ExampleReader() {
	trace := `; Version: 2.2
; MaxProcs: 128
    1        0     -1   1451  128     -1    -1   -1     -1    -1 -1   1   1  -1 -1 -1 -1 -1
    2     1460     -1   3726   64     -1    -1   -1     -1    -1 -1   1   1  -1 -1 -1 -1 -1
`
	r, err := workload.NewReader(strings.NewReader(trace))
	if err != nil {
		panic(err)
	}
	fmt.Println("MaxProcs", r.Header().MaxProcs)
	for j, err := range r.All() {
		if err != nil {
			panic(err)
		}
		fmt.Printf("job %d: %d processors for %g s\n", j.ID, j.P(), j.Run)
	}
	// Output:
	// MaxProcs 128
	// job 1: 128 processors for 1451 s
	// job 2: 64 processors for 3726 s
}

func ExampleComponents() {
	j := workload.NewJob()
	if err := workload.SetComponents(&j, workload.Ordered, []int{3, 1, 4, 2}); err != nil {
		panic(err)
	}
	typ, comps, _ := workload.Components(j)
	fmt.Println(j.Queue, j.Partition, j.ReqProcs, typ, comps)
	// Output: 3 3010402 10 ordered [3 1 4 2]
}

func ExampleEq2Params() {
	j := workload.NewJob()
	j.ReqProcs, j.ReqTime = 4, 500 // i* = 4, t(4) = 500 s
	ccpu, ccom, _ := workload.Eq2Params(j)
	fmt.Println(ccpu, ccom, workload.Eq2Time(ccpu, ccom, 4), workload.Eq2Time(ccpu, ccom, 8))
	// Output: 1000 62.5 500 625
}

func BenchmarkGenerateO2K100k(b *testing.B) {
	for b.Loop() {
		if _, _, err := workload.GenerateO2K(workload.O2KConfig{Jobs: 100_000}, rand.New(rand.NewSource(1))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCharacteriseO2K100k(b *testing.B) {
	_, jobs, _ := workload.GenerateO2K(workload.O2KConfig{Jobs: 100_000}, rand.New(rand.NewSource(1)))
	for b.Loop() {
		if _, err := workload.Characterise(workload.Slice(jobs), workload.O2KMachineProcs); err != nil {
			b.Fatal(err)
		}
	}
}
