package ga

import (
	"math"
	"testing"
)

func TestFromETC(t *testing.T) {
	p := FromETC([][]float64{{1, 2, 3}, {4, 5, 6}})
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if p.Hosts != 3 || len(p.Tasks) != 2 || p.Tasks[1].ID != "t1" {
		t.Fatalf("problem %+v", p)
	}
	if got := p.Tasks[1].Time(msBits(3, 2)); got != 6 {
		t.Errorf("t1 on host 2: %g, want 6", got)
	}
	if got := p.Tasks[0].Time(msBits(3, 0, 1)); !math.IsInf(got, 1) {
		t.Errorf("t0 on two hosts: %g, want +Inf", got)
	}
}
