package ga

import (
	"context"
	"math/rand"
	"testing"
)

// BenchmarkDecodeCost is one decode and XMS cost of a random chromosome of a
// 20-task, 16-host Eq. 2 instance, with the run-time memo warm.
func BenchmarkDecodeCost(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	p := msEq2Problem(20, 16, rng)
	c := NewRandom(p, rng)
	var s Schedule
	Evaluate(p, c, XMS, &s)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Evaluate(p, c, XMS, &s)
	}
}

// BenchmarkGeneration is one GA generation (population 60) on a 20-task,
// 16-host Eq. 2 instance, with the memo warmed by 200 generations first.
func BenchmarkGeneration(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	p := msEq2Problem(20, 16, rng)
	g, err := New(p, Config{Cost: XMS}, rng)
	if err != nil {
		b.Fatal(err)
	}
	msBenchSteps(b, g, 200)
	b.ReportMetric(float64(g.Evaluations())/float64(g.Generations()), "evals/gen")
}

// msBenchSteps runs warm generations of g, then times one generation per
// iteration of b.
func msBenchSteps(b *testing.B, g *GA, warm int) {
	ctx := context.Background()
	for i := 0; i < warm; i++ {
		if err := g.Step(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := g.Step(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
