package spool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"msched/atomicfile"
)

// Move moves job j from state from to state to. Only the owner of from
// calls it (Owner(from)); the move must be in Transitions. j is the job as
// read from from (Read, or Claim.Job/Claim.Rejection for submitted), with
// whatever the caller's state adds already filled in (schedule, run, reason,
// …); Move appends the history entry {to, now, note} and writes the result.
//
// Between daemon-owned directories the order is (see doc.go for the crash
// windows):
//
//  1. write the new content to tmp/, fsync it;
//  2. rename it over from/<JID> (no fsync of from/: see doc.go, M2): the
//     owner edits its own file, which now records the step it is about to
//     take;
//  3. rename from/<JID> to to/<JID>: the one instant at which the job
//     changes state; it is never in two directories and never in none;
//  4. fsync to/.
//
// From submitted the source is the claim in tmp/ (see Claim): the new content
// is written to tmp/, fsynced, renamed into to/, to/ fsynced, and only then is
// the claim removed.
//
// On success j's State is to. On error j is unchanged, and the job is still
// in from (with its old content when Move could restore it, else with the
// new content, which recovery completes: see Recover).
func (s *Spool) Move(j *Job, from, to State, note string) error {
	return s.move(j, from, to, note, nil)
}

// move is Move; with a batch it leaves the last fsync (and, from submitted,
// the claim's removal) to the batch's Commit.
func (s *Spool) move(j *Job, from, to State, note string, b *Batch) error {
	if err := Legal(from, to); err != nil {
		return fmt.Errorf("%w (job %s)", err, j.JID)
	}
	if err := s.mayWrite("move "+j.JID, from); err != nil {
		return err
	}
	if j.state != from {
		return fmt.Errorf("spool: move %s %s → %s: the job was read from %q", j.JID, from, to, j.state)
	}
	if !ValidJID(j.JID) {
		return fmt.Errorf("spool: move %s → %s: bad job id %q", from, to, j.JID)
	}
	src := filepath.Join(s.Dir(from), j.file)
	if from == Submitted {
		src = filepath.Join(s.tmp, j.file)
	}
	if _, err := os.Lstat(src); os.IsNotExist(err) {
		return fmt.Errorf("spool: move %s %s → %s: not in %s: %w", j.JID, from, to, from, ErrNotFound)
	} else if err != nil {
		return fmt.Errorf("spool: move: %w", err)
	}
	if isWrapper(j) && to != Rejected {
		return fmt.Errorf("spool: move %s %s → %s: a rejected submission can only go to rejected", j.JID, from, to)
	}
	dst := filepath.Join(s.Dir(to), j.JID)
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("spool: move %s %s → %s: already in %s", j.JID, from, to, to)
	}

	old := j.History
	j.History = append(j.History[:len(j.History):len(j.History)], Event{State: to, At: s.now(), Note: note})
	data, err := s.encode(j)
	if err != nil {
		j.History = old
		return err
	}
	if from == Submitted {
		if err := s.write(s.Dir(to), j.JID, data, b == nil); err != nil {
			j.History = old
			return fmt.Errorf("spool: move %s %s → %s: %w", j.JID, from, to, err)
		}
		if b != nil {
			b.add(s.Dir(to), src)
			j.state, j.file = to, j.JID
			return nil
		}
		if err := s.discardClaim(src); err != nil {
			return fmt.Errorf("spool: move %s: remove claim: %w", j.JID, err)
		}
		j.state, j.file = to, j.JID
		return syncDir(s.tmp)
	}

	// Step 2 without a directory fsync: step 4's fsync of to/ makes the
	// rename durable with the file itself (see doc.go, M2).
	if err := s.write(s.Dir(from), j.file, data, false); err != nil {
		j.History = old
		return fmt.Errorf("spool: move %s %s → %s: %w", j.JID, from, to, err)
	}
	if err := os.Rename(src, dst); err != nil {
		// Put the old content back so the file does not claim a step it
		// never took; if even that fails, Recover completes the move.
		j.History = old
		if back, merr := j.Marshal(); merr == nil {
			_ = s.write(s.Dir(from), j.file, back, true)
		}
		return fmt.Errorf("spool: move %s %s → %s: %w", j.JID, from, to, err)
	}
	j.state, j.file = to, j.JID
	// from/ is not fsynced again: on a journalling file system the removal
	// of from/J is in the same commit as its arrival in to/; elsewhere a
	// crash may keep both names, which Recover(from) resolves.
	if b != nil {
		b.add(s.Dir(to), "")
		return nil
	}
	return syncDir(s.Dir(to))
}

// A Batch makes a group of moves and removals durable together, sharing
// their directory fsyncs: Batch.Move does Move's steps up to the rename
// into to/ (M1–M3), Batch.Remove removes, and Commit then fsyncs each
// directory they touched once (instead of once a job) and only after that
// removes the claims of moves from submitted, fsyncing tmp/ once. Until
// Commit a batched move is visible but not durable: a crash may undo it
// (the job is then where it was, or completed by Recover), never lose the
// job. A daemon that moves a burst of jobs at once commits them together.
// A Batch is safe for concurrent use; Commit it once, after the moves.
type Batch struct {
	s      *Spool
	mu     sync.Mutex
	dirs   map[string]bool
	claims []string
}

// Batch starts a batch of this view's moves and removals.
func (s *Spool) Batch() *Batch { return &Batch{s: s, dirs: map[string]bool{}} }

// Move is Spool.Move, made durable by Commit.
func (b *Batch) Move(j *Job, from, to State, note string) error {
	return b.s.move(j, from, to, note, b)
}

// WriteFile is Spool.WriteFile, made durable by Commit.
func (b *Batch) WriteFile(dir, name string, data []byte) error {
	if err := b.s.write(dir, name, data, false); err != nil {
		return err
	}
	b.add(dir, "")
	return nil
}

// WriteFileFor is WriteFile for a file only uid may read, owned by uid with
// mode PrivatePerm (the reaper's reports when the daemons run as root).
func (b *Batch) WriteFileFor(dir, name string, data []byte, uid int) error {
	if err := b.s.writeOwned(dir, name, data, uid, false); err != nil {
		return err
	}
	b.add(dir, "")
	return nil
}

// Remove is Spool.Remove, made durable by Commit.
func (b *Batch) Remove(j *Job) error { return b.s.remove(j, b) }

func (b *Batch) add(dir, claim string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dirs[dir] = true
	if claim != "" {
		b.claims = append(b.claims, claim)
	}
}

// keep takes claim back out of the claims Commit removes: a move from it
// that is only part of what the claim holds (an array's member, when a
// later member failed) must leave it for recovery.
func (b *Batch) keep(claim string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.claims = slices.DeleteFunc(b.claims, func(c string) bool { return c == claim })
}

// Commit fsyncs what the batch changed, then removes its claims.
func (b *Batch) Commit() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	for d := range b.dirs {
		if err := syncDir(d); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 && len(b.claims) > 0 {
		// Only now are the jobs durably in their new state: a claim
		// removed before would lose its job to a crash.
		for _, c := range b.claims {
			if err := b.s.discardClaim(c); err != nil && !os.IsNotExist(err) {
				errs = append(errs, fmt.Errorf("spool: remove claim: %w", err))
			}
		}
		errs = append(errs, syncDir(b.s.tmp))
	}
	b.dirs, b.claims = map[string]bool{}, nil
	return errors.Join(errs...)
}

// encode marshals j after checking it as Parse would check the file: a
// daemon must never write a job file that it, or the next owner, cannot
// read (a bad JID, a history with an unknown state, hosts.count 0 set by
// code). Parsing the bytes back would cost as much again as the encoding
// (yaml.v3's Node.Encode does exactly that), so the checks run on the job
// and a skeleton of the YAML tree it marshals to (the keys that are
// written, which is what validate asks about); TestEncode_ParsesBack holds
// this to what a parse of the output says.
func (s *Spool) encode(j *Job) ([]byte, error) {
	if ps := validate(j, skeleton(j)); len(ps) > 0 {
		return nil, fmt.Errorf("spool: refusing to write job %s: %w", j.JID, &ParseError{File: j.JID, Problems: ps})
	}
	return j.Marshal()
}

// skeleton is the part of j's YAML tree that validate looks at: which of
// the sections it checks the presence of are written (omitempty drops nil
// sections and zero counts), their integer keys as !!int.
func skeleton(j *Job) *yaml.Node {
	doc := &yaml.Node{Kind: yaml.MappingNode}
	add := func(m *yaml.Node, key string) *yaml.Node {
		v := &yaml.Node{Kind: yaml.MappingNode}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
		return v
	}
	if h := j.Hosts; h != nil {
		hn := add(doc, "hosts")
		for _, f := range []struct {
			key string
			v   int
		}{{"count", h.Count}, {"min", h.Min}, {"max", h.Max}} {
			if f.v != 0 {
				v := add(hn, f.key)
				v.Kind, v.Tag, v.Value = yaml.ScalarNode, "!!int", fmt.Sprint(f.v)
			}
		}
		for _, f := range []struct{ key, v string }{{"arch", h.Arch}, {"cluster", h.Cluster}} {
			if f.v != "" {
				v := add(hn, f.key)
				v.Kind, v.Value = yaml.ScalarNode, f.v
			}
		}
	}
	if j.Launch != "" {
		add(doc, "launch").Kind = yaml.ScalarNode
	}
	if j.RanksPerHost != 0 {
		v := add(doc, "ranks_per_host")
		v.Kind, v.Tag, v.Value = yaml.ScalarNode, "!!int", fmt.Sprint(j.RanksPerHost)
	}
	if j.Model != nil {
		add(doc, "model")
	}
	return doc
}

// Update rewrites j in place in its current state, atomically: the owner
// recording something that does not change the state (run.pid once the
// process exists, cancel_requested, …).
func (s *Spool) Update(j *Job) error {
	if j.state == "" || j.state == Submitted {
		return fmt.Errorf("spool: update %s: not in a daemon-owned state (%q)", j.JID, j.state)
	}
	if err := s.mayWrite("update "+j.JID, j.state); err != nil {
		return err
	}
	p := filepath.Join(s.Dir(j.state), j.file)
	if _, err := os.Lstat(p); os.IsNotExist(err) {
		return fmt.Errorf("spool: update %s: not in %s: %w", j.JID, j.state, ErrNotFound)
	}
	data, err := s.encode(j)
	if err != nil {
		return err
	}
	if err := s.write(s.Dir(j.state), j.file, data, true); err != nil {
		return fmt.Errorf("spool: update %s: %w", j.JID, err)
	}
	return nil
}

// Remove deletes a job file from finished/ or rejected/ (Removable): the
// reaper, after reporting. Any other state is refused: a job leaves the
// others only by Move.
func (s *Spool) Remove(j *Job) error { return s.remove(j, nil) }

func (s *Spool) remove(j *Job, b *Batch) error {
	if !removable(j.state) {
		return fmt.Errorf("spool: remove %s: only finished and rejected jobs are removed, not %q ones", j.JID, j.state)
	}
	if err := s.mayWrite("remove "+j.JID, j.state); err != nil {
		return err
	}
	if err := s.discard(filepath.Join(s.Dir(j.state), j.file)); err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("spool: remove %s: %w", j.JID, ErrNotFound)
		}
		return fmt.Errorf("spool: remove: %w", err)
	}
	if b != nil {
		b.add(s.Dir(j.state), "")
		return nil
	}
	return syncDir(s.Dir(j.state))
}

// Recovered says what Recover did with one file.
type Recovered struct {
	JID    string
	Action string // "completed", "removed-stale", "unreadable", "conflict"
	Detail string
}

// Recover is the part of an owner's start-up recovery that the spool can do
// for it, for one of its states (not submitted: see RecoverClaims). It looks
// for job files whose last history entry names another state: a Move that a
// crash interrupted between its steps 2 and 4.
//
//   - If the job is also in another state with at least as long a history,
//     the rename did happen (a file system that does not make rename atomic
//     across a crash left both names): this copy is stale and is removed.
//   - Otherwise the move is completed: renamed into the state its history names.
//
// Files that do not parse are reported ("unreadable") and left alone for the
// owner to reject; a history naming a state that is not a legal next step is
// reported ("conflict") and left alone. Daemon-specific recovery (sched
// returning scheduling/ to queued/, run checking running/ against live
// processes) comes after, in the daemon.
func (s *Spool) Recover(st State) ([]Recovered, error) {
	if st == Submitted || !st.Valid() {
		return nil, fmt.Errorf("spool: recover %q: not a daemon-owned state", st)
	}
	if err := s.mayWrite("recover", st); err != nil {
		return nil, err
	}
	es, err := s.List(st)
	if err != nil {
		return nil, err
	}
	var out []Recovered
	for _, e := range es {
		j, err := s.Read(st, e.Name)
		if errors.Is(err, ErrNotFound) {
			continue
		} else if err != nil {
			out = append(out, Recovered{e.Name, "unreadable", err.Error()})
			continue
		}
		if len(j.History) == 0 {
			continue // no move recorded, none to complete: its owner judges it
		}
		to := j.History[len(j.History)-1].State
		if to == st {
			// Normally the job's one copy; after a crash on a file system
			// that does not keep renames in order, maybe an old copy of a
			// job that has moved on (M2 lost, M3 kept).
			if other, ok := s.newerCopy(j, st, 1); ok {
				if err := os.Remove(filepath.Join(s.Dir(st), j.file)); err != nil && !os.IsNotExist(err) {
					return out, fmt.Errorf("spool: recover: %w", err)
				}
				out = append(out, Recovered{j.JID, "removed-stale", fmt.Sprintf("old copy in %s; the job is in %s", st, other)})
			}
			continue
		}
		if Legal(st, to) != nil {
			out = append(out, Recovered{j.JID, "conflict", fmt.Sprintf("in %s, history ends in %s", st, to)})
			continue
		}
		if other, ok := s.newerCopy(j, st, 0); ok {
			if err := os.Remove(filepath.Join(s.Dir(st), j.file)); err != nil && !os.IsNotExist(err) {
				return out, fmt.Errorf("spool: recover: %w", err)
			}
			out = append(out, Recovered{j.JID, "removed-stale", fmt.Sprintf("stale copy in %s; the job is in %s", st, other)})
			continue
		}
		if _, err := os.Lstat(filepath.Join(s.Dir(to), j.JID)); err == nil {
			out = append(out, Recovered{j.JID, "conflict", fmt.Sprintf("in %s and %s with a longer history here", st, to)})
			continue
		}
		if err := os.Rename(filepath.Join(s.Dir(st), j.file), filepath.Join(s.Dir(to), j.JID)); err != nil {
			return out, fmt.Errorf("spool: recover %s: %w", j.JID, err)
		}
		if err := syncDir(s.Dir(to)); err != nil {
			return out, err
		}
		out = append(out, Recovered{j.JID, "completed", fmt.Sprintf("%s → %s", st, to)})
	}
	return out, syncDir(s.Dir(st))
}

// RecoverExited moves the jobs that a spool written by an older msched
// holds in exited/ (legacyExited: sched's finished → exited, which the
// reaper reported from) to finished/, where the reaper now reports them,
// and removes exited/; it returns the JIDs moved. Only the reaper calls
// it, at start: a job left in exited/ would otherwise never be reported. A
// copy of the job still in finished/ (a crash on a file system that does
// not make rename atomic) is older than the one in exited/, which replaces
// it. Without exited/ it does nothing.
func (s *Spool) RecoverExited() ([]string, error) {
	if err := s.mayWrite("recover exited", Finished); err != nil {
		return nil, err
	}
	old := filepath.Join(s.root, string(legacyExited))
	des, err := os.ReadDir(old)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("spool: recover exited: %w", err)
	}
	var moved []string
	for _, d := range des {
		if !plainName(d.Name()) || !d.Type().IsRegular() {
			continue // a staging file of a write that never completed
		}
		if err := os.Rename(filepath.Join(old, d.Name()), filepath.Join(s.Dir(Finished), d.Name())); err != nil {
			return moved, fmt.Errorf("spool: recover exited: %w", err)
		}
		moved = append(moved, d.Name())
	}
	if err := syncDir(s.Dir(Finished)); err != nil {
		return moved, err
	}
	if err := os.RemoveAll(old); err != nil {
		return moved, fmt.Errorf("spool: recover exited: %w", err)
	}
	return moved, syncDir(s.root)
}

// newerCopy looks for j in the other states with a history at least more
// entries longer.
func (s *Spool) newerCopy(j *Job, except State, more int) (State, bool) {
	for _, t := range States[1:] {
		if t == except {
			continue
		}
		o, err := s.Read(t, j.JID)
		if err == nil && len(o.History) >= len(j.History)+more {
			return t, true
		}
	}
	return "", false
}

// CleanTmp removes staging files older than age: files in tmp/ other than
// claims, files in the daemons' staging directories tmp/<daemon>/, and
// dot-files in the other directories, left by writers that
// crashed between creating and renaming them. The reaper calls it; age must
// exceed the longest write (a minute is plenty) so live writes are spared.
func (s *Spool) CleanTmp(age time.Duration) (int, error) {
	cutoff := s.now().Add(-age)
	n := 0
	dirs := layout()
	for _, d := range stagingDaemons {
		dirs = append(dirs, filepath.Join(DirTmp, string(d)))
	}
	for _, d := range dirs {
		es, err := os.ReadDir(filepath.Join(s.root, d))
		if errors.Is(err, fs.ErrNotExist) && filepath.Dir(d) == DirTmp {
			continue // a daemon's staging directory, made at its start (As)
		} else if err != nil {
			return n, fmt.Errorf("spool: clean: %w", err)
		}
		for _, e := range es {
			name := e.Name()
			// In tmp/<daemon>/ all is staging but the daemon's pool of
			// recycled files (bounded, and adopted by its next start).
			staging := name[0] == '.' || filepath.Dir(d) == DirTmp && !strings.HasPrefix(name, atomicfile.PoolPrefix)
			if d == DirTmp {
				_, _, _, claim := splitClaim(name)
				staging = !claim
			}
			if !staging || !e.Type().IsRegular() {
				continue
			}
			fi, err := e.Info()
			if err != nil || fi.ModTime().After(cutoff) {
				continue
			}
			if os.Remove(filepath.Join(s.root, d, name)) == nil {
				n++
			}
		}
	}
	return n, nil
}
