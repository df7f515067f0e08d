package evaluator

import (
	"testing"

	"msched/models"
)

// sixteen is the paper's 16-node machine: a mix of architectures and loads,
// in no particular order.
func sixteen() []models.HostSpec {
	return hosts(
		"SunUltra5", 0.0, "SunUltra1", 0.25, "SunSPARC10", 0.0, "SunUltra1", 0.0,
		"x86_64", 1.0, "SunUltra1", 0.0, "SunUltra5", 0.5, "SunUltra1", 0.0,
		"SunUltra10", 0.0, "SunUltra1", 0.0, "SunSPARC10", 0.25, "SunUltra1", 0.0,
		"SunUltra5", 0.0, "SunUltra1", 0.75, "x86_64", 0.0, "SunUltra1", 0.0,
	)
}

// BenchmarkEvaluatorHit is the hot path: a level-1 hit for a 16-host vector
// on a prepared handle with interned classes, including building (and
// sorting) the key. Target: ≤ 200 ns, 0 allocs.
func BenchmarkEvaluatorHit(b *testing.B) {
	e := open(b, library(b), "", 0)
	h, err := e.Prepare("particles", map[string]float64{"C_cpu": 5000})
	if err != nil {
		b.Fatal(err)
	}
	cs, err := e.Classes(nil, sixteen())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := h.PredictClasses(bg, cs); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.PredictClasses(bg, cs); err != nil {
			b.Fatal(err)
		}
	}
	if s := e.Stats(); s.ModelCalls != 1 {
		b.Fatalf("model called %d times", s.ModelCalls)
	}
}

// BenchmarkEvaluatorHitHostSpecs is a level-1 hit that also interns the 16
// HostSpecs (architecture lookup and load rounding per host).
func BenchmarkEvaluatorHitHostSpecs(b *testing.B) {
	e := open(b, library(b), "", 0)
	h, err := e.Prepare("particles", map[string]float64{"C_cpu": 5000})
	if err != nil {
		b.Fatal(err)
	}
	hs := sixteen()
	if _, err := h.Predict(bg, hs); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Predict(bg, hs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvaluatorHitParallel is the hot path from every core at once.
func BenchmarkEvaluatorHitParallel(b *testing.B) {
	e := open(b, library(b), "", 0)
	h, _ := e.Prepare("particles", nil)
	cs, _ := e.Classes(nil, sixteen())
	if _, err := h.PredictClasses(bg, cs); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := h.PredictClasses(bg, cs); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkEvaluatorLevel2Hit is a level-1 miss answered by the bbolt file
// (level 1 holds one entry; two vectors alternate).
func BenchmarkEvaluatorLevel2Hit(b *testing.B) {
	e := open(b, library(b), b.TempDir()+"/evaluations.db", 1)
	h, _ := e.Prepare("particles", nil)
	x, _ := e.Classes(nil, sixteen())
	y, _ := e.Classes(nil, sixteen()[:8])
	h.PredictClasses(bg, x)
	h.PredictClasses(bg, y)
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		k++
		v := x
		if k%2 == 0 {
			v = y
		}
		if _, err := h.PredictClasses(bg, v); err != nil {
			b.Fatal(err)
		}
	}
}
