package ga

import (
	"math/rand"
	"testing"
)

// msEq2Task is a test task of Eq. 2: C_cpu/i + C_com·i seconds on i hosts,
// whichever hosts they are.
func msEq2Task(id string, cpu, com float64, min, max int) *Task {
	return &Task{ID: id, Min: min, Max: max, Runtime: func(h []int) float64 {
		i := float64(len(h))
		return cpu/i + com*i
	}}
}

// msEq2Problem is a random instance of n Eq. 2 tasks on m hosts, as in the
// paper's Fig. 3: C_cpu in [100, 1000) s, and C_com set so that the peak
// speedup lies at a host count uniform in [1, m].
func msEq2Problem(n, m int, rng *rand.Rand) *Problem {
	p := &Problem{Hosts: m}
	for j := 0; j < n; j++ {
		cpu := 100 + 900*rng.Float64()
		peak := 1 + float64(m-1)*rng.Float64()
		p.Tasks = append(p.Tasks, msEq2Task(string(rune('A'+j%26))+string(rune('0'+j/26)), cpu, cpu/(peak*peak), 1, m))
	}
	return p
}

// msBits is a host set of m hosts holding hs.
func msBits(m int, hs ...int) Bits { return hostSet(m, hs) }

// msMustLegal fails the test if c is not a legal chromosome of p.
func msMustLegal(t *testing.T, p *Problem, c *Chromosome, what string) {
	t.Helper()
	if !Legal(p, c) {
		t.Fatalf("%s: illegal chromosome %v %v", what, c.Order, c.Map)
	}
}
