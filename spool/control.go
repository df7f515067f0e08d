package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Control requests are files in control/ named <kind>.<JID>.<uid>: the uid
// of the user who asked, so that two users' requests for one job never
// share a name (in a sticky control/ neither could replace the other's
// file). Files named <kind>.<JID>, as msched wrote them before, are read
// too. The name only keeps requests apart; who asked is the file's owner,
// from the descriptor it is read through. Anyone may add one
// (RequestCancel); the addressee, the owner of the state the job is in when
// it looks, acts on it if Allowed and removes it (DoneControl). See doc.go
// for what each owner does with a cancel.

// Control kinds.
const (
	Cancel = "cancel"
)

// Control is one pending request.
type Control struct {
	Kind string
	JID  string
	UID  int       // who asked: the owner of the request file
	At   time.Time // when it was requested (zero if the file does not say)
	// Junk says why an entry with a request's name is no request (a FIFO,
	// a symbolic link, larger than MaxControl, unreadable): the daemons
	// remove it (DiscardControl) and log it, and never act on it. UID is
	// then the entry's own owner, who put it there.
	Junk string
	file string
}

// File is the request's file name in control/.
func (c Control) File() string { return c.file }

// RequestCancel asks for job jid to be cancelled, as the calling user. It
// is idempotent: one user asking twice leaves one request. The request is
// staged as a dot-file in control/ itself, which every user may write (tmp/
// is the daemons' own).
func (s *Spool) RequestCancel(jid string) error {
	if !ValidJID(jid) {
		return fmt.Errorf("spool: cancel: %q is not a job id", jid)
	}
	body := ControlBody(Cancel, jid, s.now())
	name := fmt.Sprintf("%s.%s.%d", Cancel, jid, os.Geteuid())
	return WriteAtomic(s.Path(DirControl), name, []byte(body))
}

// Controls lists pending requests, oldest JID first. Each is read through
// readUntrusted (no link followed, no blocking, at most MaxControl bytes);
// an entry with a request's name that cannot be read so is returned with
// Junk set. Files with other names are skipped (and left for a human).
func (s *Spool) Controls() ([]Control, error) {
	dir := s.Path(DirControl)
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("spool: controls: %w", err)
	}
	var cs []Control
	for _, d := range des {
		kind, jid, ok := parseControl(d.Name())
		if !ok {
			continue
		}
		c := Control{Kind: kind, JID: jid, file: d.Name()}
		u, err := readUntrusted(dir, d.Name(), MaxControl)
		var ue *untrustedError
		switch {
		case err == nil:
			c.UID = u.uid
			var stated bool
			if c.At, stated = parseControlBody(u.data, kind, jid); !stated {
				c.Junk = fmt.Sprintf("its content does not say %q (a request is that line with its time)", kind+" "+jid)
			}
		case errors.Is(err, ErrNotFound):
			continue // done by another daemon since ReadDir
		case errors.As(err, &ue):
			uid, ok := entryOwner(filepath.Join(dir, d.Name()))
			if !ok {
				continue
			}
			c.UID, c.Junk = uid, ue.Why
		default:
			return nil, fmt.Errorf("spool: controls: %w", err)
		}
		cs = append(cs, c)
	}
	sort.Slice(cs, func(a, b int) bool {
		na, _ := jidNumber(cs[a].JID)
		nb, _ := jidNumber(cs[b].JID)
		if na != nb {
			return na < nb
		}
		return cs[a].file < cs[b].file
	})
	return cs, nil
}

// parseControl parses "<kind>.<JID>" and "<kind>.<JID>.<uid>".
func parseControl(name string) (kind, jid string, ok bool) {
	kind, rest, ok := strings.Cut(name, ".")
	if !ok || kind != Cancel {
		return "", "", false
	}
	jid, uid, hasUID := strings.Cut(rest, ".")
	if !ValidJID(jid) {
		return "", "", false
	}
	if hasUID {
		if _, err := strconv.ParseUint(uid, 10, 31); err != nil || uid[0] == '+' {
			return "", "", false
		}
	}
	return kind, jid, true
}

// Allowed says whether c's sender may make this request of job j: only the
// job's owner (j.UID) or root may. The error says who may. A job file
// written before msched recorded the uid has only its user's name, which
// is then compared with the sender's login name. This is the one place
// that decides; sched, run, the reaper and `msched cancel` ask it.
func (c Control) Allowed(j *Job) error {
	if c.UID == 0 {
		return nil
	}
	if j.UID != nil && *j.UID == c.UID {
		return nil
	}
	if j.UID == nil && j.User != "" && UserName(c.UID) == j.User {
		return nil
	}
	owner := j.User
	if owner == "" && j.UID != nil {
		owner = UserName(*j.UID)
	}
	if owner == "" {
		return fmt.Errorf("spool: %s has no recorded owner; only root may %s it", j.JID, c.Kind)
	}
	return fmt.Errorf("spool: %s belongs to %s; only %s or root may %s it", j.JID, owner, owner, c.Kind)
}

// Sender is the request's sender as "bob (uid 1002)", for logs.
func (c Control) Sender() string { return describeUser(c.UID) }

// DoneControl removes a request once acted on. Removing one that is already
// gone is not an error: two daemons may race to finish the same request.
func (s *Spool) DoneControl(c Control) error {
	_, err := s.DiscardControl(c)
	return err
}

// DiscardControl removes a request, or junk, and reports whether this call
// removed it: of daemons racing to remove one entry, only the one that did
// logs it.
func (s *Spool) DiscardControl(c Control) (removed bool, err error) {
	dir := s.Path(DirControl)
	err = os.Remove(filepath.Join(dir, c.file))
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		// A directory named like a request.
		if fi, lerr := os.Lstat(filepath.Join(dir, c.file)); lerr == nil && fi.IsDir() {
			err = os.RemoveAll(filepath.Join(dir, c.file))
		}
		if err != nil {
			return false, fmt.Errorf("spool: control: %w", err)
		}
	}
	return true, syncDir(dir)
}

// ControlBody is a request's content: what it asks, of which job, and when.
// Its owner is who asks (fstat), but a file can be renamed into control/
// by a user who did not write it (a file of root's in her home, say): a
// request must also state itself, which such a file does not.
func ControlBody(kind, jid string, at time.Time) []byte {
	return []byte(kind + " " + jid + " " + at.Format(time.RFC3339Nano) + "\n")
}

// parseControlBody reads ControlBody; stated is false unless the content
// asks for kind on jid.
func parseControlBody(data []byte, kind, jid string) (at time.Time, stated bool) {
	f := strings.Fields(string(data))
	if len(f) != 3 || f[0] != kind || f[1] != jid {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, f[2])
	return at, err == nil
}
