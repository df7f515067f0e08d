package workload

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand"
	"slices"
	"strconv"
	"strings"
)

// The shape of the benchmark instances of Braun et al. (2001), "A comparison
// of eleven static heuristics for mapping a class of independent tasks onto
// heterogeneous distributed computing systems": 512 tasks on 16 machines.
const (
	BraunTasks    = 512
	BraunMachines = 16
)

// Heterogeneity ranges of Braun's range-based method. A task's baseline time
// is drawn from [1, R_task) and a machine's multiplier from [1, R_mach), so
// "hi" task heterogeneity spreads baselines over more than three orders of
// magnitude and "lo" machine heterogeneity keeps a task within a factor of
// ten across machines.
const (
	TaskHi = 3000.0
	TaskLo = 100.0
	MachHi = 1000.0
	MachLo = 10.0
)

// Classes lists the twelve ETC classes of Braun et al., named as their
// benchmark files are: u (uniform distribution), then consistency c, i or s,
// then task heterogeneity hi|lo followed by machine heterogeneity hi|lo.
func Classes() []string {
	var out []string
	for _, c := range []string{"c", "i", "s"} {
		for _, h := range []string{"hihi", "hilo", "lohi", "lolo"} {
			out = append(out, "u_"+c+"_"+h)
		}
	}
	return out
}

// etcClass is a parsed class name.
type etcClass struct {
	consistency  byte // 'c', 'i' or 's'
	rTask, rMach float64
}

func parseClass(class string) (etcClass, error) {
	bad := fmt.Errorf("workload: unknown ETC class %q (want u_{c|i|s}_{hi|lo}{hi|lo}, e.g. u_c_hihi)", class)
	parts := strings.Split(class, "_")
	if len(parts) != 3 || parts[0] != "u" || len(parts[1]) != 1 || !strings.Contains("cis", parts[1]) || len(parts[2]) != 4 {
		return etcClass{}, bad
	}
	c := etcClass{consistency: parts[1][0]}
	switch parts[2][:2] {
	case "hi":
		c.rTask = TaskHi
	case "lo":
		c.rTask = TaskLo
	default:
		return etcClass{}, bad
	}
	switch parts[2][2:] {
	case "hi":
		c.rMach = MachHi
	case "lo":
		c.rMach = MachLo
	default:
		return etcClass{}, bad
	}
	return c, nil
}

// GenerateETC draws a tasks × machines ETC matrix (etc[i][j] is the expected
// time of task i on machine j) of the named class by Braun's range-based
// method: a baseline τ(i) uniform on [1, R_task), then
// ETC(i, j) = τ(i)·x(i, j) with x(i, j) uniform on [1, R_mach).
//
// Consistency is then imposed as Braun defines it. Consistent (c): each row
// is sorted ascending, so machine 0 is the fastest for every task and a
// machine faster for one task is faster for all. Semi-consistent (s): the
// entries in the even columns 0, 2, 4, … of each row are extracted, sorted
// ascending and put back in those columns, while the odd columns keep their
// drawn values, so the matrix holds a consistent sub-matrix. Inconsistent
// (i): left as drawn.
//
// All draws come from rng, row by row, so a seed reproduces the matrix.
func GenerateETC(class string, tasks, machines int, rng *rand.Rand) ([][]float64, error) {
	c, err := parseClass(class)
	if err != nil {
		return nil, err
	}
	if tasks <= 0 || machines <= 0 {
		return nil, fmt.Errorf("workload: ETC of %d tasks × %d machines", tasks, machines)
	}
	etc := make([][]float64, tasks)
	even := make([]float64, 0, (machines+1)/2)
	for i := range etc {
		row := make([]float64, machines)
		tau := 1 + rng.Float64()*(c.rTask-1)
		for j := range row {
			row[j] = tau * (1 + rng.Float64()*(c.rMach-1))
		}
		switch c.consistency {
		case 'c':
			slices.Sort(row)
		case 's':
			even = even[:0]
			for j := 0; j < machines; j += 2 {
				even = append(even, row[j])
			}
			slices.Sort(even)
			for k, v := range even {
				row[2*k] = v
			}
		}
		etc[i] = row
	}
	return etc, nil
}

// ReadETC reads a tasks × machines ETC matrix in the layout of Braun's
// benchmark files: task-major, etc[0][0], etc[0][1], …, etc[0][machines-1],
// etc[1][0], … The files hold one number per line; any white space is
// accepted between numbers, so a matrix printed row per line reads too.
// Errors name the line of the offending text: a token that is not a number,
// a negative, infinite or NaN time, or a number beyond tasks·machines.
func ReadETC(r io.Reader, tasks, machines int) ([][]float64, error) {
	if tasks <= 0 || machines <= 0 {
		return nil, fmt.Errorf("workload: ETC of %d tasks × %d machines", tasks, machines)
	}
	want := tasks * machines
	flat := make([]float64, 0, want)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		for _, tok := range strings.Fields(sc.Text()) {
			v, err := strconv.ParseFloat(tok, 64)
			if err != nil {
				return nil, fmt.Errorf("workload: etc line %d: %q is not a number", line, tok)
			}
			if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				return nil, fmt.Errorf("workload: etc line %d: %q is not a run time", line, tok)
			}
			if len(flat) == want {
				return nil, fmt.Errorf("workload: etc line %d: more than %d×%d = %d numbers", line, tasks, machines, want)
			}
			flat = append(flat, v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("workload: etc line %d: %w", line+1, err)
	}
	if len(flat) != want {
		return nil, fmt.Errorf("workload: etc ends at line %d after %d numbers, want %d×%d = %d", line, len(flat), tasks, machines, want)
	}
	etc := make([][]float64, tasks)
	for i := range etc {
		etc[i] = flat[i*machines : (i+1)*machines : (i+1)*machines]
	}
	return etc, nil
}

// WriteETC writes etc in the layout ReadETC reads: one number per line,
// task-major, in the shortest form that reads back to the same float64.
func WriteETC(w io.Writer, etc [][]float64) error {
	bw := bufio.NewWriter(w)
	var buf []byte
	for i, row := range etc {
		if len(row) != len(etc[0]) {
			return fmt.Errorf("workload: etc row %d has %d machines, row 0 has %d", i, len(row), len(etc[0]))
		}
		for _, v := range row {
			buf = strconv.AppendFloat(buf[:0], v, 'g', -1, 64)
			buf = append(buf, '\n')
			if _, err := bw.Write(buf); err != nil {
				return fmt.Errorf("workload: write etc: %w", err)
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("workload: write etc: %w", err)
	}
	return nil
}
