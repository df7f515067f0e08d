package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"msched/hoststat"
	"msched/learn"
)

func TestModelAccuracy_JSONAndTable(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "accounting.jsonl")
	hosts := filepath.Join(dir, "hosts.yaml")
	lines := `{"jid":"J1","model":"warwick","hosts":["u1"],"predicted_seconds":100,"actual_seconds":120,"state":"exited","swf_status":1}
{"jid":"J2","model":"warwick","hosts":["u1"],"predicted_seconds":200,"actual_seconds":150,"state":"exited","swf_status":1}
{"jid":"J3","hosts":["u1"],"predicted_seconds":10,"actual_seconds":20,"state":"exited","swf_status":1}
`
	if err := os.WriteFile(log, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hosts, []byte("- {name: u1, arch: SunUltra1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(append([]string{"--spool", dir, "model", "accuracy", "--log", log}, args...))
		t.Setenv("MSCHED_HOSTS", hosts)
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	var got []learn.Stat
	dec := json.NewDecoder(strings.NewReader(run("--json")))
	for dec.More() {
		var s learn.Stat
		if err := dec.Decode(&s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	if len(got) != 2 || got[1].Model != "warwick" || got[1].Arch != "SunUltra1" || got[1].Count != 2 ||
		got[1].MeanError != 15 || got[1].MAPE != 25 || got[0].Model != learn.NoModel {
		t.Errorf("--json: %+v", got)
	}
	table := run()
	if !strings.Contains(table, "warwick") || !strings.Contains(table, "+15.0") || !strings.Contains(table, "25.0") {
		t.Errorf("table:\n%s", table)
	}
}

// Without a hosts file the daemons run jobs on this machine's CPUs, and
// accuracy names those CPUs' architecture, as the daemons' predictions did.
func TestModelAccuracy_LocalHostsWithoutHostsFile(t *testing.T) {
	local, err := hoststat.LocalHosts()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "accounting.jsonl")
	line := fmt.Sprintf(`{"jid":"J1","model":"warwick","hosts":[%q],"predicted_seconds":100,"actual_seconds":80,"state":"exited","swf_status":1}`+"\n", local[0].Name)
	if err := os.WriteFile(log, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runMsched(t, context.Background(), nil, "model", "accuracy", "--log", log, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var s learn.Stat
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if s.Model != "warwick" || s.Arch != local[0].Arch || s.Count != 1 {
		t.Errorf("got %+v, want warwick on %q", s, local[0].Arch)
	}
}
