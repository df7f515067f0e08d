package spool

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseArray(t *testing.T) {
	for _, tc := range []struct {
		in    string
		want  []int
		limit int
	}{
		{"1-5", []int{1, 2, 3, 4, 5}, 0},
		{"1-100%10", nil, 10},
		{"1,3,5-9", []int{1, 3, 5, 6, 7, 8, 9}, 0},
		{"9,0,4", []int{0, 4, 9}, 0},
		{"0-30:10%2", []int{0, 10, 20, 30}, 2},
		{"7", []int{7}, 0},
		{"0-9999", nil, 0},
	} {
		a, err := ParseArray(tc.in)
		if err != nil {
			t.Errorf("ParseArray(%q): %v", tc.in, err)
			continue
		}
		if tc.want != nil && !slices.Equal(a.Indexes, tc.want) || a.Limit != tc.limit {
			t.Errorf("ParseArray(%q) = %v %%%d, want %v %%%d", tc.in, a.Indexes, a.Limit, tc.want, tc.limit)
		}
	}
	if a, _ := ParseArray("1-100%10"); len(a.Indexes) != 100 || a.Indexes[99] != 100 {
		t.Errorf("1-100: %d indexes", len(a.Indexes))
	}
	for _, tc := range []struct{ in, want string }{
		{"", "want indexes and ranges"},
		{"%5", "want indexes and ranges"},
		{"1-10%0", "after % want how many members may run at once"},
		{"1-10%x", "after % want how many members"},
		{"5-1", `"5-1" is not a range from a lower index to a higher one`},
		{"1-", `"1-" is not a range`},
		{"a", `"a" is not an index or a range`},
		{"-3", `"-3" is not an index or a range`},
		{"1,,2", `"1,,2": "" is not an index`},
		{"1000001", `"1000001" is not an index or a range (indexes are 0 to 1000000`},
		{"1-10001", "more than 10000 members"},
		{"0-5000,6000-12000", "more than 10000 members"},
		{"1-5,3", `"1-5,3": index 3 is given twice`},
		{"5:2", `"5:2": a step goes after a range`},
		{"1-9:0", `a step goes after a range`},
	} {
		if _, err := ParseArray(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseArray(%q): %v, want an error saying %s", tc.in, err, tc.want)
		}
	}
}

// array:, after: and afterok: in a job file: read, JIDs made canonical,
// mistakes refused with their field and line; the members' fields are
// msched's.
func TestParse_ArrayAndDependencies(t *testing.T) {
	j, err := ParseSubmission("job.yaml", []byte("command: [a]\narray: 1-100%10\nafter: [10, J11]\nafterok: [j000012]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if j.Array != "1-100%10" || !slices.Equal(j.After, []string{"J000010", "J000011"}) || !slices.Equal(j.AfterOK, []string{"J000012"}) {
		t.Errorf("got array %q after %q afterok %q", j.Array, j.After, j.AfterOK)
	}
	for _, tc := range []struct{ data, want string }{
		{"command: [a]\narray: 1-0\n", `job.yaml:2: array: "1-0" is not a range`},
		{"command: [a]\narray: [1, 2]\n", "job.yaml:2: array: want a string"},
		{"command: [a]\nafter: 10\n", "job.yaml:2: after: want a list of strings"},
		{"command: [a]\nafterok:\n  - 10\n  - ten\n", `job.yaml:4: afterok[1]: "ten" is not a job id`},
		{"command: [a]\narray_job: J000001\n", "job.yaml:2: array_job: set by msched"},
		{"command: [a]\narray_index: 3\n", "job.yaml:2: array_index: set by msched"},
	} {
		if _, err := ParseSubmission("job.yaml", []byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v\nwant %s", tc.data, err, tc.want)
		}
	}
	// Too many members for their size: refused where the bytes are known.
	big := "command: [a]\narray: 0-9999\n" + strings.Repeat("#", 8<<10) + "\n"
	if _, err := newSpool(t).CheckSubmission("big.yaml", []byte(big)); err == nil || !strings.Contains(err.Error(), "big.yaml: array: 10000 members of a") {
		t.Errorf("an array of 10,000 8 KiB job files: %v", err)
	}
}

// claimArray submits an array job file and claims it, as init does.
func claimArray(t *testing.T, s *Spool, array string) (*Claim, *Job) {
	t.Helper()
	return submitAndClaim(t, s, "sweep.yaml", "name: sweep\ncommand: [a]\narray: \""+array+"\"\n")
}

func queuedMembers(t *testing.T, s *Spool) map[string]int {
	t.Helper()
	es, err := s.List(Queued)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range es {
		j, err := s.Read(Queued, e.Name)
		if err != nil {
			t.Fatal(err)
		}
		if j.ArrayIndex == nil {
			t.Fatalf("%s: no array_index", e.Name)
		}
		out[j.JID] = *j.ArrayIndex
	}
	return out
}

// One claim becomes one job per index, under JIDs reserved in the claim's
// name before any is written: the claim's own, then consecutive ones.
func TestArray_OneSubmissionManyJobs(t *testing.T) {
	s := newSpool(t).As(Init)
	c, j := claimArray(t, s, "3,5-7%2")
	if err := s.ReserveArray(c, 4); err != nil {
		t.Fatal(err)
	}
	want := []string{c.JID, FormatJID(2), FormatJID(3), FormatJID(4)}
	if !slices.Equal(c.Members, want) {
		t.Fatalf("members %v, want %v", c.Members, want)
	}
	if left, _ := s.ClaimedJIDs(); !slices.Equal(left, want) {
		t.Errorf("the claim holds %v, want %v", left, want)
	}
	if next, _ := s.NextJID(); next != FormatJID(5) {
		t.Errorf("next JID %s: the members' were given again", next)
	}
	b := s.Batch()
	queued, err := b.QueueArray(c, j)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(queued, want) {
		t.Errorf("queued %v", queued)
	}
	got := queuedMembers(t, s)
	if fmt.Sprint(got) != fmt.Sprint(map[string]int{want[0]: 3, want[1]: 5, want[2]: 6, want[3]: 7}) {
		t.Errorf("queued/ holds %v", got)
	}
	m, err := s.Read(Queued, want[2])
	if err != nil {
		t.Fatal(err)
	}
	if m.ArrayJob != c.JID || m.Array != "3,5-7%2" || m.Name != "sweep" || m.History[len(m.History)-1].Note != "array J000001, index 6" {
		t.Errorf("member %s: array_job %q array %q name %q history %v", m.JID, m.ArrayJob, m.Array, m.Name, m.History)
	}
	if left, _ := s.ClaimedJIDs(); len(left) != 0 {
		t.Errorf("claims left: %v", left)
	}
	if junk := junk(t, s); len(junk) != 0 {
		t.Errorf("left: %v", junk)
	}
}

// A crash part-way through an array's members: init judges the claim
// again and writes the members that are missing, under the JIDs reserved,
// and none twice; members that have run and been reaped meanwhile count
// as written. A claim whose members are all written is removed.
func TestArray_RecoveryWritesTheMissingMembersOnce(t *testing.T) {
	s := newSpool(t).As(Init)
	c, j := claimArray(t, s, "1-5")
	if err := s.ReserveArray(c, 5); err != nil {
		t.Fatal(err)
	}
	b := s.Batch()
	if _, err := b.QueueArray(c, j); err != nil {
		t.Fatal(err)
	}
	// The crash: the batch never committed, its claim is still there, and
	// only members 1 and 2 had been written; member 3 has run and left.
	for _, jid := range c.Members[2:] {
		if err := os.Remove(filepath.Join(s.Dir(Queued), jid)); err != nil {
			t.Fatal(err)
		}
	}
	reaped := func(_ context.Context, jids []string) (map[string]bool, error) {
		return map[string]bool{c.Members[2]: true}, nil
	}
	claims, done, err := s.RecoverClaimsWith(context.Background(), reaped)
	if err != nil || len(claims) != 1 || len(done) != 0 {
		t.Fatalf("recovery: %d claims, done %v, err %v", len(claims), done, err)
	}
	rc := claims[0]
	if !slices.Equal(rc.Members, c.Members) {
		t.Fatalf("recovered members %v, want %v", rc.Members, c.Members)
	}
	rj, err := rc.Job()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ReserveArray(rc, 5); err != nil { // already reserved: nothing new
		t.Fatal(err)
	}
	b = s.Batch()
	queued, err := b.QueueArray(rc, rj)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(queued, c.Members[3:]) {
		t.Errorf("queued again %v, want %v", queued, c.Members[3:])
	}
	if got := queuedMembers(t, s); len(got) != 4 {
		t.Errorf("queued/ holds %v, want every member but the reaped one", got)
	}
	if left, _ := s.ClaimedJIDs(); len(left) != 0 {
		t.Errorf("claims left: %v", left)
	}

	// Every member written (or reaped), the claim not yet removed: it is.
	c2, j2 := claimArray(t, s, "1-3")
	if err := s.ReserveArray(c2, 3); err != nil {
		t.Fatal(err)
	}
	b = s.Batch()
	if _, err := b.QueueArray(c2, j2); err != nil {
		t.Fatal(err)
	}
	claims, _, err = s.RecoverClaimsWith(context.Background(), reaped)
	if err != nil || len(claims) != 0 {
		t.Fatalf("recovery of a claim whose members are all queued: %d claims, %v", len(claims), err)
	}
	if left, _ := s.ClaimedJIDs(); len(left) != 0 {
		t.Errorf("claims left: %v", left)
	}
}

// A member that cannot be written (a full disk, here a directory in its
// place): the members written stay queued and the claim stays too, through
// the batch's Commit, so that recovery writes the rest under their JIDs.
func TestArray_FailedMemberKeepsTheClaim(t *testing.T) {
	s := newSpool(t).As(Init)
	c, j := claimArray(t, s, "1-4")
	if err := s.ReserveArray(c, 4); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(s.Dir(Queued), c.Members[2])
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := s.Batch()
	queued, err := b.QueueArray(c, j)
	if err == nil || !slices.Equal(queued, c.Members[:2]) {
		t.Fatalf("queued %v, err %v; want the first two and an error", queued, err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if left, _ := s.ClaimedJIDs(); !slices.Equal(left, c.Members) {
		t.Fatalf("after the commit the claim holds %v, want %v", left, c.Members)
	}
	if err := os.RemoveAll(blocker); err != nil {
		t.Fatal(err)
	}
	none := func(context.Context, []string) (map[string]bool, error) { return nil, nil }
	claims, _, err := s.RecoverClaimsWith(context.Background(), none)
	if err != nil || len(claims) != 1 {
		t.Fatalf("recovery: %d claims, %v", len(claims), err)
	}
	rj, err := claims[0].Job()
	if err != nil {
		t.Fatal(err)
	}
	b = s.Batch()
	if queued, err = b.QueueArray(claims[0], rj); err != nil || !slices.Equal(queued, c.Members[2:]) {
		t.Fatalf("recovery queued %v, %v; want %v", queued, err, c.Members[2:])
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := queuedMembers(t, s); len(got) != 4 {
		t.Errorf("queued/ holds %v", got)
	}
	if left, _ := s.ClaimedJIDs(); len(left) != 0 {
		t.Errorf("claims left: %v", left)
	}
}

// HeldReason reads what sched published: a job held for its dependencies
// by its JID, an array member held by its array's limit from the first
// member held on.
func TestPublished_HeldReason(t *testing.T) {
	p := &PublishedSchedule{Held: []PublishedHold{
		{Reason: "waiting for J000003", JIDs: []string{"J000010", "J000011"}},
		{Reason: "array J000020: 2 of its jobs running, at most 2 at once", ArrayJob: "J000020", From: "J000023"},
	}}
	member := func(jid string) *Job { return &Job{JID: jid, ArrayJob: "J000020"} }
	for _, tc := range []struct {
		j    *Job
		want string
	}{
		{&Job{JID: "J000010"}, "waiting for J000003"},
		{&Job{JID: "J000012"}, ""},
		{member("J000022"), ""},
		{member("J000023"), "array J000020: 2 of its jobs running, at most 2 at once"},
		{member("J000100"), "array J000020: 2 of its jobs running, at most 2 at once"},
		{&Job{JID: "J000030", ArrayJob: "J000029"}, ""},
	} {
		if got := p.HeldReason(tc.j); got != tc.want {
			t.Errorf("HeldReason(%s of %q) = %q, want %q", tc.j.JID, tc.j.ArrayJob, got, tc.want)
		}
	}
	if (*PublishedSchedule)(nil).HeldReason(&Job{JID: "J000010"}) != "" {
		t.Error("a nil schedule holds nothing")
	}
}
