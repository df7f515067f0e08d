package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"time"

	"msched/atomicfile"
)

// DirPerm is the mode of the spool directories that only the daemons
// write: everyone may read them (the web page, `msched status`).
const DirPerm = 0o755

// SharedDirPerm is the mode of submitted/ and control/ in a spool made by
// root: every local user may add a submission or a request there, and the
// sticky bit keeps each user from removing or renaming anyone else's
// file, as in /tmp. Root's daemons are then the only readers that matter,
// and they read those files as untrusted (readUntrusted).
const SharedDirPerm = os.ModeSticky | 0o777

// ErrNotFound is returned (wrapped) when a job is not where it was looked for.
var ErrNotFound = errors.New("not found")

// Spool is an open spool directory. It holds no state of its own beyond
// paths and a setting (the bound on a job file), so any number of processes
// may open the same spool; what each may do is fixed by the ownership table
// in doc.go, not by the type.
type Spool struct {
	root   string
	tmp    string           // tmp/: claims
	stage  string           // where this view's atomic writes are staged (see As)
	pool   *atomicfile.Pool // a daemon view's recycled staging files, in stage
	as     Daemon           // set by As: Move, Update and Remove check ownership
	now    func() time.Time // UTC; replaced in tests
	maxJob int64            // SetMaxJobFile; 0: MaxJobFile
}

// As returns a view of the spool for daemon d: its Move, Update and Remove
// refuse to touch states that d does not own, so a daemon cannot break the
// ownership table by mistake. A daemon opens the spool and keeps only this
// view; readers (web, status) need none.
func (s *Spool) As(d Daemon) *Spool {
	v := *s
	v.as = d
	if slices.Contains(stagingDaemons, d) {
		// Made here, by the daemon that writes there, rather than required
		// by Open: spools made before these directories existed open as
		// they are, and readers (web, status) need not be able to write.
		// Without it the daemon stages in tmp/, as it did then.
		stage := filepath.Join(s.tmp, string(d))
		if err := os.MkdirAll(stage, DirPerm); err == nil {
			v.stage, v.pool = stage, atomicfile.PoolFor(stage)
		}
	}
	return &v
}

// mayWrite checks that the view's daemon (if any) owns st.
func (s *Spool) mayWrite(op string, st State) error {
	if s.as != "" && Owner(st) != s.as {
		return fmt.Errorf("spool: %s: %s does not own %s (its owner is %s)", op, s.as, st, Owner(st))
	}
	return nil
}

// Create makes the spool layout under dir (every state directory plus tmp,
// control, output, reports, db) and opens it. It is idempotent. Run as
// root (daemons that serve every local user), it also sets the modes of
// the layout, new or not: submitted/ and control/ SharedDirPerm, the others
// DirPerm (see doc.go, "Users and permissions"). Run as anyone else, new
// directories are DirPerm and existing ones are left alone: daemons running
// as one user serve only that user.
func Create(dir string) (*Spool, error) {
	root := os.Geteuid() == 0
	for _, d := range layout() {
		p := filepath.Join(dir, d)
		if err := os.MkdirAll(p, DirPerm); err != nil {
			return nil, fmt.Errorf("spool: create: %w", err)
		}
		if root {
			if err := os.Chmod(p, layoutMode(d)); err != nil {
				return nil, fmt.Errorf("spool: create: %w", err)
			}
		}
	}
	return Open(dir)
}

// layoutMode is the mode Create gives directory d of the layout as root.
func layoutMode(d string) os.FileMode {
	if d == string(Submitted) || d == DirControl {
		return SharedDirPerm
	}
	return DirPerm
}

// Open opens an existing spool. Every directory of the layout must exist
// (a mistyped path is an error, not a new empty spool) and all must be on
// one file system, because moves are rename(2).
func Open(dir string) (*Spool, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("spool: open: %w", err)
	}
	var dev uint64
	for i, d := range layout() {
		p := filepath.Join(abs, d)
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("spool: open %s: not a spool (run create first): %w", abs, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("spool: open: %s is not a directory", p)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if i == 0 {
				dev = uint64(st.Dev)
			} else if uint64(st.Dev) != dev {
				return nil, fmt.Errorf("spool: open: %s is on another file system than %s; rename(2) cannot move jobs across",
					p, filepath.Join(abs, layout()[0]))
			}
		}
	}
	tmp := filepath.Join(abs, DirTmp)
	return &Spool{root: abs, tmp: tmp, stage: tmp, now: func() time.Time { return time.Now().UTC() }}, nil
}

// stagingDaemons have a staging directory of their own, tmp/<daemon>/, for
// the temporaries of their atomic writes. Creating a file and fsyncing it
// costs more the larger and busier its directory: tmp/ holds every claim (a
// burst of submissions is thousands), and on ext4 without a journal an
// fsync of a new file also writes its directory, so writers sharing one
// directory wait for each other. In a small private directory a staged write
// took a quarter of the CPU time.
var stagingDaemons = []Daemon{Init, Sched, Run, Reaper}

func layout() []string {
	var ds []string
	for _, s := range States {
		ds = append(ds, string(s))
	}
	return append(ds, otherDirs...)
}

// Root is the spool's absolute path.
func (s *Spool) Root() string { return s.root }

// Dir is the directory of a state.
func (s *Spool) Dir(st State) string { return filepath.Join(s.root, string(st)) }

// Path is the path of one of the other directories (DirTmp, DirControl, …).
func (s *Spool) Path(dir string) string { return filepath.Join(s.root, dir) }

// Entry is one job file in a state directory, as listed (not read).
type Entry struct {
	State   State
	Name    string // the JID, except in submitted/ where it is the submitter's name
	ModTime time.Time
	Size    int64
}

// List returns the job files in a state, oldest first: by JID number where
// names are JIDs, else (submitted/) by modification time, then name.
// Dot-files are staging files and are skipped, as is, but in submitted/,
// anything that is not a regular file.
func (s *Spool) List(st State) ([]Entry, error) {
	if !st.Valid() {
		return nil, fmt.Errorf("spool: list: unknown state %q", st)
	}
	des, err := os.ReadDir(s.Dir(st))
	if err != nil {
		return nil, fmt.Errorf("spool: list %s: %w", st, err)
	}
	es := make([]Entry, 0, len(des))
	for _, d := range des {
		if d.Name()[0] == '.' || (!d.Type().IsRegular() && st != Submitted) {
			// In submitted/, what is not a regular file is listed too:
			// init claims and refuses it (ClaimAll).
			continue
		}
		fi, err := d.Info()
		if os.IsNotExist(err) {
			continue // moved on since ReadDir
		} else if err != nil {
			return nil, fmt.Errorf("spool: list %s: %w", st, err)
		}
		es = append(es, Entry{State: st, Name: d.Name(), ModTime: fi.ModTime(), Size: fi.Size()})
	}
	sort.Slice(es, func(a, b int) bool { return entryLess(es[a], es[b]) })
	return es, nil
}

func entryLess(a, b Entry) bool {
	na, oka := jidNumber(a.Name)
	nb, okb := jidNumber(b.Name)
	switch {
	case oka && okb:
		return na < nb
	case oka != okb:
		return oka // JIDs before other names
	case !a.ModTime.Equal(b.ModTime):
		return a.ModTime.Before(b.ModTime)
	}
	return a.Name < b.Name
}

// Read reads and strictly parses a job file. A *ParseError says what is
// wrong with it; an error wrapping ErrNotFound that it is not there (it may
// have just moved on).
func (s *Spool) Read(st State, name string) (*Job, error) {
	data, err := s.readFile(st, name)
	if err != nil {
		return nil, err
	}
	j, err := Parse(name, data)
	if err != nil {
		return nil, err
	}
	j.state, j.file = st, name
	return j, nil
}

// readFile returns the bytes of job file st/name, for Read and Cache.Read:
// an error wrapping ErrNotFound if it is not there. Users write
// submitted/, so a file there is read as init reads it (readUntrusted: no
// link followed, no blocking, at most JobFileLimit bytes, one name), and
// one that cannot be is a *ParseError saying what it is: the web page and
// `msched status`, which read submitted/ as root, show it as a file that
// is not a job, and never read through a link or hang on a FIFO.
func (s *Spool) readFile(st State, name string) ([]byte, error) {
	if !st.Valid() {
		return nil, fmt.Errorf("spool: read: unknown state %q", st)
	}
	if !plainName(name) {
		return nil, fmt.Errorf("spool: read %s: bad name %q", st, name)
	}
	if st == Submitted {
		u, err := readUntrusted(s.Dir(st), name, s.JobFileLimit())
		var ue *untrustedError
		switch {
		case errors.As(err, &ue):
			return nil, &ParseError{File: name, Problems: []Problem{{Msg: ue.Why}}}
		case errors.Is(err, ErrNotFound):
			return nil, fmt.Errorf("spool: read %s/%s: %w", st, name, ErrNotFound)
		case err != nil:
			return nil, fmt.Errorf("spool: read: %w", err)
		}
		return u.data, nil
	}
	data, err := os.ReadFile(filepath.Join(s.Dir(st), name))
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("spool: read %s/%s: %w", st, name, ErrNotFound)
	} else if err != nil {
		return nil, fmt.Errorf("spool: read: %w", err)
	}
	return data, nil
}

// plainName reports whether name is a file name the spool may use in one of
// its directories: not empty, not a path, not a dot-file (staging).
func plainName(name string) bool {
	return name != "" && name == filepath.Base(name) && name[0] != '.'
}

// Find looks a job up by JID in every state directory and among claimed
// submissions (reported as Submitted), for `msched status`. If a crash left
// the job in two directories (see doc.go) it returns the copy with the
// longer history, which is the one recovery keeps.
func (s *Spool) Find(jid string) (State, *Job, error) {
	if !ValidJID(jid) {
		return "", nil, fmt.Errorf("spool: find: %q is not a job id", jid)
	}
	// Two passes: a job that moved from a directory not yet scanned to
	// one already scanned is missed by one pass, not by two.
	for pass := 0; pass < 2; pass++ {
		var best *Job
		for _, st := range States[1:] {
			j, err := s.Read(st, jid)
			if errors.Is(err, ErrNotFound) {
				continue
			} else if err != nil {
				return "", nil, err
			}
			if best == nil || len(j.History) > len(best.History) {
				best = j
			}
		}
		if best != nil {
			return best.state, best, nil
		}
	}
	if c, err := s.openClaim(jid); err == nil {
		j, perr := c.Job()
		if perr != nil { // it will be rejected; show what init will record
			j = c.Rejection(perr.Error())
		}
		j.JID = jid // an array member the claim has reserved, not yet queued
		return Submitted, j, nil
	} else if !errors.Is(err, ErrNotFound) {
		return "", nil, err
	}
	return "", nil, fmt.Errorf("spool: find %s: %w", jid, ErrNotFound)
}
