package evaluator_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"msched/evaluator"
	"msched/models"
)

func Example() {
	hw := models.DefaultHardware()
	lib, err := models.LoadDir("../models/testdata/models", hw)
	if err != nil {
		log.Fatal(err)
	}
	dir, _ := os.MkdirTemp("", "evaluator-example")
	defer os.RemoveAll(dir)
	ev, err := evaluator.Open(context.Background(), evaluator.Options{
		Models: lib, Hardware: hw, Path: filepath.Join(dir, "evaluations.db"),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer ev.Close()

	// One handle per job; intern the hosts once per scheduling snapshot.
	job, err := ev.Prepare("particles", map[string]float64{"C_cpu": 2000})
	if err != nil {
		log.Fatal(err)
	}
	hosts, err := ev.Classes(nil, []models.HostSpec{
		{Arch: "SunUltra1", Load: 0}, {Arch: "SunUltra5", Load: 0.6}, {Arch: "SunUltra1", Load: 0.1},
	})
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		// Loads round to 0, 0.5 and 0: s_min = 1, so 2000/3 + 10·3 seconds.
		t, err := job.PredictClasses(context.Background(), hosts)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%.2f s\n", t)
	}
	s := ev.Stats()
	fmt.Printf("lookups %d, level-1 hits %d, model calls %d\n", s.Lookups, s.L1Hits, s.ModelCalls)
	// Output:
	// 696.67 s
	// 696.67 s
	// 696.67 s
	// lookups 3, level-1 hits 2, model calls 1
}
