package spool

import (
	"crypto/rand"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"
)

// Job is the content of a job file: the user's request, then the sections
// the daemons add as the job moves. The job file is the job's single source
// of truth; the directory it is in is its state.
type Job struct {
	// Written by the submitter.
	Name    string   `yaml:"name,omitempty"`
	Command []string `yaml:"command,omitempty"` // argv; never passed through a shell
	Workdir string   `yaml:"workdir,omitempty"`
	Notify  string   `yaml:"notify,omitempty"`
	// Mail lists when the user is mailed: MailBegin, MailEnd, MailFail
	// (nil: the configured default).
	Mail     []string `yaml:"mail,omitempty"`
	Hosts    *Hosts   `yaml:"hosts,omitempty"` // nil: one host
	Model    *Model   `yaml:"model,omitempty"` // nil: the profiler estimates
	Walltime Duration `yaml:"walltime,omitempty"`
	Stdout   string   `yaml:"stdout,omitempty"` // empty: spool/output/<jid>/stdout
	Stderr   string   `yaml:"stderr,omitempty"`
	// Env is laid over the job's clean environment (PATH, HOME, USER,
	// LOGNAME, SHELL from the password database); MSCHED_* are msched's.
	Env map[string]string `yaml:"env,omitempty"`
	// SubmitDir is where `msched submit` ran (it records it): a relative
	// command[0], workdir, stdout or stderr resolves against it; without
	// it, against the user's home directory.
	SubmitDir string `yaml:"submit_dir,omitempty"`
	// Launch is how the argv starts on the job's hosts: "" runs it once,
	// on the first host; LaunchMPI runs it under mpirun over all of them.
	Launch string `yaml:"launch,omitempty"`
	// RanksPerHost is the number of MPI ranks on each host (launch: mpi);
	// 0 means 1.
	RanksPerHost int `yaml:"ranks_per_host,omitempty"`
	// Components, when set, asks for hosts in several clusters at once
	// (co-allocation, after Bucur & Epema): one component of that many
	// hosts per cluster, the job's hosts their sum. Request says how the
	// components map to clusters (RequestUnordered when empty).
	Components []int  `yaml:"components,omitempty"`
	Request    string `yaml:"request,omitempty"`
	// Array makes one submission many jobs (ParseArray: "1-100%10",
	// "1,3,5-9"): init gives each index a job of its own, with
	// MSCHED_ARRAY_INDEX, and sched runs at most the limit after % of them
	// at once. A member keeps the field, for sched's limit.
	Array string `yaml:"array,omitempty"`
	// After and AfterOK are dependencies, JIDs in any form ParseJID reads
	// (written back canonical): the job waits until every job of After has
	// ended, however it ended, and every job of AfterOK has exited with
	// status 0; sched rejects it if one of AfterOK ended otherwise.
	After   []string `yaml:"after,omitempty"`
	AfterOK []string `yaml:"afterok,omitempty"`

	// Written by the daemons. A submission that sets any of these is rejected.
	JID  string `yaml:"jid,omitempty"`
	User string `yaml:"user,omitempty"`
	// UID is the submitter: the owner of the submitted file, taken by init
	// from the descriptor it read the file through. The job runs as this
	// uid; nil only in job files written before msched recorded it.
	UID             *int      `yaml:"uid,omitempty"`
	SubmittedAt     time.Time `yaml:"submitted_at,omitempty"`
	History         []Event   `yaml:"history,omitempty"`
	Schedule        *Schedule `yaml:"schedule,omitempty"`
	Run             *RunInfo  `yaml:"run,omitempty"`
	Reason          string    `yaml:"reason,omitempty"` // why rejected (or why a finished job failed)
	CancelRequested bool      `yaml:"cancel_requested,omitempty"`
	// ArrayJob and ArrayIndex are an array member's: the array's JID (its
	// first member's) and the member's index, written by init.
	ArrayJob   string `yaml:"array_job,omitempty"`
	ArrayIndex *int   `yaml:"array_index,omitempty"`
	// Original holds the submitted bytes, verbatim, when init rejected the
	// submission (unparseable or invalid). Such a job file is a wrapper: it
	// has no request of its own, only daemon sections and this. Bytes that
	// are not UTF-8 are stored as !!binary and come back unchanged.
	Original string `yaml:"original,omitempty"`

	state State  // directory the file was read from; "" for a job not in the spool
	file  string // its name there (the submitter's name in submitted/, else the JID)
}

// Hosts is the host request: Count hosts, or between Min and Max (moldable),
// optionally restricted to one architecture and/or cluster.
type Hosts struct {
	Count   int    `yaml:"count,omitempty"`
	Min     int    `yaml:"min,omitempty"`
	Max     int    `yaml:"max,omitempty"` // 0 with Min set: no upper bound but the machine
	Arch    string `yaml:"arch,omitempty"`
	Cluster string `yaml:"cluster,omitempty"`
}

// Range returns the smallest and largest acceptable host counts; max 0
// means "as many as there are".
func (h *Hosts) Range() (min, max int) {
	switch {
	case h == nil:
		return 1, 1
	case h.Count > 0:
		return h.Count, h.Count
	case h.Min > 0:
		return h.Min, h.Max
	case h.Max > 0:
		return 1, h.Max
	}
	return 1, 1
}

// Model names the job's performance model and its parameters.
type Model struct {
	Name   string             `yaml:"name"`
	Params map[string]float64 `yaml:"params,omitempty"`
}

// Event is one step on the job's path through the states.
type Event struct {
	State State     `yaml:"state" json:"state"`
	At    time.Time `yaml:"at" json:"at"`
	Note  string    `yaml:"note,omitempty" json:"note,omitempty"`
}

// Schedule is what the scheduler decided.
type Schedule struct {
	Hosts            []string  `yaml:"hosts"`
	PredictedSeconds float64   `yaml:"predicted_seconds"`
	DecidedAt        time.Time `yaml:"decided_at,omitempty"`
	Policy           string    `yaml:"policy,omitempty"`
	// Why is the policy's reason for the placement, when it gives one (a
	// moldable job: the size chosen, and why).
	Why string `yaml:"why,omitempty"`
	// EstimateSource says where PredictedSeconds came from: the walltime,
	// the performance model, the profiler, or how they were combined.
	EstimateSource string `yaml:"estimate_source,omitempty"`
}

// Component is one component of a co-allocated job as it ran: its cluster
// and its hosts.
type Component struct {
	Cluster string   `yaml:"cluster"`
	Hosts   []string `yaml:"hosts"`
}

// RunInfo is what the run daemon knows of the job's execution.
type RunInfo struct {
	StartedAt  time.Time `yaml:"started_at,omitempty"`
	EndedAt    time.Time `yaml:"ended_at,omitempty"`
	ExitStatus *int      `yaml:"exit_status,omitempty"` // nil: no exit status (signalled, never started)
	Signal     string    `yaml:"signal,omitempty"`
	PID        int       `yaml:"pid,omitempty"`
	PGID       int       `yaml:"pgid,omitempty"`
	Attempts   int       `yaml:"attempts,omitempty"`
	// Components: a co-allocated job's components, in order, as started.
	Components []Component `yaml:"components,omitempty"`
	Host       string      `yaml:"host,omitempty"` // where the launcher ran (first host)
	// SlurmJob is the Slurm job id of a job run on a Slurm cluster,
	// recorded before the job is released to run, so that a restarted run
	// daemon follows that job instead of submitting a second copy.
	SlurmJob string `yaml:"slurm_job,omitempty"`
}

// The values of Request (workload.RequestType's names):
//   - RequestUnordered: each component inside one cluster, each in a
//     different cluster; the scheduler picks which;
//   - RequestOrdered: component i inside the i-th cluster of the hosts
//     file (in the order the clusters first appear there);
//   - RequestTotal: the components' sum of hosts, anywhere across the
//     clusters.
const (
	RequestUnordered = "unordered"
	RequestOrdered   = "ordered"
	RequestTotal     = "total"
)

// The values of Mail: when the job starts, when it ends (whatever the
// outcome), and when it fails (ends with a non-zero status or a signal, or
// is rejected).
const (
	MailBegin = "begin"
	MailEnd   = "end"
	MailFail  = "fail"
)

// MaxComponents bounds components: more clusters than any system has.
const MaxComponents = 64

// MaxHostCount bounds a job's host count (hosts.count, min and max) and its
// components, each and in all: more hosts than any system has, and far from
// where a sum of them could overflow.
const MaxHostCount = 1 << 20

// HostRange returns the smallest and largest acceptable host counts, max 0
// meaning "as many as there are": the components' sum for a co-allocated
// job, else Hosts.Range.
func (j *Job) HostRange() (min, max int) {
	if len(j.Components) > 0 {
		n := 0
		for _, c := range j.Components {
			n += c
		}
		return n, n
	}
	return j.Hosts.Range()
}

// RequestType is the job's co-allocation request type: Request, or
// RequestUnordered when it has components and names none; "" for a job
// without components.
func (j *Job) RequestType() string {
	switch {
	case len(j.Components) == 0:
		return ""
	case j.Request == "":
		return RequestUnordered
	}
	return j.Request
}

// ComponentsText writes components as a job file does: [8, 4, 4].
func ComponentsText(c []int) string {
	s := make([]string, len(c))
	for i, n := range c {
		s[i] = strconv.Itoa(n)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// LaunchMPI is the Launch value that runs a job under mpirun.
const LaunchMPI = "mpi"

// MaxRanksPerHost bounds ranks_per_host: far above any host's cores, low
// enough that a typo cannot ask mpirun for millions of processes.
const MaxRanksPerHost = 1024

// State returns the state the job was read from ("" if it was not read from
// the spool). After a successful Move it is the destination.
func (j *Job) State() State { return j.state }

// File returns the job file's name in its directory.
func (j *Job) File() string { return j.file }

// Marshal returns the job file's YAML.
func (j *Job) Marshal() ([]byte, error) {
	b, err := yaml.Marshal(j)
	if err != nil {
		return nil, fmt.Errorf("spool: marshal job %s: %w", j.JID, err)
	}
	// yaml.v3 writes some strings with control characters (a line break and
	// a tab: "\t}\n", found by FuzzParse) as literal blocks it cannot read
	// back. It picks the literal style only for a string with a line break
	// ("\n"), and writes the rest plain or quoted as it can read them, so
	// only a job with a control character somewhere pays for parsing its
	// YAML back; those that do not read back are written double-quoted:
	// their escapes always read back.
	if !anyString(reflect.ValueOf(j), hasControl) || yaml.Unmarshal(b, new(yaml.Node)) == nil {
		return b, nil
	}
	b, err = marshalQuoted(j)
	if err != nil {
		return nil, fmt.Errorf("spool: marshal job %s: %w", j.JID, err)
	}
	return b, nil
}

// marshalQuoted marshals v with every string that holds a control
// character double-quoted. yaml.v3 chooses a string's style itself, so the
// strings are first swapped, in a copy of v, for placeholders it writes
// plainly; the document is read back as nodes, and each placeholder's node
// gets its string back, double-quoted. The placeholders carry a random
// nonce, so no value a user wrote can pass for one.
func marshalQuoted(v any) ([]byte, error) {
	var nonce [8]byte
	rand.Read(nonce[:]) // never fails (it crashes the program instead)
	prefix := fmt.Sprintf("msched-quoted-%x-", nonce)
	var saved []string
	safe := replaceStrings(reflect.ValueOf(v), func(s string) string {
		if !hasControl(s) {
			return s
		}
		saved = append(saved, s)
		return prefix + strconv.Itoa(len(saved)-1)
	})
	var n yaml.Node
	if err := n.Encode(safe.Interface()); err != nil {
		return nil, err
	}
	var restore func(*yaml.Node)
	restore = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && strings.HasPrefix(n.Value, prefix) {
			if k, err := strconv.Atoi(n.Value[len(prefix):]); err == nil && k < len(saved) {
				n.Value, n.Style = saved[k], yaml.DoubleQuotedStyle
			}
		}
		for _, c := range n.Content {
			restore(c)
		}
	}
	restore(&n)
	return yaml.Marshal(&n)
}

// hasControl reports whether s holds a control character (unicode.IsControl:
// C0, DEL and C1, line breaks and tabs included).
func hasControl(s string) bool { return strings.IndexFunc(s, unicode.IsControl) >= 0 }

// anyString reports whether f holds for some string of v (map keys
// included) that yaml.v3 would write: those of exported fields only, as in
// replaceStrings.
func anyString(v reflect.Value, f func(string) bool) bool {
	switch v.Kind() {
	case reflect.String:
		return f(v.String())
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && anyString(v.Elem(), f)
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			if t.Field(i).IsExported() && anyString(v.Field(i), f) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if anyString(v.Index(i), f) {
				return true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if anyString(it.Key(), f) || anyString(it.Value(), f) {
				return true
			}
		}
	}
	return false
}

// replaceStrings returns a deep copy of v with every string (map keys
// included) passed through f.
func replaceStrings(v reflect.Value, f func(string) string) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		out := reflect.New(v.Type()).Elem()
		out.SetString(f(v.String()))
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(replaceStrings(v.Elem(), f))
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v) // unexported fields and values without strings
		for i := range v.NumField() {
			if out.Field(i).CanSet() {
				out.Field(i).Set(replaceStrings(v.Field(i), f))
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(replaceStrings(v.Index(i), f))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(replaceStrings(it.Key(), f), replaceStrings(it.Value(), f))
		}
		return out
	}
	return v
}

// Duration is a walltime, written in any form ParseWalltime reads: a Go
// duration ("2h", "90s"), seconds, [D-]HH:MM:SS, MM:SS or days ("2d",
// "1d12h").
type Duration time.Duration

// UnmarshalYAML reads a walltime with ParseWalltime; the error names the
// value (Parse adds the field and line).
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return valueError(n, "want "+WalltimeForms)
	}
	v, err := ParseWalltime(n.Value)
	if err != nil {
		return valueError(n, err.Error())
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration in Go syntax ("2h0m0s").
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// IsZero lets omitempty drop an unset walltime.
func (d Duration) IsZero() bool { return d == 0 }

// CapturedPaths returns where the run daemon captures a job's stdout and
// stderr when the job names no destination: <outputDir>/<jid>/stdout and
// …/stderr, outputDir being the spool's output/ directory (DirOutput). The
// run daemon writes there, and reports and the web page read from there.
func CapturedPaths(outputDir, jid string) (stdout, stderr string) {
	d := filepath.Join(outputDir, jid)
	return filepath.Join(d, "stdout"), filepath.Join(d, "stderr")
}

// Predicted is the scheduler's prediction of the job's run time, if any.
func (j *Job) Predicted() (time.Duration, bool) {
	if j.Schedule == nil || j.Schedule.PredictedSeconds <= 0 || math.IsInf(j.Schedule.PredictedSeconds, 0) {
		return 0, false
	}
	return time.Duration(j.Schedule.PredictedSeconds * float64(time.Second)), true
}

// Actual is the job's run time, when it has both a start and an end.
func (j *Job) Actual() (time.Duration, bool) {
	if j.Run == nil || j.Run.StartedAt.IsZero() || j.Run.EndedAt.IsZero() || j.Run.EndedAt.Before(j.Run.StartedAt) {
		return 0, false
	}
	// A job that never started (its last start failed) has neither an exit
	// status nor a signal; the span between its timestamps is the failed
	// attempt, not a run time to compare with the prediction.
	if j.Run.ExitStatus == nil && j.Run.Signal == "" {
		return 0, false
	}
	return j.Run.EndedAt.Sub(j.Run.StartedAt), true
}
