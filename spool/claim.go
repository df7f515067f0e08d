package spool

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"
)

// submitted/ is the one directory that anyone may write, so init never
// edits a file there. It first claims the file: allocates a JID and renames
// the file out of submitted/ into tmp/ under a name that records the JID,
// the arrival time and the submitter's file name. From that instant the
// submitter can no longer change the bytes init is about to judge, a file
// dropped later under the same name is a new submission, and a crash leaves
// the claim where init's recovery finds it (RecoverClaims) under the same JID.

const claimPrefix = "claim."

// Claim is a submission taken from submitted/ by init.
type Claim struct {
	JID       string
	Name      string    // the file's name in submitted/
	Data      []byte    // the submitted bytes, verbatim
	User      string    // the submitter: the file owner's login name
	ArrivedAt time.Time // when the file last changed in submitted/ (ctime), UTC

	file string // name in tmp/
}

// Submit adds a job file to submitted/ atomically (written as a dot-file,
// fsynced, then linked into place), for `msched submit`. The name is made
// unique by a numeric suffix if needed; the chosen name is returned.
func (s *Spool) Submit(name string, data []byte) (string, error) {
	base := filepath.Base(name)
	if base == "." || base == "/" || base[0] == '.' {
		base = "job" + strings.TrimLeft(base, "./")
	}
	dir := s.Dir(Submitted)
	p, err := NewPendingFile("", dir, base)
	if err != nil {
		return "", err
	}
	defer p.Cleanup()
	if _, err := p.Write(data); err != nil {
		return "", fmt.Errorf("spool: submit: %w", err)
	}
	if err := p.Chmod(FilePerm); err != nil {
		return "", fmt.Errorf("spool: submit: %w", err)
	}
	if err := p.Sync(); err != nil {
		return "", fmt.Errorf("spool: submit: %w", err)
	}
	// link(2) refuses to replace an existing name, which rename(2) would not.
	for i := 1; ; i++ {
		final := base
		if i > 1 {
			final = fmt.Sprintf("%s-%d", base, i)
		}
		err := os.Link(p.File.Name(), filepath.Join(dir, final))
		if errors.Is(err, os.ErrExist) {
			continue
		} else if err != nil {
			return "", fmt.Errorf("spool: submit: %w", err)
		}
		return final, syncDir(dir) // Cleanup removes the dot-file
	}
}

// Claim takes submitted/<name> for init (see above). The error wraps
// ErrNotFound if the file is gone. A JID is burned if the claim fails after
// allocation; JIDs are unique, not dense.
func (s *Spool) Claim(name string) (*Claim, error) {
	cs, errs, err := s.ClaimAll([]string{name})
	if err != nil {
		return nil, err
	}
	if err := errs[name]; err != nil {
		return nil, err
	}
	return cs[0], nil
}

// ClaimAll claims the named submissions in the given order (init passes
// them in arrival order, so JIDs follow arrival), as Claim does one, with
// one JID allocation and one fsync of tmp/ and of submitted/ for the whole
// batch: a burst of submissions shares its fsyncs. Claims are returned in
// order; a name that could not be claimed is left out and its error (ErrNotFound
// wrapped if it is gone) is in errs. err is for the batch as a whole: no
// JIDs, or the directories could not be synced (then no claim is returned;
// the renamed files are claims that RecoverClaims finds at the next start).
func (s *Spool) ClaimAll(names []string) (claims []*Claim, errs map[string]error, err error) {
	if err := s.mayWrite("claim", Submitted); err != nil {
		return nil, nil, err
	}
	errs = map[string]error{}
	type found struct {
		name, src string
		arrived   time.Time
	}
	var ok []found
	for _, name := range names {
		if !plainName(name) {
			errs[name] = fmt.Errorf("spool: claim: bad name %q", name)
			continue
		}
		src := filepath.Join(s.Dir(Submitted), name)
		fi, err := os.Lstat(src)
		if os.IsNotExist(err) {
			errs[name] = fmt.Errorf("spool: claim %s: %w", name, ErrNotFound)
			continue
		} else if err != nil {
			errs[name] = fmt.Errorf("spool: claim: %w", err)
			continue
		}
		if !fi.Mode().IsRegular() {
			errs[name] = fmt.Errorf("spool: claim %s: not a regular file", name)
			continue
		}
		arrived := fi.ModTime()
		if st, isUnix := fi.Sys().(*syscall.Stat_t); isUnix {
			arrived = time.Unix(st.Ctim.Unix())
		}
		ok = append(ok, found{name, src, arrived})
	}
	if len(ok) == 0 {
		return nil, errs, nil
	}
	jids, err := s.NextJIDs(len(ok))
	if err != nil {
		return nil, errs, err
	}
	var files []string
	for i, f := range ok {
		file := fmt.Sprintf("%s%s.%d.%s", claimPrefix, jids[i], f.arrived.UnixNano(), f.name)
		if err := os.Rename(f.src, filepath.Join(s.tmp, file)); os.IsNotExist(err) {
			errs[f.name] = fmt.Errorf("spool: claim %s: %w", f.name, ErrNotFound)
			continue
		} else if err != nil {
			errs[f.name] = fmt.Errorf("spool: claim: %w", err)
			continue
		}
		files = append(files, file)
	}
	if len(files) == 0 {
		return nil, errs, nil
	}
	if err := syncDir(s.tmp); err != nil {
		return nil, errs, err
	}
	if err := syncDir(s.Dir(Submitted)); err != nil {
		return nil, errs, err
	}
	for _, file := range files {
		c, err := s.loadClaim(file)
		if err != nil {
			// The claim is in tmp/; RecoverClaims judges it at the next start.
			_, _, name, _ := splitClaim(file)
			errs[name] = err
			continue
		}
		claims = append(claims, c)
	}
	return claims, errs, nil
}

// RecoverClaims is init's recovery at start. A claim whose JID is already in
// a state directory was moved before a crash and only its removal was lost:
// it is removed. The others are returned, to be judged again under the JIDs
// they already have.
func (s *Spool) RecoverClaims() ([]*Claim, error) {
	if err := s.mayWrite("recover claims", Submitted); err != nil {
		return nil, err
	}
	names, err := s.claimFiles()
	if err != nil {
		return nil, err
	}
	var out []*Claim
	for _, f := range names {
		jid, _, _, _ := splitClaim(f)
		if s.inAState(jid) {
			if err := os.Remove(filepath.Join(s.tmp, f)); err != nil && !os.IsNotExist(err) {
				return nil, fmt.Errorf("spool: recover claims: %w", err)
			}
			continue
		}
		c, err := s.loadClaim(f)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, syncDir(s.tmp)
}

// Job parses the claimed bytes as a submission (strictly; daemon sections
// are refused) and fills in what init knows: JID, user, submitted_at and the
// first history entry. The job is then in state Submitted, ready for
// Move(j, Submitted, Queued, …) or Move(j, Submitted, Rejected, …).
func (c *Claim) Job() (*Job, error) {
	j, err := parseSubmission(c.Name, c.Data)
	if err != nil {
		return nil, err
	}
	c.stamp(j)
	return j, nil
}

// Rejection is the wrapper job file for a submission init rejects: it keeps
// the submitted bytes verbatim in `original`, the reason in `reason`, and
// whatever name and notify address can be salvaged from the bytes, so the
// reaper can tell the user why. Move it with Move(j, Submitted, Rejected, …).
func (c *Claim) Rejection(reason string) *Job {
	j := &Job{Reason: reason, Original: string(c.Data), Name: c.Name}
	var loose map[string]any
	if yaml.Unmarshal(c.Data, &loose) == nil {
		if v, ok := loose["name"].(string); ok && v != "" {
			j.Name = v
		}
		if v, ok := loose["notify"].(string); ok {
			j.Notify = v
		}
	}
	c.stamp(j)
	return j
}

func (c *Claim) stamp(j *Job) {
	j.JID, j.User, j.SubmittedAt = c.JID, c.User, c.ArrivedAt
	j.History = []Event{{State: Submitted, At: c.ArrivedAt, Note: "as " + c.Name}}
	j.state, j.file = Submitted, c.file
}

// inAState reports whether a file named jid is in any daemon-owned state.
func (s *Spool) inAState(jid string) bool {
	for _, st := range States[1:] {
		if _, err := os.Lstat(filepath.Join(s.Dir(st), jid)); err == nil {
			return true
		}
	}
	return false
}

func (s *Spool) claimFiles() ([]string, error) {
	es, err := os.ReadDir(s.tmp)
	if err != nil {
		return nil, fmt.Errorf("spool: claims: %w", err)
	}
	var out []string
	for _, e := range es {
		if _, _, _, ok := splitClaim(e.Name()); ok {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func (s *Spool) claimNames() ([]string, error) {
	fs, err := s.claimFiles()
	for i, f := range fs {
		fs[i], _, _, _ = splitClaim(f)
	}
	return fs, err
}

// openClaim finds the claim holding jid.
func (s *Spool) openClaim(jid string) (*Claim, error) {
	fs, err := s.claimFiles()
	if err != nil {
		return nil, err
	}
	for _, f := range fs {
		if strings.HasPrefix(f, claimPrefix+jid+".") {
			return s.loadClaim(f)
		}
	}
	return nil, fmt.Errorf("spool: claim %s: %w", jid, ErrNotFound)
}

// splitClaim parses "claim.<JID>.<arrival ns>.<name>".
func splitClaim(f string) (jid string, arrived time.Time, name string, ok bool) {
	rest, ok := strings.CutPrefix(f, claimPrefix)
	if !ok {
		return "", time.Time{}, "", false
	}
	parts := strings.SplitN(rest, ".", 3)
	if len(parts) != 3 || !ValidJID(parts[0]) || parts[2] == "" {
		return "", time.Time{}, "", false
	}
	ns, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return "", time.Time{}, "", false
	}
	return parts[0], time.Unix(0, ns).UTC(), parts[2], true
}

func (s *Spool) loadClaim(file string) (*Claim, error) {
	jid, arrived, name, ok := splitClaim(file)
	if !ok {
		return nil, fmt.Errorf("spool: claim: bad claim file %q", file)
	}
	p := filepath.Join(s.tmp, file)
	fi, err := os.Lstat(p)
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("spool: claim %s: %w", jid, ErrNotFound)
	} else if err != nil {
		return nil, fmt.Errorf("spool: claim: %w", err)
	}
	data, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("spool: claim %s: %w", jid, ErrNotFound)
	} else if err != nil {
		return nil, fmt.Errorf("spool: claim: %w", err)
	}
	return &Claim{JID: jid, Name: name, Data: data, User: fileOwner(fi), ArrivedAt: arrived, file: file}, nil
}

// fileOwner names the submitter from the file's owner uid. When the file is
// owned by the daemon's own uid (single-user setups, `msched up`), $USER is
// the better name if set; an unknown uid is shown as "uid1234".
func fileOwner(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return os.Getenv("USER")
	}
	uid := strconv.FormatUint(uint64(st.Uid), 10)
	if int(st.Uid) == os.Getuid() {
		if u := os.Getenv("USER"); u != "" {
			return u
		}
	}
	if u, err := user.LookupId(uid); err == nil {
		return u.Username
	}
	return "uid" + uid
}
