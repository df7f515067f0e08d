package spool

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestJID_Format(t *testing.T) {
	for _, tc := range []struct {
		s  string
		ok bool
	}{{"J000001", true}, {"J123456", true}, {"J1234567", true}, {"J000000", false}, {"J00001", false},
		{"J0000001", false}, {"j000001", false}, {"J00000a", false}, {"J-00001", false}, {"", false}} {
		if got := ValidJID(tc.s); got != tc.ok {
			t.Errorf("ValidJID(%q) = %v, want %v", tc.s, got, tc.ok)
		}
	}
	if FormatJID(123) != "J000123" || FormatJID(1234567) != "J1234567" {
		t.Error(FormatJID(123), FormatJID(1234567))
	}
}

func TestJID_UniqueUnderConcurrency(t *testing.T) {
	s := newSpool(t)
	const workers, each = 8, 25
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each goroutine opens the spool itself, like separate daemons.
			sp, err := Open(s.Root())
			if err != nil {
				t.Error(err)
				return
			}
			for i := 0; i < each; i++ {
				jid, err := sp.NextJID()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[jid] {
					t.Errorf("JID %s handed out twice", jid)
				}
				seen[jid] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != workers*each {
		t.Fatalf("got %d JIDs, want %d", len(seen), workers*each)
	}
	// No gaps when nothing crashed: the counter is exact.
	for i := 1; i <= workers*each; i++ {
		if !seen[FormatJID(int64(i))] {
			t.Errorf("missing %s", FormatJID(int64(i)))
		}
	}
}

func TestJID_NeverReusedAcrossReopen(t *testing.T) {
	s := newSpool(t)
	a, _ := s.NextJID()
	s2, err := Open(s.Root())
	if err != nil {
		t.Fatal(err)
	}
	b, err := s2.NextJID()
	if err != nil {
		t.Fatal(err)
	}
	if a != "J000001" || b != "J000002" {
		t.Errorf("got %s then %s", a, b)
	}
}

func TestJID_MissingCounterResumesAfterHighest(t *testing.T) {
	s := newSpool(t)
	j := place(t, s, Finished) // J000001
	j.JID = "J000517"
	writeJob(t, s, Rejected, j)
	if err := os.WriteFile(filepath.Join(s.Dir(Submitted), "J999999"), []byte("x"), 0o644); err != nil {
		t.Fatal(err) // a submitter's name, not a JID: must not count
	}
	if err := os.Remove(filepath.Join(s.Path(DirDB), jidFile)); err != nil {
		t.Fatal(err)
	}
	got, err := s.NextJID()
	if err != nil || got != "J000518" {
		t.Errorf("after losing the counter got %s, %v; want J000518", got, err)
	}
}

func TestJID_DamagedCounterIsRefused(t *testing.T) {
	s := newSpool(t)
	if err := os.WriteFile(filepath.Join(s.Path(DirDB), jidFile), []byte("12x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if jid, err := s.NextJID(); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("damaged counter gave %q, %v", jid, err)
	}
}

// TestJID_HelperProcess allocates JIDs when run as a child of
// TestJID_UniqueAcrossProcesses.
func TestJID_HelperProcess(t *testing.T) {
	dir := os.Getenv("SPOOL_JID_HELPER")
	if dir == "" {
		t.Skip("helper for TestJID_UniqueAcrossProcesses")
	}
	s, err := Open(dir)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	for i := 0; i < 50; i++ {
		jid, err := s.NextJID()
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println(jid)
	}
	os.Exit(0)
}

func TestJID_UniqueAcrossProcesses(t *testing.T) {
	s := newSpool(t)
	const procs = 3
	outs := make([]bytes.Buffer, procs)
	cmds := make([]*exec.Cmd, procs)
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^TestJID_HelperProcess$")
		cmds[i].Env = append(os.Environ(), "SPOOL_JID_HELPER="+s.Root())
		cmds[i].Stdout = &outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int{}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("helper %d: %v\n%s", i, err, outs[i].String())
		}
		sc := bufio.NewScanner(&outs[i])
		for sc.Scan() {
			if line := sc.Text(); ValidJID(line) {
				seen[line]++
			} else if strings.HasPrefix(line, "ERR") {
				t.Fatal(line)
			}
		}
	}
	if len(seen) != procs*50 {
		t.Errorf("got %d distinct JIDs from %d processes × 50", len(seen), procs)
	}
	for jid, n := range seen {
		if n > 1 {
			t.Errorf("%s handed out %d times", jid, n)
		}
	}
}

func TestParseJID(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"J000010", "J000010"}, {"J10", "J000010"}, {"j000010", "J000010"}, {"10", "J000010"},
		{"0000010", "J000010"}, {"J1234567", "J1234567"}, {"1", "J000001"}, {"J999999999999999", "J999999999999999"},
	} {
		got, err := ParseJID(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseJID(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "J", "j", "0", "J000000", "-1", "+1", " 10", "10 ", "J1a", "K10", "JJ10", "J-10",
		"1e3", "0x10", "J1000000000000000", "99999999999999999999999"} {
		if got, err := ParseJID(in); err == nil {
			t.Errorf("ParseJID(%q) = %q, want an error", in, got)
		} else if !strings.Contains(err.Error(), "is not a job id") {
			t.Errorf("ParseJID(%q): %v", in, err)
		}
	}
}

// JIDs order as their numbers, past the padded width too, where string
// order would put J1000000 before J999999.
func TestCompareJID(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"J000001", "J000002", -1},
		{"J000002", "J000001", 1},
		{"J000007", "J000007", 0},
		{"J999999", "J1000000", -1},
		{"J1000000", "J999999", 1},
	} {
		if got := CompareJID(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareJID(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if JIDLess(tc.a, tc.b) != (tc.want < 0) {
			t.Errorf("JIDLess(%s, %s) = %v", tc.a, tc.b, !(tc.want < 0))
		}
	}
}
