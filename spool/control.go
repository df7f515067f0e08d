package spool

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Control requests are files in control/ named <kind>.<JID>. Anyone may add
// one (RequestCancel); the addressee, the owner of the state the job is in
// when it looks, acts on it and removes it (DoneControl). See doc.go for what
// each owner does with a cancel.

// Control kinds.
const (
	Cancel = "cancel"
)

// Control is one pending request.
type Control struct {
	Kind string
	JID  string
	At   time.Time // when it was requested
	file string
}

// RequestCancel asks for job jid to be cancelled. It is idempotent: asking
// twice leaves one request.
func (s *Spool) RequestCancel(jid string) error {
	if !ValidJID(jid) {
		return fmt.Errorf("spool: cancel: %q is not a job id", jid)
	}
	body := s.now().Format(time.RFC3339Nano) + "\n"
	return s.write(s.Path(DirControl), Cancel+"."+jid, []byte(body), true)
}

// Controls lists pending requests, oldest JID first. Unrecognised files are
// skipped (and left for a human).
func (s *Spool) Controls() ([]Control, error) {
	des, err := os.ReadDir(s.Path(DirControl))
	if err != nil {
		return nil, fmt.Errorf("spool: controls: %w", err)
	}
	var cs []Control
	for _, d := range des {
		kind, jid, ok := strings.Cut(d.Name(), ".")
		if !ok || kind != Cancel || !ValidJID(jid) {
			continue
		}
		c := Control{Kind: kind, JID: jid, file: d.Name()}
		if b, err := os.ReadFile(filepath.Join(s.Path(DirControl), d.Name())); err == nil {
			c.At, _ = time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
		} else if os.IsNotExist(err) {
			continue // done by another daemon since ReadDir
		}
		cs = append(cs, c)
	}
	sort.Slice(cs, func(a, b int) bool {
		na, _ := jidNumber(cs[a].JID)
		nb, _ := jidNumber(cs[b].JID)
		return na < nb
	})
	return cs, nil
}

// DoneControl removes a request once acted on. Removing one that is already
// gone is not an error: two daemons may race to finish the same request.
func (s *Spool) DoneControl(c Control) error {
	err := os.Remove(filepath.Join(s.Path(DirControl), c.file))
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("spool: control: %w", err)
	}
	return syncDir(s.Path(DirControl))
}
