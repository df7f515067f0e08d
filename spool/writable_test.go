package spool

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A job runs as the owner of its file, and a request is its owner's; but
// the owner of a file that others may write need not be who wrote it. A
// user who may rename another's 0666 file into submitted/ (it lies in a
// directory the attacker may write, on the spool's file system) wrote a
// job into it, and init ran the job as the file's owner. A file that
// anyone but its owner may write is refused (a claim: rejected, nothing of
// it kept, with how to fix it) or junk (a request), unless the group that
// may write it is the owner's private one (Debian's user private groups,
// where umask 002 makes files 0664).
func TestUntrusted_WritableByOthersRefused(t *testing.T) {
	needRoot(t)
	rootPrivate := privateGroup(0, 0) // root's primary group is named root
	for _, c := range []struct {
		mode     os.FileMode
		uid, gid int
		want     string // "" accepted
	}{
		{0o644, other, other, ""},
		{0o600, other, other, ""},
		{0o666, other, other, "writable by every user (mode 0666)"},
		{0o602, other, other, "writable by every user (mode 0602)"},
		{0o664, other, other, fmt.Sprintf("writable by the members of group gid %d (mode 0664)", other)}, // no such user: no private group
		{0o620, other, other, fmt.Sprintf("writable by the members of group gid %d (mode 0620)", other)},
		{0o664, 0, other, fmt.Sprintf("writable by the members of group gid %d (mode 0664)", other)}, // not root's primary group
		{0o664, 0, 0, ""}, // root's private group
	} {
		t.Run(fmt.Sprintf("%04o_%d_%d", c.mode, c.uid, c.gid), func(t *testing.T) {
			if c.uid == 0 && c.gid == 0 && !rootPrivate {
				t.Skip("root's primary group is not one named root here")
			}
			s := newSpool(t).As(Init)
			p := filepath.Join(s.Dir(Submitted), "job.yaml")
			writeOwned(t, p, []byte(validJob), c.mode, c.uid, c.gid)
			claims, errs, err := s.ClaimAll([]string{"job.yaml"})
			if err != nil || len(claims) != 1 || len(errs) != 0 {
				t.Fatalf("%d claims, %v, %v", len(claims), errs, err)
			}
			cl := claims[0]
			j, err := cl.Job()
			if c.want == "" {
				if err != nil || *j.UID != c.uid {
					t.Fatalf("a file of uid %d, mode %04o: %v", c.uid, c.mode, err)
				}
				return
			}
			if err == nil || cl.Data != nil || cl.UID != c.uid {
				t.Fatalf("a file of uid %d, mode %04o: accepted (%v), %d bytes kept, uid %d", c.uid, c.mode, err, len(cl.Data), cl.UID)
			}
			want := "job.yaml: " + c.want + ", so someone other than its owner may have written it, and it would be taken as its owner's: " +
				"submit a fresh copy that only you may write (msched submit FILE writes one)"
			if got := err.(*ParseError).Detail(); got != want {
				t.Errorf("reason:\n%s\nwant:\n%s", got, want)
			}
		})
	}

	// A POSIX ACL may give write to anyone whatever the group: the group
	// bits are then its mask.
	t.Run("acl", func(t *testing.T) {
		s := newSpool(t).As(Init)
		p := filepath.Join(s.Dir(Submitted), "job.yaml")
		writeOwned(t, p, []byte(validJob), 0o644, 0, 0)
		if err := unix.Setxattr(p, aclXattr, aclGivingWrite(attacker), 0); err != nil {
			t.Skipf("no ACLs here: %v", err)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o664 {
			t.Fatalf("with the ACL: %v %v; want mode 0664", fi.Mode(), err)
		}
		c, err := s.Claim("job.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(c.Refused, "through its access control list (mode 0664)") {
			t.Errorf("a file uid %d may write by its ACL: refused %q", attacker, c.Refused)
		}
	})

	t.Run("control", func(t *testing.T) {
		s := newSpool(t)
		dir := s.Path(DirControl)
		body := ControlBody(Cancel, "J000001", time.Now())
		writeOwned(t, filepath.Join(dir, fmt.Sprintf("cancel.J000001.%d", other)), body, 0o666, other, other)
		writeOwned(t, filepath.Join(dir, fmt.Sprintf("cancel.J000002.%d", other)), body, 0o664, other, other)
		cs, err := s.Controls()
		if err != nil || len(cs) != 2 {
			t.Fatalf("controls %+v, %v", cs, err)
		}
		for _, c := range cs {
			if !strings.Contains(c.Junk, "writable by") || c.UID != other {
				t.Errorf("%s: junk %q from uid %d; want it junk, writable by others, from uid %d", c.File(), c.Junk, c.UID, other)
			}
		}
	})
}

// What msched writes into submitted/ and control/ (Submit,
// RequestCancel) passes, whatever the umask.
func TestUntrusted_OwnWritersPass(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	s := newSpool(t)
	if _, j := submitAndClaim(t, s, "job.yaml", validJob); *j.UID != os.Geteuid() {
		t.Errorf("Submit's file: uid %d", *j.UID)
	}
	if err := s.RequestCancel("J000001"); err != nil {
		t.Fatal(err)
	}
	if cs, err := s.Controls(); err != nil || len(cs) != 1 || cs[0].Junk != "" {
		t.Errorf("RequestCancel's file: %+v, %v", cs, err)
	}
}

// SubmitAs's file (the web page's resubmission, as root, of another
// user's job) passes too, whatever the umask, and is that user's.
func TestUntrusted_SubmitAsPasses(t *testing.T) {
	needRoot(t)
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	s := newSpool(t)
	ticket, err := s.SubmitAs("resubmit.yaml", []byte(validJob), other)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Claim(ticket)
	if err != nil {
		t.Fatal(err)
	}
	if j, err := c.Job(); err != nil || *j.UID != other {
		t.Errorf("SubmitAs's file: %v", err)
	}
}

// writeOwned makes path a file of uid and gid with data and mode (not cut
// by the umask).
func writeOwned(t *testing.T, path string, data []byte, mode os.FileMode, uid, gid int) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // after chown, which clears set-id bits
		t.Fatal(err)
	}
}

// aclGivingWrite is the system.posix_acl_access value of an ACL that gives
// uid read and write: owner rw, uid rw, group r, mask rw, others r (the
// kernel's format: a version, then tag, permissions and id for each entry,
// little-endian, sorted by tag).
func aclGivingWrite(uid int) []byte {
	const (
		version  = 2
		userObj  = 0x01
		user     = 0x02
		groupObj = 0x04
		mask     = 0x10
		others   = 0x20
		noID     = 0xffffffff
	)
	b := binary.LittleEndian.AppendUint32(nil, version)
	for _, e := range []struct {
		tag, perm uint16
		id        uint32
	}{{userObj, 6, noID}, {user, 6, uint32(uid)}, {groupObj, 4, noID}, {mask, 6, noID}, {others, 4, noID}} {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}

// privateGroup's answers are kept per (uid, gid) when the user and group
// have entries, whichever the answer; a uid without one is asked again
// (it may be added).
func TestPrivateGroup_Cached(t *testing.T) {
	uid := os.Getuid()
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		t.Skipf("uid %d has no entry here: %v", uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		t.Skipf("primary gid %q", u.Gid)
	}
	for _, k := range [][2]int{{uid, gid}, {uid, other}, {other, other}} {
		privateGroups.Delete(k)
	}
	for _, c := range []struct {
		uid, gid int
		cached   bool
	}{{uid, gid, true}, {uid, other, true}, {other, other, false}} {
		want := privateGroup(c.uid, c.gid)
		p, ok := privateGroups.Load([2]int{c.uid, c.gid})
		if ok != c.cached || ok && p.(bool) != want {
			t.Errorf("(%d, %d): answer %v, cached %v %v; want cached %v", c.uid, c.gid, want, p, ok, c.cached)
		}
		if again := privateGroup(c.uid, c.gid); again != want {
			t.Errorf("(%d, %d): %v, then %v", c.uid, c.gid, want, again)
		}
	}
	if privateGroup(uid, other) || privateGroup(other, other) {
		t.Error("a group that is not the user's primary one, or a user without an entry, taken for a private group")
	}
}

// BenchmarkPrivateGroup is the check a group-writable file costs: two
// lookups in the user and group databases, or the cached answer.
func BenchmarkPrivateGroup(b *testing.B) {
	uid, gid := os.Getuid(), os.Getgid()
	b.Run("lookup", func(b *testing.B) {
		for b.Loop() {
			privateGroups.Delete([2]int{uid, gid})
			privateGroup(uid, gid)
		}
	})
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			privateGroup(uid, gid)
		}
	})
}
