package spool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

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
	JID  string
	Name string // the file's name in submitted/ (cut to fit a claim's name: shorten)
	Data []byte // the submitted bytes, verbatim; nil when Refused (see there)
	// User and UID are the submitter: the owner of the file init read (its
	// fstat), or of the entry init could not read (its lstat), and that
	// owner's login name ("uid1234" when it has none).
	User      string
	UID       int
	ArrivedAt time.Time // when the file last changed in submitted/ (ctime), UTC
	// Refused says why the claimed entry is no submission init may judge: a
	// symbolic link, not a regular file, unreadable, larger than
	// MaxJobFile, or another user's file when the daemons run as an
	// ordinary user. "" when Data holds the file. A refused claim is
	// rejected with this reason (Job's error); of a file too large Data
	// keeps its first few KiB for the report, of the others nothing.
	Refused string
	// Members are the JIDs of an array submission's jobs once init has
	// reserved them (ReserveArray): JID first, then the others; nil
	// before, and for any other submission.
	Members []string

	file string          // name in tmp/
	done map[string]bool // of Members, those recovery found queued already
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
// order; what was renamed but is no file init may read (a race can swap
// in a link or a FIFO after the check) comes back Refused, to be rejected;
// a name that could not be claimed is left out and its error (ErrNotFound
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
		// Anything else than a regular file is claimed too (rename moves a
		// symbolic link itself, never its target) and then refused by
		// loadClaim with its reason, so that whoever put it there is told,
		// rather than left in submitted/ for ever.
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
		file := fmt.Sprintf("%s%s.%d.", claimPrefix, jids[i], f.arrived.UnixNano())
		file += shorten(f.name, nameMax-len(file))
		if err := os.Rename(f.src, filepath.Join(s.tmp, file)); os.IsNotExist(err) {
			errs[f.name] = fmt.Errorf("spool: claim %s: %w", f.name, ErrNotFound)
			continue
		} else if err != nil {
			// The JID is burned: say which, so that a gap in the JIDs
			// can be traced to the failure that made it.
			errs[f.name] = fmt.Errorf("spool: claim (%s used up): %w", jids[i], err)
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

// RecoverClaims is RecoverClaimsWith without a record of reaped jobs: a
// claim whose job was moved on and has since left the system is judged
// again. Only for spools where no job has been reaped (tests, tools); init
// uses RecoverClaimsWith.
func (s *Spool) RecoverClaims() ([]*Claim, error) {
	claims, _, err := s.RecoverClaimsWith(context.Background(), nil)
	return claims, err
}

// Reaped says which of jids belong to jobs that have left the system
// (reported and removed by the reaper). The spool keeps no such record;
// the daemons' accounting log does (daemons supply this function).
type Reaped func(ctx context.Context, jids []string) (map[string]bool, error)

// RecoverClaimsWith is init's recovery at start. A claim outlives its job's
// move when init dies between the move and the claim's removal (a Batch
// removes its claims only at Commit): its job is then in a state directory,
// or, if it has run and been reaped meanwhile, in none, and reaped says
// so. Such a claim is removed, never judged again: its JID was given to
// a job already, and judging it again would run that job a second time
// under the same JID (issue 13). Its JID is returned in done. The other
// claims are returned, to be judged again under the JIDs they already
// have; one that cannot be read comes back Refused, to be rejected, so
// that no claim can stop init from starting (a claim is in tmp/ because a
// user's file was renamed there, and the user chose what it is).
//
// A claim whose JID is in no state and that reaped cannot vouch for (it
// failed) is neither judged nor removed: it stays for the next call. err
// joins that, the claims that could not be removed and a failure of tmp/
// itself; the claims returned are all the others, whatever err says.
// With reaped nil every claim whose JID is in no state is judged.
func (s *Spool) RecoverClaimsWith(ctx context.Context, reaped Reaped) (claims []*Claim, done []string, err error) {
	if err := s.mayWrite("recover claims", Submitted); err != nil {
		return nil, nil, err
	}
	files, err := s.claimFiles()
	if err != nil {
		return nil, nil, err
	}
	var errs []error
	remove := func(f string) {
		if err := removeClaim(filepath.Join(s.tmp, f)); err != nil && !os.IsNotExist(err) {
			errs = append(errs, fmt.Errorf("spool: recover claims: %w", err))
		}
	}
	// A claim's jobs: its JID, and an array's reserved members. Each is
	// done once it is in a state, or reaped; a claim all of whose jobs
	// are done has served.
	type claimed struct {
		file string
		jids []string
		done map[string]bool
	}
	var loose []claimed // claims with a job in no state
	for _, f := range files {
		c := claimed{file: f, jids: claimJIDs(f), done: map[string]bool{}}
		for _, jid := range c.jids {
			if s.inAState(jid) {
				c.done[jid] = true
			}
		}
		if len(c.done) == len(c.jids) {
			remove(f)
			continue
		}
		loose = append(loose, c)
	}
	if reaped != nil && len(loose) > 0 {
		// Asked after every state was looked at: a job that leaves its
		// last state (finished/ or rejected/) is in the record first.
		var jids []string
		for _, c := range loose {
			for _, jid := range c.jids {
				if !c.done[jid] {
					jids = append(jids, jid)
				}
			}
		}
		fin, err := reaped(ctx, jids)
		if err != nil {
			return nil, nil, errors.Join(fmt.Errorf("spool: recover claims: cannot tell whether %d claimed jobs have finished; their claims are left for the next start: %w", len(loose), err), syncDir(s.tmp))
		}
		rest := loose[:0]
		for _, c := range loose {
			for _, jid := range c.jids {
				if fin[jid] {
					c.done[jid] = true
				}
			}
			if len(c.done) == len(c.jids) {
				remove(c.file)
				done = append(done, c.jids[0])
				continue
			}
			rest = append(rest, c)
		}
		loose = rest
	}
	for _, lc := range loose {
		c, err := s.loadClaim(lc.file)
		if errors.Is(err, ErrNotFound) {
			continue
		} else if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(c.Members) > 0 {
			c.done = lc.done // the members to write are the others
		}
		claims = append(claims, c)
	}
	return claims, done, errors.Join(append(errs, syncDir(s.tmp))...)
}

// Job parses the claimed bytes as a submission (strictly; daemon sections
// are refused) and fills in what init knows: JID, user, uid, submitted_at
// and the first history entry. The job is then in state Submitted, ready
// for Move(j, Submitted, Queued, …) or Move(j, Submitted, Rejected, …). A
// Refused claim is a *ParseError with the refusal as its one problem.
func (c *Claim) Job() (*Job, error) {
	if c.Refused != "" {
		return nil, &ParseError{File: c.Name, Problems: []Problem{{Msg: c.Refused}}}
	}
	j, err := ParseSubmission(c.Name, c.Data)
	if err != nil {
		return nil, err
	}
	if p := arrayBytesProblem(j, len(c.Data)); p != nil {
		return nil, &ParseError{File: c.Name, Problems: []Problem{*p}}
	}
	c.stamp(j)
	return j, nil
}

// Rejection is the wrapper job file for a submission init rejects: it keeps
// the submitted bytes verbatim in `original` (what Data holds: nothing of a
// refused claim but the start of one too large), the reason in `reason`,
// and whatever name and notify address can be salvaged from the bytes, so
// the reaper can tell the user why. Move it with Move(j, Submitted,
// Rejected, …).
func (c *Claim) Rejection(reason string) *Job {
	j := &Job{Reason: reason, Original: string(c.Data), Name: c.Name}
	if c.Refused == "" {
		if v := salvage(c.Data, "name"); v != "" {
			j.Name = v
		}
		j.Notify = salvage(c.Data, "notify")
	}
	c.stamp(j)
	return j
}

// salvage returns the string value of the top-level field key of a
// rejected submission, or "". The bytes are a user's and were rejected:
// they are only parsed (never decoded into Go values, which is where
// yaml.v3 panics and aliases multiply), within the same bound on items as
// a submission, and a panic of the parser is caught all the same. A value
// longer than a field could be is none.
func salvage(data []byte, key string) (v string) {
	if separators(data) > maxSeparators {
		return ""
	}
	defer func() {
		if recover() != nil {
			v = ""
		}
	}()
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return ""
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, val := doc.Content[i], doc.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == key && val.Kind == yaml.ScalarNode && val.Tag == "!!str" && len(val.Value) <= maxSalvaged {
			return val.Value
		}
	}
	return ""
}

// maxSalvaged bounds a name or notify address taken from a rejected file.
const maxSalvaged = 1024

func (c *Claim) stamp(j *Job) {
	uid := c.UID
	j.JID, j.User, j.UID, j.SubmittedAt = c.JID, c.User, &uid, c.ArrivedAt
	j.History = []Event{{State: Submitted, At: c.ArrivedAt, Note: "as " + c.Name}}
	j.state, j.file = Submitted, c.file
}

// inAState reports whether a file named jid is in any daemon-owned state,
// exited/ included: a spool an older msched left may hold a job there
// until the reaper's start moves it to finished/ (RecoverExited), and init
// may start first.
func (s *Spool) inAState(jid string) bool {
	_, ok := s.stateIn(jid, append(slices.Clone(States[1:]), legacyExited))
	return ok
}

// StateOf says which daemon-owned state directory holds jid, looking at
// each with lstat(2) only (no read), as stateIn does, so that a job moving
// on while it looks is not missed; false if none does (the job is claimed,
// reaped, or no job).
func (s *Spool) StateOf(jid string) (State, bool) {
	if !ValidJID(jid) {
		return "", false
	}
	return s.stateIn(jid, States[1:])
}

// stateIn says which of states holds a file named jid. The directories are
// looked at one after the other while other daemons move the job on,
// forwards (queued → finished) and back (running → queued): a job that
// moves from a directory not yet looked at to one already looked at is
// missed by one sweep. So there are two, in opposite orders: a job is
// missed only if it moves twice, each time against the sweep, within these
// few lstat(2)s.
func (s *Spool) stateIn(jid string, states []State) (State, bool) {
	in := func(st State) bool {
		_, err := os.Lstat(filepath.Join(s.Dir(st), jid))
		return err == nil
	}
	for _, st := range states {
		if in(st) {
			return st, true
		}
	}
	for i := len(states) - 1; i >= 0; i-- {
		if in(states[i]) {
			return states[i], true
		}
	}
	return "", false
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

// ClaimedJIDs are the JIDs of the claims in tmp/ (claimed submissions not
// yet moved on, or whose claim's removal a crash lost), with the members
// an array claim has reserved.
func (s *Spool) ClaimedJIDs() ([]string, error) {
	fs, err := s.claimFiles()
	var jids []string
	for _, f := range fs {
		jids = append(jids, claimJIDs(f)...)
	}
	return jids, err
}

// openClaim finds the claim holding jid (as its JID, or as an array member
// it has reserved).
func (s *Spool) openClaim(jid string) (*Claim, error) {
	fs, err := s.claimFiles()
	if err != nil {
		return nil, err
	}
	for _, f := range fs {
		if slices.Contains(claimJIDs(f), jid) {
			return s.loadClaim(f)
		}
	}
	return nil, fmt.Errorf("spool: claim %s: %w", jid, ErrNotFound)
}

// nameMax is the longest file name (NAME_MAX on Linux's file systems).
const nameMax = 255

// shorten cuts name to at most n bytes for a claim's name, which adds the
// JID and arrival time to it: a submission named with the file system's
// longest name must still be claimable. A name that is UTF-8 is cut at a
// character boundary.
func shorten(name string, n int) string {
	if len(name) <= n {
		return name
	}
	cut := name[:n]
	if utf8.ValidString(name) {
		for len(cut) > 0 && !utf8.ValidString(cut) {
			cut = cut[:len(cut)-1]
		}
	}
	return cut
}

// splitClaim parses "claim.<JID>.<arrival ns>.<name>", or an array's
// claim with its members reserved, "claim.<JID>+<first>-<last>.…" (JID,
// then first to last, consecutive: ReserveArray).
func splitClaim(f string) (jid string, arrived time.Time, name string, ok bool) {
	jid, _, arrived, name, ok = splitArrayClaim(f)
	return jid, arrived, name, ok
}

func splitArrayClaim(f string) (jid string, members []string, arrived time.Time, name string, ok bool) {
	rest, ok := strings.CutPrefix(f, claimPrefix)
	if !ok {
		return "", nil, time.Time{}, "", false
	}
	parts := strings.SplitN(rest, ".", 3)
	if len(parts) != 3 || parts[2] == "" {
		return "", nil, time.Time{}, "", false
	}
	jid, reserved, isArray := strings.Cut(parts[0], "+")
	if !ValidJID(jid) {
		return "", nil, time.Time{}, "", false
	}
	if isArray {
		first, last, _ := strings.Cut(reserved, "-")
		a, ok1 := JIDNumber(first)
		b, ok2 := JIDNumber(last)
		if !ok1 || !ok2 || b < a || b-a >= MaxArrayJobs {
			return "", nil, time.Time{}, "", false
		}
		members = make([]string, 0, b-a+2)
		members = append(members, jid)
		for n := a; n <= b; n++ {
			members = append(members, FormatJID(n))
		}
	}
	ns, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return "", nil, time.Time{}, "", false
	}
	return jid, members, time.Unix(0, ns).UTC(), parts[2], true
}

// claimJIDs are the JIDs a claim file holds: its own, and an array's
// reserved members.
func claimJIDs(f string) []string {
	jid, members, _, _, ok := splitArrayClaim(f)
	switch {
	case !ok:
		return nil
	case members != nil:
		return members
	}
	return []string{jid}
}

// loadClaim reads a claim through readUntrusted: the one read of the bytes
// init judges, and of their owner. What cannot be read is a Refused claim,
// not an error (see RecoverClaims). The error wraps ErrNotFound if the
// claim is gone.
func (s *Spool) loadClaim(file string) (*Claim, error) {
	jid, members, arrived, name, ok := splitArrayClaim(file)
	if !ok {
		return nil, fmt.Errorf("spool: claim: bad claim file %q", file)
	}
	c := &Claim{JID: jid, Name: name, ArrivedAt: arrived, Members: members, file: file}
	u, err := readUntrusted(s.tmp, file, s.JobFileLimit())
	var ue *untrustedError
	switch {
	case err == nil:
		c.Data, c.UID = u.data, u.uid
	case errors.Is(err, ErrNotFound):
		return nil, fmt.Errorf("spool: claim %s: %w", jid, ErrNotFound)
	case errors.As(err, &ue):
		uid, ok := entryOwner(filepath.Join(s.tmp, file))
		if !ok {
			return nil, fmt.Errorf("spool: claim %s: %w", jid, ErrNotFound)
		}
		c.UID, c.Data = uid, ue.Head
		c.Refused = ue.Why
		if ue.Err != nil {
			c.Refused += ": " + ue.Err.Error()
		}
		if ue.Head != nil {
			c.Refused += fmt.Sprintf("; only its first %d bytes are kept below", len(ue.Head))
		}
	default:
		return nil, fmt.Errorf("spool: claim %s: %w", jid, err)
	}
	c.User = UserName(c.UID)
	// Daemons that run as an ordinary user run every job as that user:
	// another user's file would run with the daemons' rights, not its
	// owner's. Its bytes are not kept either.
	if euid := os.Geteuid(); euid != 0 && c.UID != euid {
		c.Data = nil
		c.Refused = fmt.Sprintf("submitted by %s, but these daemons run as %s and run only %s's jobs",
			describeUser(c.UID), describeUser(euid), UserName(euid))
	}
	return c, nil
}

// removeClaim removes a claim that has served, whatever it is: a claim is
// a user's entry renamed into tmp/, and a race (doc.go) can make it a
// directory, which os.Remove would leave in place for ever. RemoveAll
// removes a tree without following links in it.
func removeClaim(path string) error {
	fi, err := os.Lstat(path)
	if err == nil && fi.IsDir() {
		return os.RemoveAll(path)
	}
	return os.Remove(path)
}
