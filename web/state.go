package web

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"msched/spool"
)

// The page's own state: which sessions are live, and recent failed logins.
// It is kept in files under db/web/, not in memory, because a CGI program
// lives for one request: the long-running server and every CGI process
// must see the same sessions and the same failures. Only a page with an
// access token writes here (a read-only page has no logins); the directory
// is created, mode 0700, at the first login.
//
// Nothing here is fsynced: a crash that loses a session file logs its user
// out, and one that loses the failure counts forgets some failures. Both
// are safe.

// stateDir is the page's directory under db/.
const stateDir = "web"

func (h *handler) statePath(elem ...string) string {
	return filepath.Join(append([]string{h.cfg.Spool.Path(spool.DirDB), stateDir}, elem...)...)
}

// Sessions: one empty file per live session, db/web/sessions/<issued>-<digest>,
// where digest is a hash of the cookie's payload (so that a reader of the
// directory learns nothing to build a cookie from, even without the MAC
// key) and issued its Unix time, by which old files are pruned. Login
// creates the file, logout removes it, and a cookie whose file is gone is
// no session, whatever its MAC says.

func (h *handler) sessionFile(p []byte) string {
	d := sha256.Sum256(p)
	return h.statePath("sessions", fmt.Sprintf("%d-%x", binary.BigEndian.Uint64(p), d[:16]))
}

// recordSession makes the session with payload p live, and removes the
// files of sessions that have expired.
func (h *handler) recordSession(p []byte) error {
	dir := h.statePath("sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("web: session: %w", err)
	}
	f, err := os.OpenFile(h.sessionFile(p), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("web: session: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("web: session: %w", err)
	}
	h.pruneSessions(dir)
	return nil
}

func (h *handler) pruneSessions(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	now := h.cfg.Now()
	for _, e := range ents {
		s, _, _ := strings.Cut(e.Name(), "-")
		issued, err := strconv.ParseInt(s, 10, 64)
		if err == nil && now.Sub(time.Unix(issued, 0)) <= sessionTTL+time.Minute {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			h.log.Warn("web: prune sessions", "err", err)
		}
	}
}

// sessionLive says whether the session with payload p was recorded and
// not revoked. An error reading the directory counts as not live.
func (h *handler) sessionLive(p []byte) bool {
	fi, err := os.Lstat(h.sessionFile(p))
	return err == nil && fi.Mode().IsRegular()
}

// revokeSession ends the session with payload p: its cookie, replayed, is
// refused from now on.
func (h *handler) revokeSession(p []byte) error {
	if err := os.Remove(h.sessionFile(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("web: logout: %w", err)
	}
	return nil
}
