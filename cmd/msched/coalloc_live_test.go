package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"msched/examples/testbed"
	"msched/hoststat"
)

// TestMultiHost_CoallocatedJob is issue 15's live acceptance: on the
// testbed's four ssh hosts split into three clusters (wa: ws1, ws2; wb:
// ws3; wc: ws4), fpfs places a three-component unordered job with its
// components on three distinct clusters; the job learns them from its
// environment and host file, and its report lists them.
func TestMultiHost_CoallocatedJob(t *testing.T) {
	t.Setenv("MSCHED_POLICY", "fpfs")
	bed := testbed.Start(t)
	hs, err := hoststat.LoadHosts(bed.HostsFile)
	if err != nil {
		t.Fatal(err)
	}
	cluster := map[string]string{"ws1": "wa", "ws2": "wa", "ws3": "wb", "ws4": "wc"}
	var b strings.Builder
	for _, h := range hs {
		if c, ok := cluster[h.Name]; ok {
			fmt.Fprintf(&b, "- {name: %s, arch: %s, cluster: %s, address: %q}\n", h.Name, h.Arch, c, h.Address)
		}
	}
	file := filepath.Join(bed.Dir, "coalloc-hosts.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startSiteOn(t, bed, file)
	alice := s.bed.AddUser(t, "alice")

	// No state of these clusters holds four components, or two of 2.
	for _, body := range []string{"components: [1, 1, 1, 1]", "components: [2, 2]"} {
		f := filepath.Join(alice.Home, "bad.yaml")
		os.WriteFile(f, []byte("command: [true]\n"+body+"\n"), 0o644)
		os.Chown(f, alice.UID, alice.GID)
		if out, err := s.as(alice, "submit", f); err == nil || !strings.Contains(out, "the hosts file can never hold it") {
			t.Errorf("submit %s: %v\n%s", body, err, out)
		}
	}

	s.submitAs(t, alice, "co", "name: co\ncomponents: [1, 2, 1]\nrequest: unordered\n"+
		"command: [sh, -c, 'echo \"sizes=$MSCHED_COMPONENTS clusters=$MSCHED_CLUSTERS user=$(id -un)\"; cat \"$MSCHED_HOSTFILE\"']\n")
	r := s.waitRecord(t, "co")
	rep := s.report(t, r, alice)
	if r.State != "exited" || r.ExitStatus == nil || *r.ExitStatus != 0 {
		t.Fatalf("co: %s, exit %v, %s\n%s", r.State, r.ExitStatus, r.Reason, rep)
	}
	m := regexp.MustCompile(`sizes=1,2,1 clusters=(\w+),(\w+),(\w+) user=` + regexp.QuoteMeta(alice.Name) + "\n").FindStringSubmatch(rep)
	if m == nil {
		t.Fatalf("report lacks the job's components from its environment:\n%s", rep)
	}
	got := m[1:]
	if got[1] != "wa" { // the only cluster of two hosts
		t.Errorf("component 2 (2 hosts) on cluster %s, want wa", got[1])
	}
	if s := slices.Sorted(slices.Values(got)); !slices.Equal(s, []string{"wa", "wb", "wc"}) {
		t.Errorf("components on clusters %v, want three distinct", got)
	}
	// The host file: each host's line names its cluster and component.
	for k, c := range got {
		if n := strings.Count(rep, fmt.Sprintf(" # cluster=%s component=%d\n", c, k+1)); n != []int{1, 2, 1}[k] {
			t.Errorf("host file has %d lines of component %d on %s:\n%s", n, k+1, c, rep)
		}
	}
	// The report lists them, one line each.
	for k, c := range got {
		re := fmt.Sprintf(`(?m)^(Components:)?\s+%d: cluster %s, ws\d(, ws\d)? \(%d\)$`, k+1, c, []int{1, 2, 1}[k])
		if !regexp.MustCompile(re).MatchString(rep) {
			t.Errorf("report lacks component %d on %s (%s):\n%s", k+1, c, re, rep)
		}
	}
}
