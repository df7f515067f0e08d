package bench

import (
	"fmt"
	"math/rand"

	"msched/ga"
)

// Fig3Problem is the setting of Fig. 3 of the MS paper: n Eq. 2 tasks,
// t(i) = C_cpu/i + C_com·i, on m identical nodes, each task moldable over
// 1..m nodes. The paper gives no parameters; msched draws them so that the
// peak-speedup node counts i* = sqrt(C_cpu/C_com) spread evenly over 1..m:
// task j gets i*_j = 1 + j mod m (shuffled), C_cpu ~ U[1000, 10000) s and
// C_com = C_cpu / i*². Run time at the peak is then 2·C_cpu/i*.
func Fig3Problem(n, m int, rng *rand.Rand) *ga.Problem {
	p := &ga.Problem{Hosts: m}
	peaks := make([]int, n)
	for j := range peaks {
		peaks[j] = 1 + j%m
	}
	rng.Shuffle(n, func(a, b int) { peaks[a], peaks[b] = peaks[b], peaks[a] })
	for j := 0; j < n; j++ {
		ccpu := 1000 + 9000*rng.Float64()
		ccom := ccpu / float64(peaks[j]*peaks[j])
		p.Tasks = append(p.Tasks, &ga.Task{
			ID:      fmt.Sprintf("T%02d", j),
			Min:     1,
			Max:     m,
			Runtime: Eq2(ccpu, ccom),
		})
	}
	return p
}

// Eq2 is the paper's test task model on identical unit-speed nodes.
func Eq2(ccpu, ccom float64) ga.RuntimeFunc {
	return func(hosts []int) float64 {
		i := float64(len(hosts))
		return ccpu/i + ccom*i
	}
}
