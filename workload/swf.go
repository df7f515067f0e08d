package workload

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Job is one record (line) of a trace in the Standard Workload Format,
// version 2.2 (Feitelson et al., Parallel Workloads Archive). The 18 fields
// keep their SWF order and meaning; -1 means "unknown" in every field and is
// kept as -1, never replaced by a guess. Times are seconds; memory is
// kilobytes per processor, as the format defines it.
type Job struct {
	ID         int64   // 1: job number
	Submit     float64 // 2: submit time, seconds from the trace's start (UnixStartTime)
	Wait       float64 // 3: wait time, seconds
	Run        float64 // 4: run time, seconds (wall clock)
	Procs      int     // 5: number of allocated processors
	CPU        float64 // 6: average CPU time used per processor, seconds
	Memory     float64 // 7: used memory, KB per processor
	ReqProcs   int     // 8: requested number of processors
	ReqTime    float64 // 9: requested time (user estimate or limit), seconds
	ReqMemory  float64 // 10: requested memory, KB per processor
	Status     int     // 11: 1 completed, 0 failed, 5 cancelled (2–4: partial records)
	User       int     // 12: user ID
	Group      int     // 13: group ID
	Executable int     // 14: executable (application) number
	Queue      int     // 15: queue number
	Partition  int     // 16: partition number
	Preceding  int64   // 17: preceding job number
	Think      float64 // 18: think time from the preceding job, seconds
}

// NumFields is the number of fields on an SWF job line.
const NumFields = 18

// FieldNames are the SWF 2.2 names of the 18 fields, in order; errors name
// fields by number and by these names.
var FieldNames = [NumFields]string{
	"job number", "submit time", "wait time", "run time", "allocated processors",
	"average CPU time", "used memory", "requested processors", "requested time",
	"requested memory", "status", "user", "group", "executable", "queue",
	"partition", "preceding job", "think time",
}

// SWF status codes (field 11).
const (
	StatusFailed    = 0
	StatusCompleted = 1
	StatusCancelled = 5
)

// Unknown is the SWF value of a field that is not known.
const Unknown = -1

// NewJob returns a job whose 18 fields are all unknown (-1); generators set
// the fields they know.
func NewJob() Job {
	return Job{
		ID: -1, Submit: -1, Wait: -1, Run: -1, Procs: -1, CPU: -1, Memory: -1,
		ReqProcs: -1, ReqTime: -1, ReqMemory: -1, Status: -1, User: -1, Group: -1,
		Executable: -1, Queue: -1, Partition: -1, Preceding: -1, Think: -1,
	}
}

// P is the job's processor count for accounting: allocated processors
// (field 5) when known and positive, else requested processors (field 8),
// else -1.
func (j Job) P() int {
	if j.Procs > 0 {
		return j.Procs
	}
	if j.ReqProcs > 0 {
		return j.ReqProcs
	}
	return -1
}

// fieldError is a malformed job line: which line, which field, what text.
type fieldError struct {
	line  int
	field int // 1-based; 0: the line as a whole
	text  string
	why   string
}

func (e *fieldError) Error() string {
	if e.field == 0 {
		return fmt.Sprintf("workload: swf line %d: %s", e.line, e.why)
	}
	return fmt.Sprintf("workload: swf line %d: field %d (%s) %q: %s",
		e.line, e.field, FieldNames[e.field-1], e.text, e.why)
}

// parseJob parses one job line (no comment, not blank). lineNo is only
// used in errors.
func parseJob(s string, lineNo int) (Job, error) {
	var f [NumFields]string
	n := 0
	for tok := range strings.FieldsSeq(s) {
		if n == NumFields {
			return Job{}, &fieldError{line: lineNo, why: fmt.Sprintf("more than %d fields", NumFields)}
		}
		f[n] = tok
		n++
	}
	if n != NumFields {
		return Job{}, &fieldError{line: lineNo, why: fmt.Sprintf("%d fields, want %d", n, NumFields)}
	}
	var j Job
	var err error
	num := func(i int) float64 {
		if err != nil {
			return 0
		}
		v, e := strconv.ParseFloat(f[i], 64)
		switch {
		case e != nil:
			err = &fieldError{line: lineNo, field: i + 1, text: f[i], why: "not a number"}
		case math.IsNaN(v) || math.IsInf(v, 0):
			err = &fieldError{line: lineNo, field: i + 1, text: f[i], why: "not a finite number"}
		}
		return v
	}
	// Integer fields also accept an integral decimal ("64.0"), which some
	// converted traces contain; a fraction is an error.
	integer := func(i int) int64 {
		if err != nil {
			return 0
		}
		if v, e := strconv.ParseInt(f[i], 10, 64); e == nil {
			return v
		}
		v := num(i)
		if err == nil && (v != math.Trunc(v) || math.Abs(v) > 1<<53) {
			err = &fieldError{line: lineNo, field: i + 1, text: f[i], why: "not an integer"}
		}
		return int64(v)
	}
	small := func(i int) int {
		v := integer(i)
		if err == nil && (v > math.MaxInt32 || v < math.MinInt32) {
			err = &fieldError{line: lineNo, field: i + 1, text: f[i], why: "out of range"}
		}
		return int(v)
	}
	j.ID = integer(0)
	j.Submit = num(1)
	j.Wait = num(2)
	j.Run = num(3)
	j.Procs = small(4)
	j.CPU = num(5)
	j.Memory = num(6)
	j.ReqProcs = small(7)
	j.ReqTime = num(8)
	j.ReqMemory = num(9)
	j.Status = small(10)
	j.User = small(11)
	j.Group = small(12)
	j.Executable = small(13)
	j.Queue = small(14)
	// The partition may carry a packed multicluster request (see
	// Components), which needs more than 32 bits.
	j.Partition = int(integer(15))
	j.Preceding = integer(16)
	j.Think = num(17)
	if err != nil {
		return Job{}, err
	}
	return j, nil
}

// appendJob appends j as one SWF line (with the newline). Numbers are
// written in the shortest form that reads back to the same value, so a
// whole number is written without a decimal point and a write–read round
// trip is exact.
func appendJob(b []byte, j Job) []byte {
	b = strconv.AppendInt(b, j.ID, 10)
	for _, v := range [...]float64{j.Submit, j.Wait, j.Run} {
		b = append(b, ' ')
		b = strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(j.Procs), 10)
	b = append(b, ' ')
	b = strconv.AppendFloat(b, j.CPU, 'f', -1, 64)
	b = append(b, ' ')
	b = strconv.AppendFloat(b, j.Memory, 'f', -1, 64)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(j.ReqProcs), 10)
	b = append(b, ' ')
	b = strconv.AppendFloat(b, j.ReqTime, 'f', -1, 64)
	b = append(b, ' ')
	b = strconv.AppendFloat(b, j.ReqMemory, 'f', -1, 64)
	for _, v := range [...]int64{int64(j.Status), int64(j.User), int64(j.Group),
		int64(j.Executable), int64(j.Queue), int64(j.Partition), j.Preceding} {
		b = append(b, ' ')
		b = strconv.AppendInt(b, v, 10)
	}
	b = append(b, ' ')
	b = strconv.AppendFloat(b, j.Think, 'f', -1, 64)
	return append(b, '\n')
}
