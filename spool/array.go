package spool

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Job arrays: one submission with array: "1-100%10" is a hundred jobs,
// one per index, of which at most ten run at once. Init expands it when it
// queues the submission (Batch.QueueArray); the members are ordinary jobs
// with JIDs of their own, and array_job and array_index (ArrayJob,
// ArrayIndex) say which array and which index each is; the job sees them
// as MSCHED_ARRAY_JOB_ID and MSCHED_ARRAY_INDEX. The array's JID is its
// first member's, the claim's JID; the others are reserved in one
// allocation before any is written (ReserveArray), and recorded in the
// claim's name, so that init, judging a claim again after a crash, writes
// the members it had not written under the JIDs they were given and
// never a second copy of one.

// MaxArrayJobs bounds the members of an array: each is a job file that
// every daemon it passes reads, and the queue a policy plans; a larger
// sweep is several arrays, or one job that loops.
const MaxArrayJobs = 10000

// MaxArrayIndex bounds an index, as Slurm's MaxArraySize does.
const MaxArrayIndex = 1_000_000

// MaxArrayBytes bounds an array's job files together: its members times
// the submitted file's size. A 1 MiB job file times ten thousand would be
// 10 GB of spool written in one judgement.
const MaxArrayBytes = 64 << 20

// ArraySpec is a parsed array: field.
type ArraySpec struct {
	// Indexes, ascending, each once.
	Indexes []int
	// Limit is how many members may run at once; 0: no limit.
	Limit int
}

// ParseArray reads an array specification: a comma-separated list of
// indexes (5) and ranges (1-100, and 1-99:2 for every other one), then
// optionally %N, at most N of the members running at once: "1-100%10",
// "1,3,5-9", "0-30:10%2". Indexes are 0 to MaxArrayIndex, each at most
// once, at most MaxArrayJobs of them.
func ParseArray(s string) (ArraySpec, error) {
	var a ArraySpec
	q := Clip(s, maxQuoted)
	whole := true // the message quotes the item: not the whole again
	bad := func(format string, args ...any) (ArraySpec, error) {
		if whole {
			return ArraySpec{}, fmt.Errorf(format, args...)
		}
		return ArraySpec{}, fmt.Errorf("%q: %s", q, fmt.Sprintf(format, args...))
	}
	list, limit, hasLimit := strings.Cut(s, "%")
	whole = !hasLimit && !strings.Contains(list, ",")
	if hasLimit {
		n, err := strconv.Atoi(limit)
		if err != nil || !digitsOnly(limit) || n < 1 {
			whole = false
			return bad("after %% want how many members may run at once, a whole number ≥ 1, like 1-100%%10")
		}
		a.Limit = n
	}
	if list == "" {
		whole = false
		return bad("want indexes and ranges like 1-100 or 1,3,5-9")
	}
	count := 0
	type span struct{ from, to, step int }
	var spans []span
	for _, item := range strings.Split(list, ",") {
		num := func(t string) (int, bool) {
			n, err := strconv.Atoi(t)
			return n, err == nil && digitsOnly(t) && n <= MaxArrayIndex
		}
		r, stepText, hasStep := strings.Cut(item, ":")
		from, to, isRange := strings.Cut(r, "-")
		sp := span{step: 1}
		var ok bool
		if sp.from, ok = num(from); !ok {
			return bad("%q is not an index or a range (indexes are 0 to %d; a range is like 1-100)", Clip(item, maxQuoted), MaxArrayIndex)
		}
		sp.to = sp.from
		if isRange {
			if sp.to, ok = num(to); !ok || sp.to < sp.from {
				return bad("%q is not a range from a lower index to a higher one, 0 to %d", Clip(item, maxQuoted), MaxArrayIndex)
			}
		}
		if hasStep {
			if sp.step, ok = num(stepText); !ok || sp.step < 1 || !isRange {
				return bad("%q: a step goes after a range, like 1-99:2", Clip(item, maxQuoted))
			}
		}
		count += (sp.to-sp.from)/sp.step + 1
		if count > MaxArrayJobs {
			return bad("more than %d members; submit several arrays, or a job that loops", MaxArrayJobs)
		}
		spans = append(spans, sp)
	}
	for _, sp := range spans {
		for i := sp.from; i <= sp.to; i += sp.step {
			a.Indexes = append(a.Indexes, i)
		}
	}
	slices.Sort(a.Indexes)
	for i := 1; i < len(a.Indexes); i++ {
		if a.Indexes[i] == a.Indexes[i-1] {
			return bad("index %d is given twice", a.Indexes[i])
		}
	}
	return a, nil
}

// dependencyLimit bounds after: and afterok: together: a job waits for a
// few others; a workflow of thousands is an array, or a chain.
const dependencyLimit = 256

// validateArrayDeps checks array:, the members' array_job and array_index,
// and after: and afterok:.
func validateArrayDeps(j *Job, doc *yaml.Node) []Problem {
	var ps []Problem
	bad := func(field []string, format string, args ...any) {
		ps = append(ps, Problem{lineOf(doc, field...), strings.Join(field, "."), fmt.Sprintf(format, args...)})
	}
	if j.Array != "" || lookup(doc, "array") != nil {
		if _, err := ParseArray(j.Array); err != nil {
			bad([]string{"array"}, "%v", err)
		}
	}
	if j.ArrayJob != "" && (j.ArrayIndex == nil || j.Array == "") {
		bad([]string{"array_job"}, "array_job, array_index and array go together")
	}
	if j.ArrayJob != "" && !ValidJID(j.ArrayJob) {
		bad([]string{"array_job"}, "%q is not a job id like J000123", Clip(j.ArrayJob, maxQuoted))
	}
	if i := j.ArrayIndex; i != nil && (*i < 0 || *i > MaxArrayIndex) {
		bad([]string{"array_index"}, "must be 0 to %d, got %d", MaxArrayIndex, *i)
	}
	if n := len(j.After) + len(j.AfterOK); n > dependencyLimit {
		bad([]string{"after"}, "%d dependencies, over the limit of %d", n, dependencyLimit)
		return ps
	}
	for _, f := range []struct {
		key  string
		jids []string
	}{{"after", j.After}, {"afterok", j.AfterOK}} {
		_, seq := lookupKV(doc, f.key)
		if seq != nil && seq.Kind != yaml.SequenceNode {
			bad([]string{f.key}, "want a list of job ids, such as [J000010, J000011]")
			continue
		}
		for i, s := range f.jids {
			if _, err := ParseJID(s); err != nil {
				line := lineOf(doc, f.key)
				if seq != nil && i < len(seq.Content) {
					line = seq.Content[i].Line
				}
				ps = append(ps, Problem{line, fmt.Sprintf("%s[%d]", f.key, i), strings.TrimPrefix(err.Error(), "spool: ")})
			}
		}
	}
	return ps
}

// canonicalDeps writes j's dependencies as FormatJID does; they have
// passed validateArrayDeps.
func canonicalDeps(j *Job) {
	for _, l := range [][]string{j.After, j.AfterOK} {
		for i, s := range l {
			if c, err := ParseJID(s); err == nil {
				l[i] = c
			}
		}
	}
}

// Dependencies are j's after: and afterok: JIDs, canonical, each once
// (a JID in both is in afterOK only: the stricter holds).
func (j *Job) Dependencies() (after, afterOK []string) {
	ok := map[string]bool{}
	for _, s := range j.AfterOK {
		if c, err := ParseJID(s); err == nil && !ok[c] {
			ok[c] = true
			afterOK = append(afterOK, c)
		}
	}
	seen := map[string]bool{}
	for _, s := range j.After {
		if c, err := ParseJID(s); err == nil && !ok[c] && !seen[c] {
			seen[c] = true
			after = append(after, c)
		}
	}
	return after, afterOK
}

// arrayBytesProblem is the problem of an array whose job files would
// together be over MaxArrayBytes (size: the submitted file's), or nil;
// checked where the submitted bytes are known, by Claim.Job and
// CheckSubmission.
func arrayBytesProblem(j *Job, size int) *Problem {
	if j.Array == "" {
		return nil
	}
	a, err := ParseArray(j.Array)
	if err != nil {
		return nil // validate said so
	}
	if total := int64(len(a.Indexes)) * int64(size); total > MaxArrayBytes {
		return &Problem{Field: "array", Msg: fmt.Sprintf("%d members of a %d-byte job file are %.1f MiB of job files, over the limit of %s: make the job file smaller (its long lists in a file it reads), or the array",
			len(a.Indexes), size, float64(total)/(1<<20), humanBytes(MaxArrayBytes))}
	}
	return nil
}

// ReserveArray gives an array claim (its job has array:, of n members)
// the JIDs of its members: the claim's own for the first, and n-1 more
// allocated at once (NextJIDs: consecutive), recorded in the claim's name
// before any member is written, so that a claim judged again after a
// crash writes its members under the same JIDs (RecoverClaimsWith tells
// which are written already). A claim that has its members, or of one
// member, is left as it is. Init calls it; then Batch.QueueArray.
func (s *Spool) ReserveArray(c *Claim, n int) error {
	if err := s.mayWrite("reserve array "+c.JID, Submitted); err != nil {
		return err
	}
	switch {
	case len(c.Members) > 0:
		if len(c.Members) != n {
			return fmt.Errorf("spool: array %s: the claim holds %d members, the job file asks for %d", c.JID, len(c.Members), n)
		}
		return nil
	case n <= 1:
		c.Members = []string{c.JID}
		return nil
	case n > MaxArrayJobs:
		return fmt.Errorf("spool: array %s: %d members, over the limit of %d", c.JID, n, MaxArrayJobs)
	}
	jids, err := s.NextJIDs(n - 1)
	if err != nil {
		return err
	}
	_, arrived, _, ok := splitClaim(c.file)
	if !ok {
		return fmt.Errorf("spool: array %s: bad claim file %q", c.JID, c.file)
	}
	file := fmt.Sprintf("%s%s+%s-%s.%d.", claimPrefix, c.JID, jids[0], jids[len(jids)-1], arrived.UnixNano())
	file += shorten(c.Name, nameMax-len(file))
	if err := os.Rename(filepath.Join(s.tmp, c.file), filepath.Join(s.tmp, file)); err != nil {
		return fmt.Errorf("spool: array %s (%s to %s used up): %w", c.JID, jids[0], jids[len(jids)-1], err)
	}
	if err := syncDir(s.tmp); err != nil {
		return err
	}
	c.file = file
	c.Members = append([]string{c.JID}, jids...)
	return nil
}

// QueueArray queues the members of an array claim (ReserveArray gave it
// its Members) as batched moves from submitted to queued: each a copy of
// j (the claim's Job) under its member's JID with array_job (the first
// member's JID) and array_index, its history noting both; members that
// recovery found queued already are skipped. The claim is removed at the
// batch's Commit, as for any move from submitted, once all of them are
// durable. It returns the JIDs queued.
func (b *Batch) QueueArray(c *Claim, j *Job) ([]string, error) {
	a, err := ParseArray(j.Array)
	if err != nil {
		return nil, fmt.Errorf("spool: array %s: %w", c.JID, err)
	}
	if len(c.Members) != len(a.Indexes) {
		return nil, fmt.Errorf("spool: array %s: %d members reserved for %d indexes", c.JID, len(c.Members), len(a.Indexes))
	}
	var queued []string
	for k, idx := range a.Indexes {
		jid := c.Members[k]
		if c.done[jid] {
			continue
		}
		m := j.Clone()
		m.JID, m.ArrayJob, m.ArrayIndex = jid, c.Members[0], &idx
		m.state, m.file = Submitted, c.file
		if err := b.Move(m, Submitted, Queued, fmt.Sprintf("array %s, index %d", c.Members[0], idx)); err != nil {
			// The members written so far stay queued; the claim stays
			// too, so that recovery writes the rest under the JIDs
			// reserved for them (it skips the members it finds).
			b.keep(filepath.Join(b.s.tmp, c.file))
			return queued, err
		}
		queued = append(queued, jid)
	}
	return queued, nil
}

// ArrayLimit is the limit of an array: field (after %), 0 for none, read
// without expanding its indexes (sched asks it of every waiting member on
// every cycle). The field has passed ParseArray.
func ArrayLimit(spec string) int {
	_, limit, ok := strings.Cut(spec, "%")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(limit)
	if err != nil || n < 1 {
		return 0
	}
	return n
}
