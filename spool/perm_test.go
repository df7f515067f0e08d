package spool

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// mode is a directory's permission and sticky bits.
func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode() & (os.ModePerm | os.ModeSticky)
}

func owner(t *testing.T, p string) int {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid)
}

// Root's spool serves every local user: submitted/ and control/ are sticky
// and writable by all (as /tmp), the rest 0755; a second Create repairs
// modes someone changed. An ordinary user's spool is 0755 throughout.
func TestCreate_Modes(t *testing.T) {
	needRoot(t)
	dir := filepath.Join(t.TempDir(), "spool")
	s, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{}
	for _, d := range layout() {
		want[d] = 0o755
	}
	want[string(Submitted)], want[DirControl] = os.ModeSticky|0o777, os.ModeSticky|0o777
	check := func(when string) {
		for _, d := range layout() {
			if got := mode(t, filepath.Join(s.Root(), d)); got != want[d] {
				t.Errorf("%s: %s is %v, want %v", when, d, got, want[d])
			}
		}
	}
	check("created as root")
	os.Chmod(s.Dir(Submitted), 0o755)
	os.Chmod(s.Path(DirTmp), 0o777)
	os.Chmod(s.Path(DirControl), 0o1733)
	if _, err := Create(dir); err != nil {
		t.Fatal(err)
	}
	check("created again as root")

	// As an ordinary user: its own spool, 0755 (whatever root's umask).
	home := spoolOf(t, other).Root() // only for a directory uid other owns
	asUser(t, other, func() error {
		mine := filepath.Join(home, "mine")
		if err := os.Mkdir(mine, 0o755); err != nil {
			return err
		}
		s, err := Create(mine)
		if err != nil {
			return err
		}
		var bad []string
		for _, d := range layout() {
			fi, err := os.Lstat(filepath.Join(s.Root(), d))
			if err != nil {
				return err
			}
			if m := fi.Mode() & (os.ModePerm | os.ModeSticky); m&^0o755 != 0 {
				bad = append(bad, fmt.Sprintf("%s %v", d, m))
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("an ordinary user's spool: %s; want 0755 or less", strings.Join(bad, ", "))
		}
		return nil
	})
}

// A report written for a job's owner is the owner's alone from its first
// byte: owned by the uid, mode 0600, and no temporary left.
func TestBatch_WriteFileFor(t *testing.T) {
	needRoot(t)
	s := newSpool(t).As(Reaper)
	b := s.Batch()
	dir := s.Path(DirReports)
	if err := b.WriteFileFor(dir, "J000001.txt", []byte("report\n"), attacker); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "J000001.txt")
	if got := mode(t, p); got != PrivatePerm || owner(t, p) != attacker {
		t.Errorf("report: mode %v owner %d; want %v, %d", got, owner(t, p), os.FileMode(PrivatePerm), attacker)
	}
	if b, _ := os.ReadFile(p); string(b) != "report\n" {
		t.Errorf("report: %q", b)
	}
	if j := junk(t, s); len(j) != 0 {
		t.Errorf("left: %v", j)
	}
}

// SubmitAs gives the submission to uid before it appears in submitted/
// (the web page's resubmit, as root); nobody but root may give a file away.
func TestSubmitAs(t *testing.T) {
	needRoot(t)
	s := newSpool(t)
	name, err := s.SubmitAs("job.yaml", []byte(validJob), attacker)
	if err != nil {
		t.Fatal(err)
	}
	if uid := owner(t, filepath.Join(s.Dir(Submitted), name)); uid != attacker {
		t.Errorf("submitted as uid %d, want %d", uid, attacker)
	}
	c, err := s.As(Init).Claim(name)
	if err != nil {
		t.Fatal(err)
	}
	if j, err := c.Job(); err != nil || *j.UID != attacker {
		t.Errorf("claimed: %v %v", j, err)
	}

	sp := spoolOf(t, other)
	asUser(t, other, func() error {
		if _, err := sp.SubmitAs("job.yaml", []byte(validJob), attacker); err == nil {
			return fmt.Errorf("an ordinary user gave a submission to uid %d", attacker)
		}
		if _, err := sp.SubmitAs("job.yaml", []byte(validJob), other); err != nil {
			return fmt.Errorf("as itself: %w", err)
		}
		return nil
	})
	if es, _ := sp.List(Submitted); len(es) != 1 {
		t.Errorf("%d files in submitted/, want the one allowed", len(es))
	}
	if _, err := s.Submit("big.yaml", make([]byte, MaxJobFile+1)); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("submit over MaxJobFile: %v", err)
	}
}
