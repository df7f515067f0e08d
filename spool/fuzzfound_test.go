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

	// yaml.v3 panicked decoding a merge key beside a mapping as a key: a
	// 14-byte submission stopped init (and its recovery, at every start).
	for _, data := range []string{"env: {<<, {0}}", "command: [a]\n<<: {name: x}\n"} {
		if got := parseProblem(t, data); !strings.HasSuffix(got, "a merge key (<<): not allowed in a job file; write the fields out") {
			t.Errorf("%q: got %s", data, got)
		}
		if _, err := Parse("job.yaml", []byte(data)); err == nil {
			t.Errorf("%q: Parse accepted a merge key", data)
		}
	}
	// A key "<<" that is quoted is a plain string, no merge.
	if got := parseProblem(t, "command: [a]\nenv: {\"<<\": x}\n"); !strings.Contains(got, "env.<<: not a variable name") {
		t.Errorf("a quoted <<: %s", got)
	}
}
