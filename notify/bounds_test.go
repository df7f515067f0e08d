package notify

import (
	"fmt"
	"strings"
	"testing"

	"msched/spool"
)

// Issue 13: a 200 MB job file was embedded whole in a 213 MB report (and
// its mail). A report quotes at most QuoteLimit bytes of a rejected file,
// ReasonLimit of its reason and FieldLimit of each field, however large
// what the user wrote: the job file in rejected/ (at most
// init.max_job_bytes) keeps the rest until the reaper removes it.
func TestRender_BoundsWhatItQuotes(t *testing.T) {
	original := "name: big\ncommand: [a]\n" + strings.Repeat("# a line of the file\n", spool.MaxJobFile/21)
	huge := strings.Repeat("x", 1<<20)
	j := &spool.Job{JID: "J000003", Name: huge, User: "dave", Workdir: huge,
		Command:  []string{"./prog", huge},
		Reason:   strings.Repeat("big.yaml:2: something is wrong here\n", 1000),
		Original: original}
	r := Render(j, t.TempDir())
	if max := 2*(QuoteLimit+ReasonLimit) + 4*FieldLimit + 1<<10; len(r.Body) > max {
		t.Errorf("a report of %d bytes, over %d", len(r.Body), max)
	}
	if len(r.Subject) > SubjectLimit {
		t.Errorf("a subject of %d bytes", len(r.Subject))
	}
	want := fmt.Sprintf("The submitted file, as received (only its start: it has %d bytes):\n\n    name: big\n    command: [a]\n    # a line of the file\n", len(original))
	if !strings.Contains(r.Body, want) {
		t.Errorf("body lacks %q:\n%.600s", want, r.Body)
	}
	if !strings.Contains(r.Body, "Reason:      big.yaml:2: something is wrong here\n") {
		t.Errorf("body lacks the reason:\n%.600s", r.Body)
	}
	if !strings.HasSuffix(strings.TrimRight(r.Body, "\n"), "…") {
		t.Errorf("the quote does not say it was cut:\n…%s", r.Body[len(r.Body)-200:])
	}
}
