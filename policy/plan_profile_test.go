package policy

import (
	"math/rand"
	"slices"
	"testing"
)

// bruteEarliest is the first start t >= from (among from and the step
// times) at which n hosts of cls stay free over [t, t+d), each class
// giving the same hosts throughout, by brute force.
func bruteEarliest(p *cprofile, cls []int, n int32, d, from int64) int64 {
	cands := []int64{from}
	for _, t := range p.at {
		if t > from {
			cands = append(cands, t)
		}
	}
	for _, t := range cands {
		var sum int32
		for _, k := range cls {
			m := int32(1 << 30)
			for i := range p.at {
				end := never
				if i+1 < len(p.at) {
					end = p.at[i+1]
				}
				if end > t && p.at[i] < sat(t, d) {
					m = min(m, p.free[i*p.c+k])
				}
			}
			sum += m
		}
		if sum >= n {
			return t
		}
	}
	return never
}

// The profile's earliest start, with its full-class hints, agrees with a
// brute-force search through random reservations and returns, and take
// never drives a count below zero.
func TestCProfile_EarliestMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for trial := 0; trial < 200; trial++ {
		c := 1 + rng.Intn(3)
		freeNow := make([]int32, c)
		var ev []classEvent
		for x := range freeNow {
			freeNow[x] = int32(rng.Intn(4))
			for e := rng.Intn(4); e > 0; e-- {
				ev = append(ev, classEvent{at: int64(1 + rng.Intn(50)), class: x})
			}
		}
		slices.SortFunc(ev, func(a, b classEvent) int { return int(a.at - b.at) })
		var p cprofile
		p.build(freeNow, ev)
		type held struct {
			cls  []int
			got  []int32
			t, d int64
		}
		var hs []held
		for op := 0; op < 40; op++ {
			if len(hs) > 0 && rng.Intn(4) == 0 {
				i := rng.Intn(len(hs))
				h := hs[i]
				p.give(h.cls, h.got, h.t, h.d)
				hs = slices.Delete(hs, i, i+1)
				continue
			}
			lo := rng.Intn(c)
			cls := []int{}
			for x := lo; x < c; x++ {
				cls = append(cls, x)
			}
			n := int32(1 + rng.Intn(5))
			d := int64(1 + rng.Intn(30))
			from := int64(rng.Intn(20))
			got, want := p.earliest(cls, n, d, from), bruteEarliest(&p, cls, n, d, from)
			if got != want {
				t.Fatalf("trial %d op %d: earliest(%v, %d, %d, %d) = %d, brute force %d (full %v)", trial, op, cls, n, d, from, got, want, p.full)
			}
			if got == never {
				continue
			}
			g := make([]int32, len(cls))
			p.take(cls, n, got, d, g)
			hs = append(hs, held{cls, g, got, d})
			for _, f := range p.free {
				if f < 0 {
					t.Fatalf("trial %d op %d: negative free count", trial, op)
				}
			}
		}
	}
}
