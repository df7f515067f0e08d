package spool

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
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
