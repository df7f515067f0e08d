package hoststat

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"msched/atomicfile"
)

// HealthDir is the directory, inside the spool's db/ (the dir every
// function below takes), that records which hosts are down: one file per
// down host, none for a host that is up. It is the one home of that fact:
// the run daemon marks a host down when a job cannot reach it, the stats
// daemon marks hosts down when a probe fails and up when one succeeds, and
// sched, the web page and `msched hosts` read it.
//
// Each file is JSON (DownInfo), written atomically (temporary, fsync,
// rename, directory fsync), so a reader in any process sees a whole record
// or none. Its name is the host's name escaped (see healthName): host names
// may hold '/' ("here/cpu0"). Readers take the host from the content.
const HealthDir = "health"

// DownInfo is the record of one down host.
type DownInfo struct {
	Host   string `json:"host"`
	Reason string `json:"reason"` // the failure as its tool said it (ssh's message, scontrol's)
	// Since is when the host was first marked down in this outage; Last is
	// the latest failure recorded (MarkUp compares with it).
	Since time.Time `json:"since"`
	Last  time.Time `json:"last"`
}

// maxReason bounds a recorded reason: ssh's last words are one line, but a
// tool may say much more, and the record is read on every scheduling cycle.
const maxReason = 512

// MarkDown records that host is down since at, for reason. A host already
// down keeps its Since and gets the newer reason (a record written later
// than at, by the other writer, is kept as it is). dir is the spool's db/.
// It is safe to call from several processes at once.
func MarkDown(dir, host, reason string, at time.Time) error {
	hd, name, err := healthPath(dir, host)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(hd, 0o755); err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	at = at.UTC()
	return withHealthLock(hd, func() error {
		rec := DownInfo{Host: host, Reason: cleanReason(reason), Since: at, Last: at}
		if old, err := readDown(filepath.Join(hd, name)); err == nil && old.Host == host {
			if old.Since.Before(at) {
				rec.Since = old.Since
			}
			if old.Last.After(at) {
				rec.Last, rec.Reason = old.Last, old.Reason
			}
			if rec.Reason == old.Reason && rec.Since.Equal(old.Since) && rec.Last.Equal(old.Last) {
				return nil // nothing new: spare the fsyncs
			}
		}
		data, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("hoststat: %w", err)
		}
		if err := atomicfile.Write("", hd, name, append(data, '\n')); err != nil {
			return fmt.Errorf("hoststat: %w", err)
		}
		return nil
	})
}

// MarkUp records that host answered a probe that began at probedAt: its
// down record is removed, unless the record's latest failure is not before
// probedAt (a failure seen while the probe ran is newer news than the
// probe's success). It reports whether a record was removed; a host that was
// not down is no error. dir is the spool's db/.
//
// The removal is not followed by a directory fsync: a crash may bring the
// record back, and the host is then down until the next probe, seconds
// later (see daemons.Stats).
func MarkUp(dir, host string, probedAt time.Time) (bool, error) {
	hd, name, err := healthPath(dir, host)
	if err != nil {
		return false, err
	}
	path := filepath.Join(hd, name)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return false, nil // the common case, without the lock
	}
	removed := false
	err = withHealthLock(hd, func() error {
		old, err := readDown(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err == nil && old.Host == host && !old.Last.Before(probedAt) {
			return nil
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("hoststat: %w", err)
		}
		removed = true
		return nil
	})
	return removed, err
}

// Down returns the down hosts recorded in dir (the spool's db/), by name.
// No record, or no health directory yet, means every host is up. A file
// that is not a record of the host its name says (damage from outside
// msched) is skipped.
func Down(dir string) (map[string]DownInfo, error) {
	hd := filepath.Join(dir, HealthDir)
	es, err := os.ReadDir(hd)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]DownInfo{}, nil
	} else if err != nil {
		return nil, fmt.Errorf("hoststat: %w", err)
	}
	down := make(map[string]DownInfo, len(es))
	for _, e := range es {
		if n := e.Name(); n[0] == '.' || !e.Type().IsRegular() {
			continue // a writer's temporary, or not ours
		}
		rec, err := readDown(filepath.Join(hd, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // marked up since ReadDir
		}
		if err != nil || rec.Host == "" || healthName(rec.Host) != e.Name() {
			continue
		}
		down[rec.Host] = rec
	}
	return down, nil
}

func readDown(path string) (DownInfo, error) {
	var rec DownInfo
	data, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("hoststat: %s: %w", path, err)
	}
	return rec, nil
}

// healthPath is the health directory and the file name of host's record.
func healthPath(dir, host string) (hd, name string, err error) {
	if host == "" {
		return "", "", errors.New("hoststat: health: empty host name")
	}
	return filepath.Join(dir, HealthDir), healthName(host), nil
}

// maxHealthName keeps a record's file name well inside NAME_MAX (255).
const maxHealthName = 200

// healthName is the file name of host's record: bytes outside
// [A-Za-z0-9._:@+=-] written %XX (so '/' is "%2F" and '%' is "%25"), and
// a leading '.' too (the temporaries of atomic writes are dot-files). A
// name longer than maxHealthName is cut and given the SHA-256 of the whole
// host name after a '~', which no escaped name holds: distinct hosts get
// distinct names either way.
func healthName(host string) string {
	var b strings.Builder
	for i := 0; i < len(host); i++ {
		c := host[i]
		safe := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("._:@+=-", c) >= 0
		if safe && (i > 0 || c != '.') {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	s := b.String()
	if len(s) > maxHealthName {
		sum := sha256.Sum256([]byte(host))
		s = s[:maxHealthName-1-2*len(sum)] + "~" + hex.EncodeToString(sum[:])
	}
	return s
}

// withHealthLock runs f holding flock(2) on the health directory, so that
// the read-modify-write of a record by one daemon does not interleave with
// another's (run and stats write the same records).
func withHealthLock(hd string, f func() error) error {
	d, err := os.Open(hd)
	if err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	defer d.Close()
	for {
		err = syscall.Flock(int(d.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("hoststat: lock %s: %w", hd, err)
	}
	// Closing the descriptor releases the lock.
	return f()
}

// cleanReason makes a reason one bounded line.
func cleanReason(s string) string {
	s = strings.Join(strings.FieldsFunc(strings.TrimSpace(s), func(r rune) bool { return r == '\n' || r == '\r' }), "; ")
	if len(s) > maxReason {
		cut := maxReason
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
