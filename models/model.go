// Package models holds msched's performance models: given a job's named
// parameters and the vector of hosts it would run on, a Model predicts the
// job's run time in seconds. Hosts are seen through their hardware
// (architecture) model and their load, as in the Warwick MS system, where a
// host vector is handed to PACE as e.g. "SunUltra1:hardware/CPU_LOAD=0".
package models

import "context"

// HostSpec is what a model sees of one host: its architecture (a name in the
// hardware database) and its current load (run-queue length, 0 = idle).
type HostSpec struct {
	Arch string  `json:"arch" yaml:"arch"`
	Load float64 `json:"load" yaml:"load"`
}

// Scenario is one question to a model: the job's parameters and the hosts.
type Scenario struct {
	Params map[string]float64
	Hosts  []HostSpec
}

// Model predicts the run time, in seconds, of a job in a scenario.
type Model interface {
	Predict(ctx context.Context, s Scenario) (seconds float64, err error)
}

// OrderFree is implemented by models whose prediction does not depend on the
// order of the host vector, only on its multiset. The evaluator then sorts the
// host vector before caching, so permutations of one host set share an entry.
type OrderFree interface {
	HostOrderIrrelevant() bool
}
