package spool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func claimOf(t *testing.T, s *Spool, name string, data []byte) *Claim {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.Dir(Submitted), name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := s.Claim(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A rejected submission's wrapper salvages its name and notify address
// without decoding the user's bytes: a file that makes yaml.v3's decoder
// panic (a merge key, found by FuzzParse) was a crash of init, at every
// start, since init judges a claim again after a crash.
func TestRejection_SalvagesWithoutDecoding(t *testing.T) {
	s := newSpool(t)
	for _, data := range []string{"env: {<<, {0}}", "name: x\n<<: {a: 1}\n{b: 2}: 3\n", "a: &x [*x]\n"} {
		c := claimOf(t, s, "merge.yaml", []byte(data))
		if _, err := c.Job(); err == nil {
			t.Fatalf("%q accepted", data)
		}
		j := c.Rejection("bad")
		if j.Name != "merge.yaml" && j.Name != "x" {
			t.Errorf("%q: name %q", data, j.Name)
		}
	}
	c := claimOf(t, s, "named.yaml", []byte("name: hello\nnotify: alice@example.org\ncommand: 5\n"))
	if j := c.Rejection("bad"); j.Name != "hello" || j.Notify != "alice@example.org" {
		t.Errorf("salvaged name %q, notify %q; want hello, alice@example.org", j.Name, j.Notify)
	}
	c = claimOf(t, s, "long.yaml", []byte("name: "+strings.Repeat("n", 5000)+"\n"))
	if j := c.Rejection("bad"); j.Name != "long.yaml" {
		t.Errorf("a 5,000-byte name salvaged: %d bytes", len(j.Name))
	}
}

// init reads a claim within the configured bound (init.max_job_bytes), not
// the default one.
func TestClaim_ReadsWithinTheConfiguredBound(t *testing.T) {
	s := newSpool(t)
	if err := s.SetMaxJobFile(4096); err != nil {
		t.Fatal(err)
	}
	c := claimOf(t, s, "big.yaml", []byte("command: [\"true\"]\n#"+strings.Repeat("x", 5000)+"\n"))
	if c.Refused == "" {
		t.Fatalf("a 5,000-byte file claimed whole under a bound of 4,096 bytes")
	}
	if len(c.Data) > 4096 {
		t.Errorf("kept %d bytes of it", len(c.Data))
	}
}
