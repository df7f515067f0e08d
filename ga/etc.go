package ga

import (
	"fmt"
	"math"
)

// FromETC turns an expected-time-to-compute matrix (etc[i][j] = time of task
// i on machine j, the format of Braun et al. 2001; see workload.ReadETC) into
// a Problem of one-host tasks on len(etc[0]) hosts, all free now. Task i is
// named "t<i>" and may run on any one host; its run time on a set of more
// than one host is +Inf, which Validate's Min = Max = 1 already excludes.
//
// The matrix must be rectangular with at least one column (FromETC panics
// otherwise: a ragged matrix is a bug in the caller, not an input error,
// since ReadETC and GenerateETC never return one). The rows are copied.
func FromETC(etc [][]float64) *Problem {
	if len(etc) > 0 && len(etc[0]) == 0 {
		panic("ga: FromETC: matrix with no machines")
	}
	p := &Problem{Tasks: make([]*Task, len(etc))}
	if len(etc) > 0 {
		p.Hosts = len(etc[0])
	}
	for i, row := range etc {
		if len(row) != p.Hosts {
			panic(fmt.Sprintf("ga: FromETC: row %d has %d machines, row 0 has %d", i, len(row), p.Hosts))
		}
		row := append([]float64(nil), row...)
		p.Tasks[i] = &Task{
			ID:  fmt.Sprintf("t%d", i),
			Min: 1, Max: 1,
			Runtime: func(hosts []int) float64 {
				if len(hosts) != 1 {
					return math.Inf(1)
				}
				return row[hosts[0]]
			},
		}
	}
	return p
}
