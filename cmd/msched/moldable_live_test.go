package main

import (
	"regexp"
	"testing"
	"time"

	"msched/spool"
)

// A moldable job's report says the size chosen and why (issue 15), live:
// the five daemons on 8 local slots, under the default policy and under
// scojo-p, which sizes moldable jobs.
func TestLive_MoldableReportSaysTheSize(t *testing.T) {
	for _, tc := range []struct{ policy, want string }{
		{"ga-plan", `(?m)^Placement:   2 of 2–8 hosts: its minimum; this policy does not size moldable jobs`},
		{"scojo-p", `(?m)^Placement:   [2-8] of 2–8 hosts: predicted load \d+\.\d+ over its run`},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			sp, hosts := testSpool(t, 8)
			cfg := testConfig(t, sp)
			cfg.Policy = tc.policy
			log, _ := logFile(t, "daemons")
			p := startInProcess(t, cfg, hosts, log, daemonNames...)
			defer p.stop(t)
			submit(t, sp, "mold.yaml", "name: mold\ncommand: [true]\nhosts: {min: 2, max: 8}\nwalltime: 10m\n")
			rs := waitRecords(t, sp, 1, 30*time.Second)
			if len(rs) != 1 || rs[0].State != "exited" {
				t.Fatalf("records %+v", rs)
			}
			rep := readReport(t, sp.Path(spool.DirReports), rs[0].JID)
			if !regexp.MustCompile(tc.want).MatchString(rep) {
				t.Errorf("report lacks %q:\n%s", tc.want, rep)
			}
			// Without a walltime the estimate is never said to be one
			// (scojo-p's EASY once read the sized job's run time as the
			// user's walltime).
			submit(t, sp, "nowall.yaml", "name: nowall\ncommand: [true]\nhosts: {min: 2, max: 8}\n")
			rs = waitRecords(t, sp, 2, 30*time.Second)
			if len(rs) != 2 {
				t.Fatalf("records %+v", rs)
			}
			rep = readReport(t, sp.Path(spool.DirReports), rs[1].JID)
			if m := regexp.MustCompile(`(?m)^Estimate:.*$`).FindString(rep); m == "" || regexp.MustCompile(`^Estimate:\s+walltime`).MatchString(m) {
				t.Errorf("a job without a walltime: %q\n%s", m, rep)
			}
		})
	}
}
