package evaluator

import (
	"math"
	"sync"
	"testing"

	"msched/models"
)

func TestClass_Interning(t *testing.T) {
	e := open(t, library(t), "", 0)
	class := func(arch string, load float64) Class {
		t.Helper()
		c, err := e.Class(models.HostSpec{Arch: arch, Load: load})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cases := []struct {
		name       string
		a, b       models.HostSpec
		wantShared bool
	}{
		{"same step", hs("SunUltra1", 0.9), hs("SunUltra1", 1.1), true},  // both 1
		{"next step", hs("SunUltra1", 1.1), hs("SunUltra1", 1.2), false}, // 1 and 1.25
		{"half rounds up", hs("SunUltra1", 0.125), hs("SunUltra1", 0.25), true},
		{"other arch", hs("SunUltra1", 0), hs("SunUltra5", 0), false},
		{"sparse loads", hs("x86_64", 100.1), hs("x86_64", 99.9), true}, // 400 steps
		{"sparse apart", hs("x86_64", 100), hs("x86_64", 100.25), false},
	}
	for _, c := range cases {
		a, b := class(c.a.Arch, c.a.Load), class(c.b.Arch, c.b.Load)
		if (a == b) != c.wantShared {
			t.Errorf("%s: %v → %d, %v → %d", c.name, c.a, a, c.b, b)
		}
	}
	infos, err := e.classes.resolve(nil, []Class{class("x86_64", 100.1), class("SunUltra1", 0.2)})
	if err != nil || infos[0] != (classInfo{"x86_64", 400, 100}) || infos[1] != (classInfo{"SunUltra1", 1, 0.25}) {
		t.Errorf("resolved %+v, %v", infos, err)
	}
	for _, bad := range []models.HostSpec{hs("SunUltra1", math.NaN()), hs("SunUltra1", math.Inf(1)), hs("SunUltra1", -0.1), hs("Cray", 0)} {
		if _, err := e.Class(bad); err == nil {
			t.Errorf("%v interned", bad)
		}
	}
}

func TestClass_ConcurrentInterningAgrees(t *testing.T) {
	e := open(t, library(t), "", 0)
	const goroutines, loads = 4, 300 // beyond denseUnits steps, so both maps grow
	got := make([][]Class, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range loads {
				l := float64((k*7+g)%loads) * 0.25
				c, err := e.Class(models.HostSpec{Arch: "SunUltra1", Load: l})
				if err != nil {
					t.Error(err)
					return
				}
				got[g] = append(got[g], c)
			}
		}()
	}
	wg.Wait()
	byLoad := map[float64]Class{}
	for g := range goroutines {
		for k, c := range got[g] {
			l := float64((k*7+g)%loads) * 0.25
			if prev, ok := byLoad[l]; ok && prev != c {
				t.Fatalf("load %v interned as %d and %d", l, prev, c)
			}
			byLoad[l] = c
		}
	}
	if len(byLoad) != loads || len(e.classes.infos) != loads+1 {
		t.Errorf("%d loads, %d classes", len(byLoad), len(e.classes.infos)-1)
	}
}

func hs(arch string, load float64) models.HostSpec { return models.HostSpec{Arch: arch, Load: load} }
