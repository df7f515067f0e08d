package main

import (
	"bytes"
	"strings"
	"testing"

	"msched/spool"
	"msched/web"
)

// status and history print every user's jobs to whoever lists them, root
// included: a name with control characters (YAML's "\e", "\r", "\n") is
// shown Go-quoted, so it cannot drive the reader's terminal or forge rows;
// the same in a reaped job's record. A plain name is printed as it is.
func TestStatusTable_QuotesControlCharacters(t *testing.T) {
	j, err := spool.ParseSubmission("evil.yaml", []byte("name: \"x\\e]2;owned\\a\\e[2K\\rrunning   J000001  backup  root\\n\"\ncommand: [\"true\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	j.JID, j.User = "J000002", "mallory"
	plain := &spool.Job{JID: "J000003", User: "alice", Name: "nightly build", Command: []string{"true"}}
	var b bytes.Buffer
	if err := writeJobTable(&b, []web.JobView{web.ViewJob(spool.Queued, j), web.ViewJob(spool.Queued, plain)}, false); err != nil {
		t.Fatal(err)
	}
	if err := writeRecord(&b, web.ViewJob(spool.Queued, j)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(out, "\x1b\a\r") {
		t.Fatalf("a user's control characters reach the reader's terminal: %q", out)
	}
	if want := `"x\x1b]2;owned\a\x1b[2K\rrunning   J000001  backup  root\n"`; strings.Count(out, want) != 2 {
		t.Errorf("the name is not shown quoted in the table and the record:\n%s", out)
	}
	if !strings.Contains(out, "  nightly build  ") {
		t.Errorf("a plain name is not printed as it is:\n%s", out)
	}
}
