package spool

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Control requests are files in control/ named <kind>.<JID>.<uid>.<tag>:
// the uid of the user who asked and a random tag, so that no name a
// request will take can be known, and so taken, before it is written (in a
// sticky control/ nobody may replace another's file, and a user who made
// the name first would stop the request). Files named <kind>.<JID>.<uid>
// and <kind>.<JID>, as older versions of msched wrote them, are read too.
// Who asked is the file's owner, from the descriptor it is read through;
// a name whose uid is not its owner's is junk. Anyone may add one
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

// RequestCancel asks for job jid to be cancelled, as the calling user.
// Each call adds a request under a name of its own, never replacing a file:
// a user who asks twice leaves two, and the daemons act on the first and
// remove the others (the reaper, once the job has left). The request is
// staged as a dot-file in control/ itself, which every user may write (tmp/
// is the daemons' own).
func (s *Spool) RequestCancel(jid string) error {
	if !ValidJID(jid) {
		return fmt.Errorf("spool: cancel: %q is not a job id", jid)
	}
	dir := s.Path(DirControl)
	base := fmt.Sprintf("%s.%s.%d", Cancel, jid, os.Geteuid())
	p, err := NewPendingFile("", dir, base)
	if err != nil {
		return fmt.Errorf("spool: cancel %s: %w", jid, err)
	}
	defer p.Cleanup()
	if _, err := p.Write(ControlBody(Cancel, jid, s.now())); err != nil {
		return fmt.Errorf("spool: cancel %s: %w", jid, err)
	}
	// Renamed without replacing a file: a name that exists (which a random
	// tag makes next to impossible) is left alone and another tag drawn.
	_, _, _, err = p.CommitNoReplace(func(try int) (string, error) {
		if try > controlTries {
			return "", fmt.Errorf("%w: %d request names tried", os.ErrExist, controlTries)
		}
		return base + "." + controlTag(), nil
	})
	if err != nil {
		return fmt.Errorf("spool: cancel %s: %w", jid, err)
	}
	return nil
}

// controlTries is how many names RequestCancel tries before it gives up.
const controlTries = 3

// controlTagBytes is how many random bytes a request's tag has: 64 bits,
// which nobody guesses before the request is written.
const controlTagBytes = 8

// controlTag is a request name's random tag: 16 lowercase hex digits
// (parseControl's validTag accepts them).
func controlTag() string {
	b := make([]byte, controlTagBytes)
	rand.Read(b) // never fails (it crashes the program instead)
	return hex.EncodeToString(b)
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
		kind, jid, named, ok := parseControl(d.Name())
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
			} else if named >= 0 && named != u.uid {
				// Made by one user under a name another's request
				// might take: no request of either.
				c.Junk = fmt.Sprintf("named for uid %d but owned by %s (a request is named by its owner's uid)", named, describeUser(u.uid))
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

// parseControl parses "<kind>.<JID>.<uid>.<tag>" (RequestCancel's names),
// and "<kind>.<JID>.<uid>" and "<kind>.<JID>" (older versions'). uid is
// the uid the name gives, -1 if none.
func parseControl(name string) (kind, jid string, uid int, ok bool) {
	f := strings.Split(name, ".")
	if len(f) < 2 || len(f) > 4 || f[0] != Cancel || !ValidJID(f[1]) {
		return "", "", 0, false
	}
	uid = -1
	if len(f) >= 3 {
		n, err := strconv.ParseUint(f[2], 10, 31)
		if err != nil { // ParseUint takes no sign
			return "", "", 0, false
		}
		uid = int(n)
	}
	if len(f) == 4 && !validTag(f[3]) {
		return "", "", 0, false
	}
	return f[0], f[1], uid, true
}

// maxTag bounds a request name's tag: controlTag's is 16 characters.
const maxTag = 64

// validTag says whether t may be a request name's tag: letters and digits.
func validTag(t string) bool {
	if t == "" || len(t) > maxTag {
		return false
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
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
