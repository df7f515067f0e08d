package spool

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A JID is "J" and at least six decimal digits, from a counter that only
// grows: J000001, J000002, … Six digits keep `ls` sorted for the first
// million jobs; past that the number simply grows wider, and List sorts by
// number, not by text.
const jidWidth = 6

// jidFile holds the last JID allocated, as a decimal number; jidLock is the
// flock(2) target. The lock is a separate file because the counter is
// replaced by rename, and a lock on a replaced inode protects nothing.
const (
	jidFile = "jid"
	jidLock = "jid.lock"
)

// FormatJID renders the n-th JID.
func FormatJID(n int64) string { return fmt.Sprintf("J%0*d", jidWidth, n) }

// ValidJID reports whether s is a JID in canonical form.
func ValidJID(s string) bool {
	n, ok := jidNumber(s)
	return ok && FormatJID(n) == s
}

// JIDLess orders JIDs as their numbers: JIDs are zero-padded to a fixed
// width until the counter outgrows it, so the shorter is the older and
// equal lengths compare as strings.
func JIDLess(a, b string) bool { return CompareJID(a, b) < 0 }

// CompareJID is JIDLess's order as a comparison (-1, 0, +1), for
// slices.SortFunc and cmp.Or.
func CompareJID(a, b string) int {
	return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
}

// MaxJIDNumber bounds the number ParseJID accepts: a thousand times a
// million jobs a day for a century is under it, and FormatJID of it fits in
// a file name with room to spare.
const MaxJIDNumber = 1e15

// ParseJID reads a job id as a user types it and returns it in canonical
// form (FormatJID): "J000010", "J10", "j000010" and "10" all name
// J000010. It is the one reader of a user's JID, for the commands (cancel,
// status, submit --after) and the job file's after: and afterok:. The
// number must be 1 to MaxJIDNumber; nothing else (no sign, no space, no
// other letter) is accepted, and the error quotes what was given.
func ParseJID(s string) (string, error) {
	digits := s
	if len(digits) > 0 && (digits[0] == 'J' || digits[0] == 'j') {
		digits = digits[1:]
	}
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("spool: %q is not a job id (%s; J000010, J10 and 10 name the same job)", Clip(s, maxQuoted), why)
	}
	if digits == "" {
		return bad("no number")
	}
	if !digitsOnly(digits) {
		return bad("want digits after the J")
	}
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return bad("job ids start at 1")
	}
	if len(digits) > 15 {
		return bad(fmt.Sprintf("over the largest job id, %d", int64(MaxJIDNumber)))
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > MaxJIDNumber {
		return bad(fmt.Sprintf("over the largest job id, %d", int64(MaxJIDNumber)))
	}
	return FormatJID(n), nil
}

// JIDNumber is the number of a canonical JID (ValidJID), or false.
func JIDNumber(s string) (int64, bool) {
	n, ok := jidNumber(s)
	return n, ok && FormatJID(n) == s
}

func jidNumber(s string) (int64, bool) {
	if len(s) < 1+jidWidth || s[0] != 'J' {
		return 0, false
	}
	n, err := strconv.ParseInt(s[1:], 10, 64)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// NextJID allocates a JID that no process has had before and none will get
// again, across restarts. It serialises on flock(2) of db/jid.lock, so any
// number of goroutines and processes may call it; the counter is rewritten
// atomically and durably before the JID is returned, so a crash can burn a
// number but never hand it out twice.
//
// If db/jid is missing (a new spool, or someone deleted it) the count
// resumes after the highest JID found in any state directory or claim. If it
// exists but cannot be read as a number, NextJID refuses rather than risk
// reuse.
func (s *Spool) NextJID() (string, error) {
	jids, err := s.NextJIDs(1)
	if err != nil {
		return "", err
	}
	return jids[0], nil
}

// NextJIDs allocates n consecutive JIDs as NextJID does, with one counter
// update: init claims a burst of submissions with one lock and one fsync.
func (s *Spool) NextJIDs(n int) ([]string, error) {
	if n < 1 {
		return nil, fmt.Errorf("spool: jid: asked for %d JIDs", n)
	}
	db := filepath.Join(s.root, DirDB)
	lf, err := os.OpenFile(filepath.Join(db, jidLock), os.O_CREATE|os.O_RDWR, FilePerm)
	if err != nil {
		return nil, fmt.Errorf("spool: jid: %w", err)
	}
	defer lf.Close() // closing releases the lock
	for {
		err = syscall.Flock(int(lf.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("spool: jid: lock: %w", err)
	}

	var last int64
	b, err := os.ReadFile(filepath.Join(db, jidFile))
	switch {
	case err == nil:
		last, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || last < 0 {
			return nil, fmt.Errorf("spool: jid: counter %s is damaged (%q); fix it by hand to at least the highest JID ever used",
				filepath.Join(db, jidFile), b)
		}
	case os.IsNotExist(err):
		if last, err = s.highestJID(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("spool: jid: %w", err)
	}
	next := last + int64(n)
	if err := s.write(db, jidFile, []byte(strconv.FormatInt(next, 10)+"\n"), true); err != nil {
		return nil, fmt.Errorf("spool: jid: %w", err)
	}
	jids := make([]string, n)
	for i := range jids {
		jids[i] = FormatJID(last + 1 + int64(i))
	}
	return jids, nil
}

// LastJID is the number of the last JID allocated (0: none yet), read
// without the counter's lock: every JID above it is still to be given. A
// spool without a counter answers with the highest JID it holds, as
// NextJIDs would resume from.
func (s *Spool) LastJID() (int64, error) {
	b, err := os.ReadFile(filepath.Join(s.root, DirDB, jidFile))
	switch {
	case err == nil:
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("spool: jid: counter is damaged (%q)", Clip(string(b), maxQuoted))
		}
		return n, nil
	case os.IsNotExist(err):
		return s.highestJID()
	}
	return 0, fmt.Errorf("spool: jid: %w", err)
}

// highestJID scans the daemon-owned state directories and claims for the largest JID.
func (s *Spool) highestJID() (int64, error) {
	var max int64
	for _, st := range States {
		if st == Submitted { // names there are the submitters' choice
			continue
		}
		es, err := os.ReadDir(s.Dir(st))
		if err != nil {
			return 0, fmt.Errorf("spool: jid: %w", err)
		}
		for _, e := range es {
			if n, ok := jidNumber(e.Name()); ok && n > max {
				max = n
			}
		}
	}
	cs, err := s.ClaimedJIDs()
	if err != nil {
		return 0, err
	}
	for _, jid := range cs {
		if n, ok := jidNumber(jid); ok && n > max {
			max = n
		}
	}
	return max, nil
}
