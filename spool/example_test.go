package spool_test

import (
	"errors"
	"fmt"

	"msched/spool"
)

func ExampleParse() {
	_, err := spool.Parse("job.yaml", []byte(`name: particles
comand: ["./AppParticles"]
hosts: {min: 0, max: 16}
walltime: soon
`))
	var pe *spool.ParseError
	if errors.As(err, &pe) {
		fmt.Println(pe.Detail())
	}
	// Output:
	// job.yaml:2: unknown field "comand"
	// job.yaml:4: walltime: "soon" is not a duration like 2h or 90s, or seconds
}

func ExampleParse_validation() {
	_, err := spool.Parse("job.yaml", []byte(`name: particles
command: ["./AppParticles"]
hosts: {min: 8, max: 4}
model: {params: {N: 20000}}
`))
	fmt.Println(err)
	// Output:
	// spool: job.yaml:3: hosts.max: must be ≥ hosts.min (8), got 4
	// job.yaml:4: model.name: required
}
