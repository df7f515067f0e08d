package spool

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"msched/atomicfile"
)

// msched submit learns the JID init gives its file: the watch on tmp/,
// set before the file is submitted, sees init's claim of the ticket, and
// of an array its members once reserved; without the watch, FindTicket
// finds the claim, or the queued job by its first history note.
func TestTicket_TheClaimNamesTheJID(t *testing.T) {
	s := newSpool(t)
	in := s.As(Init)
	w, err := s.WatchClaims()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	a, err := s.SubmitTicket("dir/job.yaml", []byte(validJob))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.SubmitTicket("job.yaml", []byte(validJob))
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "job.yaml" || b.Name != "job.yaml-2" || a.Arrived.IsZero() {
		t.Fatalf("tickets %+v and %+v", a, b)
	}
	arr, err := s.SubmitTicket("sweep.yaml", []byte("command: [a]\narray: 1-3\n"))
	if err != nil {
		t.Fatal(err)
	}
	claims, _, err := in.ClaimAll([]string{a.Name, b.Name, arr.Name})
	if err != nil || len(claims) != 3 {
		t.Fatal(claims, err)
	}
	if err := in.ReserveArray(claims[2], 3); err != nil {
		t.Fatal(err)
	}
	tickets := []Ticket{a, b, arr}
	seen := map[int]TicketClaim{}
	for deadline := time.Now().Add(20 * time.Second); len(seen) < 3 || seen[2].Members == nil; {
		cs, lost, err := w.Claims(context.Background(), 100*time.Millisecond)
		if err != nil || lost {
			t.Fatal(err, lost)
		}
		for _, c := range cs {
			for i, tk := range tickets {
				if s.Claimed(tk, c) {
					seen[i] = c
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("seen %v", seen)
		}
	}
	for i, c := range claims {
		if seen[i].JID != c.JID {
			t.Errorf("ticket %s: claim seen %+v, init's %s", tickets[i].Name, seen[i], c.JID)
		}
	}
	if !slices.Equal(seen[2].Members, claims[2].Members) {
		t.Errorf("array members seen %v, want %v", seen[2].Members, claims[2].Members)
	}
	// The claim of another file of the same name and arrival, but not the
	// same file, is not a's.
	other := seen[0]
	other.Arrived = other.Arrived.Add(time.Nanosecond)
	if s.Claimed(a, other) {
		t.Error("a claim of another arrival taken for a's")
	}

	// Without the watch: the claim, then the job once queued.
	if c, ok, err := s.FindTicket(a, 0); !ok || err != nil || c.JID != claims[0].JID {
		t.Errorf("FindTicket of a claim: %v %v %v", c, ok, err)
	}
	batch := in.Batch()
	for i, c := range claims {
		j, err := c.Job()
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			_, err = batch.QueueArray(c, j)
		} else {
			err = batch.Move(j, Submitted, Queued, "")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := batch.Commit(); err != nil {
		t.Fatal(err)
	}
	if c, ok, err := s.FindTicket(b, 0); !ok || err != nil || c.JID != claims[1].JID || c.Members != nil {
		t.Errorf("FindTicket of a queued job: %v %v %v", c, ok, err)
	}
	if c, ok, err := s.FindTicket(arr, 0); !ok || err != nil || c.JID != claims[2].JID || !slices.Equal(c.Members, claims[2].Members) {
		t.Errorf("FindTicket of a queued array: %v %v %v", c, ok, err)
	}
	if _, ok, _ := s.FindTicket(b, 5); ok {
		t.Error("FindTicket looked below the JID it was told to look above")
	}
	if _, ok, _ := s.FindTicket(Ticket{Name: "job.yaml", Arrived: a.Arrived.Add(time.Second)}, 0); ok {
		t.Error("found a ticket never submitted")
	}
}

// --after, --afterok and --array add their fields to a job file, keeping
// its text; a file that sets one itself is an error naming it.
func TestAddSubmitFields(t *testing.T) {
	in := "# a sweep\ncommand: [a] # the program\n"
	out, err := AddSubmitFields([]byte(in), SubmitFields{After: []string{"J000010"}, AfterOK: []string{"J000011", "J000012"}, Array: "1-10%2"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), in) {
		t.Errorf("the user's text was not kept:\n%s", out)
	}
	j, err := ParseSubmission("job.yaml", out)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(j.After, []string{"J000010"}) || !slices.Equal(j.AfterOK, []string{"J000011", "J000012"}) || j.Array != "1-10%2" {
		t.Errorf("added %q %q %q:\n%s", j.After, j.AfterOK, j.Array, out)
	}
	flow := "{command: [a]}"
	if out, err = AddSubmitFields([]byte(flow), SubmitFields{Array: "3"}); err != nil {
		t.Fatal(err)
	} else if j, err := ParseSubmission("job.yaml", out); err != nil || j.Array != "3" {
		t.Errorf("a flow mapping: %v\n%s", err, out)
	}
	if _, err := AddSubmitFields([]byte("command: [a]\narray: 1-3\n"), SubmitFields{Array: "1-4"}); err == nil || !strings.Contains(err.Error(), "sets array: itself; give it there or as --array, not both") {
		t.Errorf("a clash: %v", err)
	}
	if same, err := AddSubmitFields([]byte(in), SubmitFields{}); err != nil || string(same) != in {
		t.Errorf("nothing to add: %q, %v", same, err)
	}
}

func TestReadJobStream_Bounded(t *testing.T) {
	if b, err := ReadJobStream(strings.NewReader("command: [a]\n"), "stdin", 100); err != nil || string(b) != "command: [a]\n" {
		t.Errorf("%q %v", b, err)
	}
	if _, err := ReadJobStream(strings.NewReader(strings.Repeat("#", 101)), "stdin", 100); err == nil || !strings.Contains(err.Error(), "stdin: too large: over the limit of 100 bytes") {
		t.Errorf("101 bytes: %v", err)
	}
}

// init may claim a file between submit's rename of it into submitted/ and
// submit's fstat of it, and its rename sets the ctime again: the ctime
// submit reads is then not the arrival init recorded. The ticket knows the
// arrival only within [the ctime before submit's rename, the one read],
// and still finds the claim and, later, the queued job (CI once waited a
// minute for a JID init had given at once). The test makes submit's steps
// itself (fstat, rename, fstat, lstat: CommitNoReplace's and submit's), so
// that init can claim between them.
func TestTicket_ClaimedBeforeSubmitLooked(t *testing.T) {
	s := newSpool(t)
	in := s.As(Init)
	dir := s.Dir(Submitted)
	f, err := os.OpenFile(filepath.Join(dir, ".job.yaml.tmp"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, atomicfile.Perm)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(validJob); err != nil {
		t.Fatal(err)
	}
	before, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond) // past a tick of the file system's clock
	if err := os.Rename(f.Name(), filepath.Join(dir, "job.yaml")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	claims, _, err := in.ClaimAll([]string{"job.yaml"}) // before submit's fstat
	if err != nil || len(claims) != 1 {
		t.Fatal(claims, err)
	}
	after, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	now, _ := os.Lstat(filepath.Join(dir, "job.yaml"))
	tk := ticketOf("job.yaml", before, after, now)
	c, ok := ticketClaim(claims[0].file)
	if !ok {
		t.Fatalf("claim file %q", claims[0].file)
	}
	if !tk.Arrived.After(c.Arrived) {
		t.Skipf("init's rename did not set the ctime (ticket %+v, claim arrived %v): this file system has no such race", tk, c.Arrived)
	}
	if tk.earliest.IsZero() || tk.earliest.After(c.Arrived) {
		t.Fatalf("ticket %+v: want a bound below the claim's arrival %v", tk, c.Arrived)
	}
	if exact := (Ticket{Name: tk.Name, Arrived: tk.Arrived, ino: tk.ino}); s.Claimed(exact, c) {
		t.Error("the ctime read after init's rename matched the claim: the test does not race")
	}
	if !s.Claimed(tk, c) {
		t.Errorf("ticket %+v: the claim %+v not taken for its own", tk, c)
	}
	early := c
	early.Arrived = tk.earliest.Add(-time.Nanosecond)
	if s.Claimed(tk, early) {
		t.Error("a claim of an arrival before the file was written taken for the ticket's")
	}
	if got, ok, err := s.FindTicket(tk, 0); !ok || err != nil || got.JID != claims[0].JID {
		t.Errorf("FindTicket of the claim: %v %v %v", got, ok, err)
	}
	j, err := claims[0].Job()
	if err != nil {
		t.Fatal(err)
	}
	batch := in.Batch()
	if err := batch.Move(j, Submitted, Queued, ""); err != nil {
		t.Fatal(err)
	}
	if err := batch.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.FindTicket(tk, 0); !ok || err != nil || got.JID != claims[0].JID || !got.Arrived.Equal(c.Arrived) {
		t.Errorf("FindTicket of the queued job: %v %v %v (arrived %v)", got, ok, err, c.Arrived)
	}

	// Still in submitted/ after the fstat: the ctime it has then is what
	// init will see, exactly, whether or not it changed since the fstat.
	for _, now := range []os.FileInfo{before, after} {
		want := ctimeOf(now.Sys().(*syscall.Stat_t))
		if tk := ticketOf("job.yaml", before, before, now); !tk.earliest.IsZero() || !tk.Arrived.Equal(want) {
			t.Errorf("a file still in place: ticket %+v, want arrival %v exactly", tk, want)
		}
	}
}
