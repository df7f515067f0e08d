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
	// job.yaml:4: walltime: "soon" is not a duration: want a duration like 2h30m or 90s, seconds like 5400, [D-]HH:MM:SS like 1-12:00:00, MM:SS like 90:00, or days like 2d or 1d12h
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
