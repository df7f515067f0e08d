package spool

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"msched/internal/envname"

	"gopkg.in/yaml.v3"
)

// FuzzParse feeds the job-file parser anything (seeds in
// testdata/fuzz/FuzzParse: realistic job files, daemon-written ones and
// nasty ones) and holds it to what the daemons rely on:
//
//   - it never panics;
//   - a rejection is a *ParseError with a reason of at most MaxReason bytes;
//   - an accepted job satisfies every bound and rule of validate (a
//     submission sets no daemon section);
//   - what a daemon writes of an accepted job (Marshal) parses back to the
//     same job, and a submission that init accepts parses as a daemon's
//     job file too;
//   - a submission under maxSeparators parses into at most
//     2·(maxSeparators+2) nodes: the argument that bounds yaml.v3's memory
//     before it parses holds.
func FuzzParse(f *testing.F) {
	f.Add([]byte(validJob))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, submission := range []bool{true, false} {
			j, err := parse("job.yaml", data, submission)
			if err != nil {
				checkRejection(t, err)
				continue
			}
			checkAccepted(t, j, submission)
			out, err := j.Marshal()
			if err != nil {
				t.Fatalf("accepted job does not marshal: %v", err)
			}
			back, err := Parse("job.yaml", out)
			if err != nil {
				t.Fatalf("accepted job, as a daemon writes it, does not parse back: %v\n%s", err, out)
			}
			if again, _ := back.Marshal(); !bytes.Equal(again, out) {
				t.Fatalf("accepted job changed through a write and a read:\n%s\nthen\n%s", out, again)
			}
			if submission {
				if _, err := Parse("job.yaml", data); err != nil {
					t.Fatalf("a submission init accepts is no daemon's job file: %v", err)
				}
			}
		}
		if n := separators(data); n <= maxSeparators {
			if nodes := yamlNodes(data); nodes > 2*(n+2) {
				t.Fatalf("%d nodes from %d separators: over the bound 2·(n+2) that maxSeparators relies on", nodes, n)
			}
		}
	})
}

func checkRejection(t *testing.T, err error) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("rejected with %T %v, not a *ParseError", err, err)
	}
	d := pe.Detail()
	if d == "" {
		t.Fatalf("rejected without a reason")
	}
	if len(d) > MaxReason {
		t.Fatalf("reason of %d bytes, over MaxReason (%d):\n%.500s…", len(d), MaxReason, d)
	}
	if len(pe.Problems) > maxProblems {
		t.Fatalf("%d problems kept, over %d", len(pe.Problems), maxProblems)
	}
}

// checkAccepted checks an accepted job against validate's rules, restated.
func checkAccepted(t *testing.T, j *Job, submission bool) {
	t.Helper()
	if submission && (j.JID != "" || j.User != "" || j.UID != nil || !j.SubmittedAt.IsZero() || j.History != nil ||
		j.Schedule != nil || j.Run != nil || j.Reason != "" || j.CancelRequested || j.Original != "") {
		t.Fatalf("a submission with a daemon section accepted: %+v", j)
	}
	if !isWrapper(j) {
		if len(j.Command) == 0 || j.Command[0] == "" {
			t.Fatalf("accepted without a program: %q", j.Command)
		}
	}
	if len(j.Command) > MaxArgs || argvBytes(j.Command) > MaxArgBytes {
		t.Fatalf("accepted an argv of %d words, %d bytes", len(j.Command), argvBytes(j.Command))
	}
	for _, w := range j.Command {
		if len(w) > MaxArgLen {
			t.Fatalf("accepted a word of %d bytes", len(w))
		}
	}
	if len(j.Env) > MaxEnv || envBytes(j.Env) > MaxEnvBytes {
		t.Fatalf("accepted an env of %d variables, %d bytes", len(j.Env), envBytes(j.Env))
	}
	for k, v := range j.Env {
		if !envname.Valid(k) || len(k)+1+len(v) > MaxArgLen || bytes.ContainsRune([]byte(v), 0) {
			t.Fatalf("accepted env %q=%q", k, v)
		}
	}
	if h := j.Hosts; h != nil {
		if min, max := h.Range(); min < 1 || max != 0 && max < min {
			t.Fatalf("accepted hosts %+v: range %d..%d", h, min, max)
		}
	}
	if m := j.Model; m != nil {
		if m.Name == "" || len(m.Params) > MaxParams {
			t.Fatalf("accepted model %+v", m)
		}
		for k, v := range m.Params {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("accepted model.params.%s = %v", k, v)
			}
		}
	}
	if j.Walltime < 0 {
		t.Fatalf("accepted walltime %v", j.Walltime)
	}
	if j.JID != "" && !ValidJID(j.JID) {
		t.Fatalf("accepted jid %q", j.JID)
	}
}

// yamlNodes counts the nodes, document nodes included, of every document
// of data that yaml.v3 parses.
func yamlNodes(data []byte) int {
	var count func(n *yaml.Node) int
	count = func(n *yaml.Node) int {
		c := 1
		for _, k := range n.Content {
			c += count(k)
		}
		return c
	}
	total := 0
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			return total
		}
		total += count(&n)
	}
}
