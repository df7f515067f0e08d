package spool

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"msched/internal/asuser"
)

// The tests in this file play a local user attacking daemons that run as
// root through the directories every user may write (submitted/, control/).
// They need root: as root a test can make files owned by any uid (attacker
// below), and act as an ordinary user (asuser) to see what a daemon that is
// not root sees.

// attacker and other are uids with no password entry: users of the tests.
const (
	attacker = 12345
	other    = 23456
)

// hostileTimeout bounds a call that the old code made block for ever (a
// FIFO read) or read without end (/dev/zero).
const hostileTimeout = 10 * time.Second

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes files owned by other uids")
	}
}

// within runs fn and fails the test if it has not returned in
// hostileTimeout.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(hostileTimeout):
		t.Fatalf("%s did not return within %v", what, hostileTimeout)
	}
}

// secretFile is a file only root may read, outside the spool.
func secretFile(t *testing.T) (path, secret string) {
	t.Helper()
	secret = fmt.Sprintf("SECRET-%d-%d", os.Getpid(), time.Now().UnixNano())
	path = filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, secret
}

// spoolOf is a spool made by root and then given to uid, with the path to
// it open to all: the spool of daemons that run as uid.
func spoolOf(t *testing.T, uid int) *Spool {
	t.Helper()
	s := newSpool(t)
	if err := exec.Command("chown", "-R", fmt.Sprint(uid), s.Root()).Run(); err != nil {
		t.Fatal(err)
	}
	for d := s.Root(); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// asUser runs fn as uid (asuser.Run) and fails the test on its error.
func asUser(t *testing.T, uid int, fn func() error) {
	t.Helper()
	if err := asuser.Run(uid, fn); errors.Is(err, asuser.ErrNotRoot) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
}

// grepSpool fails the test if any file under the spool holds secret.
func grepSpool(t *testing.T, s *Spool, secret string) {
	t.Helper()
	filepath.WalkDir(s.Root(), func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the secret", p)
		}
		return nil
	})
}

// newClaim makes the entry a claim would be after init renamed a user's
// submission into tmp/ (make creates it at the path given), owned by
// attacker: what a user who won the race between init's check and its
// rename leaves there.
func newClaim(t *testing.T, s *Spool, name string, make func(path string) error) string {
	t.Helper()
	jid, err := s.NextJID()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(s.tmp, fmt.Sprintf("%s%s.%d.%s", claimPrefix, jid, time.Now().UnixNano(), name))
	if err := make(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(p, attacker, attacker); err != nil {
		t.Fatal(err)
	}
	return jid
}

// A claim that cannot be read as a job file (the entry a user swapped in:
// a link, a FIFO, a directory, a socket, a file over MaxJobFile) is
// rejected with what it is as the reason and its owner as the user; it
// never fails recovery, never blocks it, and never brings a byte of what a
// link points to into the spool. The old code failed init's recovery at
// every start ("claim J000001: not found") or blocked it for ever.
func TestClaim_Poisoned(t *testing.T) {
	needRoot(t)
	secretPath, secret := secretFile(t)
	big := bytes.Repeat([]byte("name: big # padding padding padding padding\n"), 2*MaxJobFile/44)
	for _, c := range []struct {
		name string
		make func(p string) error
		want string
		kept int // bytes of the entry kept as original
	}{
		{"dangling symlink", func(p string) error { return os.Symlink("/nonexistent/msched-test", p) }, "a symbolic link", 0},
		{"symlink to a root-only file", func(p string) error { return os.Symlink(secretPath, p) }, "a symbolic link", 0},
		{"symlink to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "a symbolic link", 0},
		{"FIFO", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "a FIFO, not a regular file", 0},
		{"directory", func(p string) error {
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(p, "job.yaml"), []byte(validJob), 0o644)
		}, "a directory, not a regular file", 0},
		{"socket", func(p string) error {
			l, err := net.Listen("unix", p)
			if err == nil {
				l.(*net.UnixListener).SetUnlinkOnClose(false)
				l.Close()
			}
			return err
		}, "a socket", 0},
		{"too large", func(p string) error { return os.WriteFile(p, big, 0o644) },
			fmt.Sprintf("too large: %d bytes, over the limit of 1048576 bytes (1 MiB); only its first 4096 bytes are kept below", len(big)), oversizeKept},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSpool(t).As(Init)
			jid := newClaim(t, s, "job.yaml", c.make)
			var claims []*Claim
			var err error
			within(t, "RecoverClaims", func() { claims, err = s.RecoverClaims() })
			if err != nil || len(claims) != 1 {
				t.Fatalf("RecoverClaims: %d claims, %v; want the one, rejected", len(claims), err)
			}
			cl := claims[0]
			if cl.JID != jid || !strings.Contains(cl.Refused, c.want) || cl.UID != attacker || cl.User != UserName(attacker) {
				t.Fatalf("claim %s refused %q by %s (uid %d); want %s refused %q by uid %d", cl.JID, cl.Refused, cl.User, cl.UID, jid, c.want, attacker)
			}
			var pe *ParseError
			if _, err := cl.Job(); !errors.As(err, &pe) {
				t.Fatalf("Job of a refused claim: %v, want a *ParseError", err)
			}
			r := cl.Rejection(pe.Detail())
			if err := s.Move(r, Submitted, Rejected, "refused"); err != nil {
				t.Fatal(err)
			}
			got, err := s.Read(Rejected, jid)
			if err != nil {
				t.Fatal(err)
			}
			if got.UID == nil || *got.UID != attacker || got.User != UserName(attacker) || !strings.Contains(got.Reason, "job.yaml: "+c.want) {
				t.Errorf("rejection: uid %v user %q reason %q", got.UID, got.User, got.Reason)
			}
			if len(got.Original) != c.kept || !strings.HasPrefix(string(big), got.Original) {
				t.Errorf("rejection keeps %d bytes as original, want %d", len(got.Original), c.kept)
			}
			if left, _ := s.claimFiles(); len(left) != 0 {
				t.Errorf("claims left in tmp/: %v", left)
			}
			grepSpool(t, s, secret)
			if again, err := s.RecoverClaims(); err != nil || len(again) != 0 {
				t.Errorf("second recovery: %d claims, %v", len(again), err)
			}
		})
	}

	// Daemons that run as an ordinary user cannot read a file its owner
	// made unreadable (mode 000); the old init failed its recovery at
	// every start ("permission denied").
	t.Run("unreadable by a non-root init", func(t *testing.T) {
		sp := spoolOf(t, other)
		asUser(t, other, func() error {
			s := sp.As(Init) // makes tmp/init/ as the daemon's user
			jid, err := s.NextJID()
			if err != nil {
				return err
			}
			p := filepath.Join(s.tmp, fmt.Sprintf("%s%s.%d.job.yaml", claimPrefix, jid, time.Now().UnixNano()))
			if err := os.WriteFile(p, []byte(validJob), 0); err != nil {
				return err
			}
			claims, err := s.RecoverClaims()
			if err != nil || len(claims) != 1 || !strings.Contains(claims[0].Refused, "permission denied") || claims[0].UID != other {
				return fmt.Errorf("RecoverClaims: %v, %v; want one claim refused for permission denied", claims, err)
			}
			r := claims[0].Rejection(claims[0].Refused)
			if err := s.Move(r, Submitted, Rejected, "refused"); err != nil {
				return err
			}
			if left, _ := s.claimFiles(); len(left) != 0 {
				return fmt.Errorf("claims left in tmp/: %v", left)
			}
			return nil
		})
	})
}

// A submission over MaxJobFile is rejected by size alone: init reads no
// more than the first 4 KiB of it, keeps those, and the reason gives the
// size and the limit.
func TestClaim_TooLarge(t *testing.T) {
	s := newSpool(t).As(Init)
	big := append([]byte(validJob), bytes.Repeat([]byte("# filler\n"), MaxJobFile/9+1)...)
	if err := os.WriteFile(filepath.Join(s.Dir(Submitted), "big.yaml"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := s.Claim("big.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("too large: %d bytes, over the limit of %d bytes (1 MiB)", len(big), MaxJobFile)
	if !strings.Contains(c.Refused, want) || len(c.Data) > oversizeKept || !bytes.HasPrefix(big, c.Data) {
		t.Fatalf("claim of %d bytes: refused %q, %d bytes kept", len(big), c.Refused, len(c.Data))
	}
	if _, err := c.Job(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Job: %v", err)
	}
}

// The job's user is the owner of the file init read, whatever the
// daemon's environment says: the old code named a file of the daemon's own
// uid after $USER.
func TestClaim_OwnerIsTheFiles(t *testing.T) {
	needRoot(t)
	t.Setenv("USER", "mallory")
	s := newSpool(t).As(Init)
	for _, c := range []struct {
		uid  int
		user string
	}{{0, "root"}, {attacker, fmt.Sprintf("uid%d", attacker)}} {
		p := filepath.Join(s.Dir(Submitted), fmt.Sprintf("job%d.yaml", c.uid))
		if err := os.WriteFile(p, []byte(validJob), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, c.uid, c.uid); err != nil {
			t.Fatal(err)
		}
		cl, err := s.Claim(filepath.Base(p))
		if err != nil {
			t.Fatal(err)
		}
		j, err := cl.Job()
		if err != nil {
			t.Fatal(err)
		}
		if j.User != c.user || j.UID == nil || *j.UID != c.uid {
			t.Errorf("file of uid %d: job of %q, uid %v; want %q", c.uid, j.User, j.UID, c.user)
		}
	}
}

// Daemons that run as an ordinary user run only that user's jobs: another
// user's submission (possible if that user may write the spool at all) is
// rejected, saying whose it is and whose the daemons are, and its bytes
// are not kept.
func TestClaim_OtherUserWhenNotRoot(t *testing.T) {
	needRoot(t)
	sp := spoolOf(t, other)
	for name, uid := range map[string]int{"theirs.yaml": attacker, "mine.yaml": other} {
		p := filepath.Join(sp.Dir(Submitted), name)
		if err := os.WriteFile(p, []byte(validJob), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	asUser(t, other, func() error {
		s := sp.As(Init) // makes tmp/init/ as the daemon's user
		claims, errs, err := s.ClaimAll([]string{"mine.yaml", "theirs.yaml"})
		if err != nil || len(errs) != 0 || len(claims) != 2 {
			return fmt.Errorf("ClaimAll: %d claims, %v, %v", len(claims), errs, err)
		}
		mine, theirs := claims[0], claims[1]
		if j, err := mine.Job(); err != nil || *j.UID != other {
			return fmt.Errorf("own submission: %v, %v", j, err)
		}
		want := fmt.Sprintf("submitted by uid%d (uid %d), but these daemons run as uid%d (uid %d) and run only uid%d's jobs",
			attacker, attacker, other, other, other)
		if theirs.Refused != want || theirs.Data != nil {
			return fmt.Errorf("another user's submission: refused %q with %d bytes kept; want %q and none", theirs.Refused, len(theirs.Data), want)
		}
		return nil
	})
}

// A hard link is the linked file itself: its owner is the file's, not the
// linker's. With fs.protected_hardlinks=1 a user may link a file of
// another user's that is world-writable (0 lets them link any file), write
// a job into it and link it into submitted/: init took the file's owner for
// the job's user and ran the job as them; in control/, a link to a file of
// root's was a request from root, which may cancel any job. A file with
// more than one name is refused (a claim, with nothing of it kept) or
// junk (a request).
func TestUntrusted_HardLinkRefused(t *testing.T) {
	needRoot(t)
	s := newSpool(t).As(Init)
	victim := filepath.Join(t.TempDir(), "world-writable")
	if err := os.WriteFile(victim, []byte(validJob), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(victim, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(victim, other, other); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(victim, filepath.Join(s.Dir(Submitted), "job.yaml")); err != nil {
		t.Skipf("the test's temporary directory and the spool: %v", err)
	}
	claims, errs, err := s.ClaimAll([]string{"job.yaml"})
	if err != nil || len(claims) != 1 || len(errs) != 0 {
		t.Fatalf("%d claims, %v, %v", len(claims), errs, err)
	}
	if c := claims[0]; !strings.Contains(c.Refused, "hard link") || c.Data != nil {
		t.Errorf("claim of a hard link: refused %q, %d bytes kept; want it refused, nothing kept", c.Refused, len(c.Data))
	}

	rootFile := filepath.Join(t.TempDir(), "roots")
	if err := os.WriteFile(rootFile, []byte("2026-01-01T00:00:00Z\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(rootFile, filepath.Join(s.Path(DirControl), "cancel.J000001."+fmt.Sprint(attacker))); err != nil {
		t.Fatal(err)
	}
	cs, err := s.Controls()
	if err != nil || len(cs) != 1 || !strings.Contains(cs[0].Junk, "hard link") {
		t.Fatalf("controls %+v, %v; want the link as junk", cs, err)
	}
}
