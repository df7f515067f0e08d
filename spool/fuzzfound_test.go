package spool

import (
	"strings"
	"testing"
)

// What FuzzParse found, each turned into a case that failed before its fix
// (the inputs are in testdata/fuzz/FuzzParse too).
func TestParse_FuzzFound(t *testing.T) {
	// hosts with an empty arch was accepted as "some hosts", then written
	// as hosts: {}, which no daemon can read back: init's move of it
	// failed at every start (encode refuses what Parse would reject).
	got := parseProblem(t, "command: [a]\nhosts:\n  arch:\n")
	if want := "job.yaml:2: hosts: want count, or min and max, or an arch or cluster"; got != want {
		t.Errorf("hosts: {arch: }: got %s, want %s", got, want)
	}
	j, err := ParseSubmission("job.yaml", []byte("command: [a]\nhosts: {arch: x86_64}\n"))
	if err != nil || j.Hosts.Arch != "x86_64" {
		t.Fatalf("hosts: {arch: x86_64}: %v", err)
	}
	b, err := j.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("job.yaml", b); err != nil || !strings.Contains(string(b), "arch: x86_64") {
		t.Errorf("written as\n%s\nread back: %v", b, err)
	}
}
