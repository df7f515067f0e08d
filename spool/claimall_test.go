package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// A batch claim gives consecutive JIDs in the order asked, skips a name
// that vanished (burning nothing twice: the next allocation is still new),
// and reports a bad name without stopping the others.
func TestClaimAll_OrderGapsAndErrors(t *testing.T) {
	s := newSpool(t).As(Init)
	var names []string
	for i := 0; i < 5; i++ {
		n, err := s.Submit(fmt.Sprintf("job%d.yaml", i), []byte(validJob))
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := os.Remove(filepath.Join(s.Dir(Submitted), names[2])); err != nil {
		t.Fatal(err)
	}
	claims, errs, err := s.ClaimAll(append(names, "../escape"))
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 4 {
		t.Fatalf("%d claims, want 4", len(claims))
	}
	if !errors.Is(errs[names[2]], ErrNotFound) || errs["../escape"] == nil || len(errs) != 2 {
		t.Fatalf("errs = %v", errs)
	}
	for i, c := range claims {
		if want := FormatJID(int64(i + 1)); c.JID != want {
			t.Errorf("claim %d has %s, want %s (one block, in the order asked)", i, c.JID, want)
		}
		if j, err := c.Job(); err != nil || j.Name != "particles" {
			t.Errorf("claim %s: job %v, %v", c.JID, j, err)
		}
	}
	next, err := s.NextJID()
	if err != nil || next != FormatJID(5) {
		t.Fatalf("next JID after a block of 4 = %s, %v; want J000005", next, err)
	}
	if left, _ := os.ReadDir(s.Dir(Submitted)); len(left) != 0 {
		t.Fatalf("submitted/ still holds %d files", len(left))
	}
}

func TestNextJIDs_Block(t *testing.T) {
	s := newSpool(t)
	a, err := s.NextJIDs(3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.NextJIDs(2)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(a, b)
	if got != "[J000001 J000002 J000003] [J000004 J000005]" {
		t.Fatalf("blocks %s", got)
	}
	if _, err := s.NextJIDs(0); err == nil {
		t.Fatal("a block of 0 JIDs was allowed")
	}
}

// A submission's name may be as long as the file system allows (255
// bytes), but its claim's name adds the JID and the arrival time: the name
// is shortened there, so that the file is claimed and judged (its report
// names it by its first bytes) rather than left in submitted/ for ever,
// unanswered, with a JID burned at each try.
func TestClaimAll_LongName(t *testing.T) {
	s := newSpool(t).As(Init)
	for _, name := range []string{strings.Repeat("a", 255), strings.Repeat("é", 127)} {
		if err := os.WriteFile(filepath.Join(s.Dir(Submitted), name), []byte(validJob), 0o644); err != nil {
			t.Fatal(err)
		}
		claims, errs, err := s.ClaimAll([]string{name})
		if err != nil || len(claims) != 1 || len(errs) != 0 {
			t.Fatalf("%d claims, errs %v, err %v", len(claims), errs, err)
		}
		c := claims[0]
		if !strings.HasPrefix(name, c.Name) || len(c.Name) < 200 || !utf8.ValidString(c.Name) {
			t.Errorf("claim name %q (%d bytes)", c.Name, len(c.Name))
		}
		j, err := c.Job()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Move(j, Submitted, Queued, "valid"); err != nil {
			t.Fatal(err)
		}
		if left, _ := os.ReadDir(s.Dir(Submitted)); len(left) != 0 {
			t.Fatalf("submitted/ still holds %d files", len(left))
		}
		if again, err := s.RecoverClaims(); err != nil || len(again) != 0 {
			t.Errorf("recovery after the move: %d claims, %v", len(again), err)
		}
	}
}
