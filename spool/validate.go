package spool

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"msched/internal/envname"

	"gopkg.in/yaml.v3"
)

// validate checks what the YAML types cannot: required fields, impossible
// host counts, known states. doc gives the lines.
func validate(j *Job, doc *yaml.Node) []Problem {
	var ps []Problem
	bad := func(msg string, path ...string) {
		ps = append(ps, Problem{lineOf(doc, path...), strings.Join(path, "."), msg})
	}

	if isWrapper(j) {
		// A rejection wrapper: no request of its own, only what init recorded.
		if j.JID == "" {
			bad("required in a rejected submission's wrapper", "jid")
		}
	} else {
		ps = append(ps, validateRequest(j, doc)...)
	}

	if j.JID != "" && !ValidJID(j.JID) {
		bad(fmt.Sprintf("%q is not a job id like J000123", Clip(j.JID, maxQuoted)), "jid")
	}
	for i, e := range j.History {
		if !e.State.recorded() {
			ps = append(ps, Problem{historyLine(doc, i), fmt.Sprintf("history[%d].state", i), fmt.Sprintf("unknown state %q", Clip(string(e.State), maxQuoted))})
		}
	}
	if s := j.Schedule; s != nil {
		if s.PredictedSeconds < 0 || math.IsNaN(s.PredictedSeconds) {
			bad(fmt.Sprintf("must be ≥ 0, got %v", s.PredictedSeconds), "schedule", "predicted_seconds")
		}
	}
	if r := j.Run; r != nil && r.Attempts < 0 {
		bad(fmt.Sprintf("must be ≥ 0, got %d", r.Attempts), "run", "attempts")
	}
	return ps
}

// Bounds on what a job may ask for, checked by Parse and ParseSubmission
// (so by init and by msched submit alike) before a job is accepted. A job's
// argv and environment are held, copied and rewritten by every daemon the
// job passes, and handed to execve(2) at the end: a bound here is what keeps
// one job file from costing a daemon more than a job is worth (an argv of
// 262,144 words once made sched use 830 MB), and a job the kernel would
// refuse to start (E2BIG) is refused at submission, with the reason, instead
// of failing at every start.
const (
	// MaxArgs bounds command: a program and its options and file names.
	// Far more than a command line typed or generated for one program;
	// a job that needs more reads its list from a file.
	MaxArgs = 4096
	// MaxArgBytes bounds the bytes of command, each word counted with the
	// NUL execve adds. Linux refuses an argv and environment over a
	// quarter of the stack limit (2 MiB under the usual 8 MiB): this,
	// MaxEnvBytes and what msched adds to the environment stay well below.
	MaxArgBytes = 256 << 10
	// MaxArgLen bounds one word of command or one NAME=value of env:
	// Linux's MAX_ARG_STRLEN (32 pages, 131,072 bytes with the NUL);
	// execve refuses a longer one.
	MaxArgLen = 128<<10 - 1
	// MaxEnv bounds the variables of env, which are laid over a clean
	// environment of a few: a job sets a handful.
	MaxEnv = 256
	// MaxEnvBytes bounds the bytes of env, NAME=value and a NUL each; it
	// keeps each variable under MaxArgLen too.
	MaxEnvBytes = 128 << 10
	// MaxParams bounds model.params: a model's parameters are a few names.
	MaxParams = 256
)

// argvBytes is what execve counts for a list of strings: each with its NUL.
func argvBytes(words []string) int {
	n := 0
	for _, w := range words {
		n += len(w) + 1
	}
	return n
}

// envBytes is argvBytes of env as NAME=value strings.
func envBytes(env map[string]string) int {
	n := 0
	for k, v := range env {
		n += len(k) + 1 + len(v) + 1
	}
	return n
}

// checkArgvEnv reports the bounds of MaxArgs … MaxParams that j breaks:
// the count and total of command come before the check of each word, so a
// job far over a bound costs one problem, not one per word.
func checkArgvEnv(j *Job, doc *yaml.Node) []Problem {
	var ps []Problem
	bad := func(field string, path []string, format string, args ...any) {
		ps = append(ps, Problem{lineOf(doc, path...), field, fmt.Sprintf(format, args...)})
	}
	switch n, b := len(j.Command), argvBytes(j.Command); {
	case n > MaxArgs:
		bad("command", []string{"command"}, "%d words, over the limit of %d; a job with a longer list of arguments should read it from a file", n, MaxArgs)
	case b > MaxArgBytes:
		bad("command", []string{"command"}, "%d bytes, over the limit of %d (%s)", b, MaxArgBytes, humanBytes(MaxArgBytes))
	default:
		for i, w := range j.Command {
			if len(w) > MaxArgLen {
				bad(fmt.Sprintf("command[%d]", i), []string{"command"}, "%d bytes, over the limit of %d for one word (the kernel's)", len(w), MaxArgLen)
				break
			}
		}
	}
	switch n, b := len(j.Env), envBytes(j.Env); {
	case n > MaxEnv:
		bad("env", []string{"env"}, "%d variables, over the limit of %d", n, MaxEnv)
	case b > MaxEnvBytes:
		bad("env", []string{"env"}, "%d bytes, over the limit of %d (%s)", b, MaxEnvBytes, humanBytes(MaxEnvBytes))
	}
	if m := j.Model; m != nil && len(m.Params) > MaxParams {
		bad("model.params", []string{"model", "params"}, "%d parameters, over the limit of %d", len(m.Params), MaxParams)
	}
	return ps
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func validateRequest(j *Job, doc *yaml.Node) []Problem {
	if ps := checkArgvEnv(j, doc); len(ps) > 0 {
		// Nothing more is checked of a job this large: each check below
		// may look a field up in the tree, once per word or variable.
		return ps
	}
	var ps []Problem
	bad := func(line int, field, format string, args ...any) {
		ps = append(ps, Problem{line, field, fmt.Sprintf(format, args...)})
	}
	switch {
	case len(j.Command) == 0:
		bad(lineOf(doc, "command"), "command", "required: the program and its arguments, as a list")
	case j.Command[0] == "":
		bad(lineOf(doc, "command"), "command[0]", "the program name is empty")
	}

	if h := j.Hosts; lookup(doc, "hosts") != nil {
		if h == nil {
			bad(lineOf(doc, "hosts"), "hosts", "want {count: N} or {min: A, max: B}, got nothing")
		} else {
			has := func(k string) bool { return lookup(doc, "hosts", k) != nil }
			for _, f := range []struct {
				key string
				v   int
			}{{"count", h.Count}, {"min", h.Min}, {"max", h.Max}} {
				// yaml.v3 truncates 2.5 into an int without a word.
				if _, n := lookupKV(doc, "hosts", f.key); n != nil && n.ShortTag() != "!!int" {
					bad(lineOf(doc, "hosts", f.key), "hosts."+f.key, "want an integer, got a number %q", n.Value)
					continue
				}
				if has(f.key) && f.v < 1 {
					bad(lineOf(doc, "hosts", f.key), "hosts."+f.key, "must be ≥ 1, got %d", f.v)
				} else if f.v > MaxHostCount {
					bad(lineOf(doc, "hosts", f.key), "hosts."+f.key, "must be at most %d, got %d", MaxHostCount, f.v)
				}
			}
			switch {
			case has("count") && (has("min") || has("max")):
				bad(lineOf(doc, "hosts"), "hosts", "give count, or min and max, not both")
			case !has("count") && !has("min") && !has("max") && h.Arch == "" && h.Cluster == "":
				// {cluster: ws} alone is one host of ws.
				bad(lineOf(doc, "hosts"), "hosts", "want count, or min and max, or an arch or cluster")
			case h.Min >= 1 && h.Max >= 1 && h.Min > h.Max:
				bad(lineOf(doc, "hosts", "max"), "hosts.max", "must be ≥ hosts.min (%d), got %d", h.Min, h.Max)
			}
		}
	}

	if m := j.Model; lookup(doc, "model") != nil {
		switch {
		case m == nil:
			bad(lineOf(doc, "model"), "model", "want {name: …, params: {…}}, got nothing")
		case m.Name == "":
			bad(lineOf(doc, "model", "name"), "model.name", "required")
		default:
			for _, k := range sortedKeys(m.Params) {
				if v := m.Params[k]; math.IsNaN(v) || math.IsInf(v, 0) {
					bad(lineOf(doc, "model", "params", k), "model.params."+Clip(k, maxQuoted), "must be a finite number, got %v", v)
				}
			}
		}
	}
	if j.Walltime < 0 {
		bad(lineOf(doc, "walltime"), "walltime", "must be positive, got %v", j.Walltime)
	}
	for _, k := range sortedKeys(j.Env) {
		switch field := "env." + Clip(k, maxQuoted); {
		case !envname.Valid(k):
			bad(lineOf(doc, "env", k), field, "not a variable name (letters, digits and _, not starting with a digit)")
		case strings.HasPrefix(k, "MSCHED_"):
			bad(lineOf(doc, "env", k), field, "MSCHED_* variables are set by msched")
		case strings.ContainsRune(j.Env[k], 0):
			bad(lineOf(doc, "env", k), field, "holds a NUL byte")
		}
	}
	if j.SubmitDir != "" && !strings.HasPrefix(j.SubmitDir, "/") {
		bad(lineOf(doc, "submit_dir"), "submit_dir", "must be an absolute path, got %q", Clip(j.SubmitDir, maxQuoted))
	}
	switch j.Launch {
	case "", LaunchMPI:
	default:
		bad(lineOf(doc, "launch"), "launch", "unknown launch %q (want mpi, or leave it out)", Clip(j.Launch, maxQuoted))
	}
	if lookup(doc, "ranks_per_host") != nil {
		switch {
		case j.Launch != LaunchMPI:
			bad(lineOf(doc, "ranks_per_host"), "ranks_per_host", "only with launch: mpi")
		case j.RanksPerHost < 1 || j.RanksPerHost > MaxRanksPerHost:
			bad(lineOf(doc, "ranks_per_host"), "ranks_per_host", "must be 1 to %d, got %d", MaxRanksPerHost, j.RanksPerHost)
		}
	}
	ps = append(ps, validateComponents(j, doc)...)
	ps = append(ps, validateArrayDeps(j, doc)...)
	if _, seq := lookupKV(doc, "mail"); seq != nil {
		if seq.Kind != yaml.SequenceNode {
			bad(lineOf(doc, "mail"), "mail", "want a list of begin, end and fail, such as [begin, end]")
		}
		for i, m := range j.Mail {
			switch m {
			case MailBegin, MailEnd, MailFail:
			default:
				line := lineOf(doc, "mail")
				if seq.Kind == yaml.SequenceNode && i < len(seq.Content) {
					line = seq.Content[i].Line
				}
				bad(line, fmt.Sprintf("mail[%d]", i), "unknown %q (want begin, end or fail)", Clip(m, maxQuoted))
			}
		}
	}
	if j.Launch == LaunchMPI && len(j.Command) > 0 && strings.HasPrefix(j.Command[0], "-") {
		// mpirun would take it for one of its own options.
		bad(lineOf(doc, "command"), "command[0]", "must not start with '-' under launch: mpi, got %q", Clip(j.Command[0], maxQuoted))
	}
	return ps
}

// validateComponents checks a co-allocated request: components, request,
// and the host fields they exclude.
func validateComponents(j *Job, doc *yaml.Node) []Problem {
	var ps []Problem
	bad := func(path []string, format string, args ...any) {
		ps = append(ps, Problem{lineOf(doc, path...), strings.Join(path, "."), fmt.Sprintf(format, args...)})
	}
	key, comps := lookupKV(doc, "components")
	if lookup(doc, "request") != nil {
		switch j.Request {
		case RequestUnordered, RequestOrdered, RequestTotal:
			if key == nil {
				bad([]string{"request"}, "only with components (the hosts of each cluster, such as [8, 4, 4])")
			}
		default:
			bad([]string{"request"}, "unknown request %q (want unordered, ordered or total)", Clip(j.Request, maxQuoted))
		}
	}
	if key == nil {
		return ps
	}
	// The entries are read from the document's own nodes: yaml.v3
	// truncates 2.5 into an int and drops every null without a word, so
	// the decoded list may not say what was written.
	n := len(j.Components)
	if comps.Kind == yaml.SequenceNode {
		n = len(comps.Content)
	}
	switch {
	case n == 0:
		bad([]string{"components"}, "want a list of host counts, one per cluster, such as [8, 4, 4]; got none")
	case n > MaxComponents:
		bad([]string{"components"}, "%d components, over the limit of %d", n, MaxComponents)
	default:
		sum := 0 // each is at most MaxHostCount, and there are at most MaxComponents: no overflow
		for i := range n {
			line, c := lineOf(doc, "components"), 0
			if comps.Kind == yaml.SequenceNode {
				node := comps.Content[i]
				line = node.Line
				if node.ShortTag() != "!!int" || node.Decode(&c) != nil {
					ps = append(ps, Problem{line, fmt.Sprintf("components[%d]", i), fmt.Sprintf("want an integer, got %q", Clip(node.Value, maxQuoted))})
					continue
				}
			} else {
				c = j.Components[i]
			}
			switch {
			case c < 1:
				ps = append(ps, Problem{line, fmt.Sprintf("components[%d]", i), fmt.Sprintf("must be ≥ 1, got %d", c)})
			case c > MaxHostCount:
				ps = append(ps, Problem{line, fmt.Sprintf("components[%d]", i), fmt.Sprintf("must be at most %d, got %d", MaxHostCount, c)})
			default:
				sum += c
			}
		}
		if sum > MaxHostCount {
			bad([]string{"components"}, "%d hosts in all, over the limit of %d", sum, MaxHostCount)
		}
	}
	if h := j.Hosts; h != nil {
		for _, k := range []string{"count", "min", "max"} {
			if lookup(doc, "hosts", k) != nil {
				bad([]string{"hosts", k}, "give components or a host count, not both: a co-allocated job's hosts are its components' sum")
			}
		}
		if h.Cluster != "" {
			bad([]string{"hosts", "cluster"}, "a co-allocated job spans clusters: leave cluster out")
		}
	}
	return ps
}

// isWrapper: a job file with no command but a reason is the wrapper of a
// rejected submission (Claim.Rejection). A real request always has a command,
// and a submission may not set reason, so the two cannot be confused.
func isWrapper(j *Job) bool { return len(j.Command) == 0 && j.Reason != "" }

// submitterProblems lists the daemon sections a submission may not set: a user
// who could set them could forge a JID, another user's name, or a history.
func submitterProblems(j *Job, doc *yaml.Node) []Problem {
	var ps []Problem
	for _, f := range []struct {
		key string
		set bool
	}{
		{"jid", j.JID != ""}, {"user", j.User != ""}, {"uid", j.UID != nil}, {"submitted_at", !j.SubmittedAt.IsZero()},
		{"history", len(j.History) > 0}, {"schedule", j.Schedule != nil}, {"run", j.Run != nil},
		{"reason", j.Reason != ""}, {"cancel_requested", j.CancelRequested}, {"original", j.Original != ""},
		{"array_job", j.ArrayJob != ""}, {"array_index", j.ArrayIndex != nil},
	} {
		if f.set || lookup(doc, f.key) != nil {
			ps = append(ps, Problem{lineOf(doc, f.key), f.key, "set by msched, not by the submitter"})
		}
	}
	return ps
}

func historyLine(doc *yaml.Node, i int) int {
	k, seq := lookupKV(doc, "history")
	if k == nil {
		return 0
	}
	if i < len(seq.Content) {
		return seq.Content[i].Line
	}
	return k.Line
}
