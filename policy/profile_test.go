package policy

import (
	"math/rand"
	"testing"
)

// The one-class profile (conservative's), hand-checked: 4 hosts; 1 free now, 2 more at 10, all 4 at 30.
//
//	free: [0,10) 1, [10,30) 3, [30,∞) 4
//
// 2 hosts for 5: at 10. 1 host for 100: now. 4 hosts: 30. 5 hosts: never.
// Reserving 3 hosts over [12, 40): [10,12) 3, [12,30) 0, [30,40) 1, then
// 4; 2 hosts for 5 now go at 10 (in [10,12)? no, 5 > 2) -> 40.
func TestProfile_HandChecked(t *testing.T) {
	var p cprofile
	p.build1(1, []release{{at: 10, lo: 0, hi: 2}, {at: 30, lo: 2, hi: 3}})
	for _, c := range []struct {
		n       int
		d, want int64
	}{{2, 5, 10}, {1, 100, 0}, {4, 1, 30}, {5, 1, never}} {
		if got := p.earliest(class0, int32(c.n), c.d, 0); got != c.want {
			t.Errorf("earliest(%d hosts, %d) = %d, want %d", c.n, c.d, got, c.want)
		}
	}
	p.add1(-3, 12, 28)
	wantAt, wantFree := []int64{0, 10, 12, 30, 40}, []int32{1, 3, 0, 1, 4}
	if len(p.at) != len(wantAt) {
		t.Fatalf("steps %v %v, want %v %v", p.at, p.free, wantAt, wantFree)
	}
	for i := range wantAt {
		if p.at[i] != wantAt[i] || p.free[i] != wantFree[i] {
			t.Fatalf("steps %v %v, want %v %v", p.at, p.free, wantAt, wantFree)
		}
	}
	if got := p.earliest(class0, 2, 5, 0); got != 40 {
		t.Errorf("after the reservation, 2 hosts for 5 at %d, want 40", got)
	}
	if got := p.earliest(class0, 2, 2, 0); got != 10 {
		t.Errorf("after the reservation, 2 hosts for 2 at %d, want 10 (the gap [10,12))", got)
	}
	if !p.fits1(3, 10, 2) || p.fits1(3, 10, 3) {
		t.Error("fits disagrees with the steps around [10,12)")
	}
}

// earliest agrees with a brute-force scan over every integer start, on
// random profiles built by reservations.
func TestProfile_EarliestMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	const horizon = 200
	for i := 0; i < 500; i++ {
		total := 1 + rng.Intn(8)
		var p cprofile
		p.build1(total, nil)
		free := make([]int, horizon+100) // free[t] for integer t; beyond: total
		for t := range free {
			free[t] = total
		}
		for k := rng.Intn(6); k > 0; k-- {
			n, s, d := 1+rng.Intn(total), int64(rng.Intn(100)), int64(1+rng.Intn(60))
			if p.earliest(class0, int32(n), d, s) != s {
				continue // would overbook
			}
			p.add1(-n, s, d)
			for t := s; t < s+d; t++ {
				free[t] -= n
			}
		}
		n, d, from := 1+rng.Intn(total), int64(1+rng.Intn(50)), int64(rng.Intn(50))
		want := int64(-1)
		for s := from; s < horizon && want < 0; s++ {
			ok := true
			for t := s; t < s+d; t++ {
				if free[t] < n {
					ok = false
					break
				}
			}
			if ok {
				want = s
			}
		}
		if got := p.earliest(class0, int32(n), d, from); got != want {
			t.Fatalf("case %d: earliest(%d, %d, from %d) = %d, brute force %d; steps %v %v", i, n, d, from, got, want, p.at, p.free)
		}
	}
}
