package policy

import (
	"regexp"
	"testing"
	"time"
)

// A moldable job's placement says its size and how it was chosen; a rigid
// job's says nothing.
func TestPolicies_MoldableWhy(t *testing.T) {
	for _, tc := range []struct{ policy, want string }{
		{"easy", `^1 of 1–4 hosts: its minimum; this policy does not size moldable jobs`},
		{"ga-plan", `^1 of 1–4 hosts: its minimum`},
		{"ga-xms", `^[1-4] of 1–4 hosts: chosen by the GA: the host count in the plan of lowest cost, predicted \d`},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			h := newHarness(t, tc.policy, Options{Seed: 1, Generations: 5})
			pl := h.plan(Snapshot{Now: t0, Hosts: hosts(4),
				Queue: []QueuedJob{job("M", 0, 1, 4, time.Minute), job("R", 1, 2, 2, time.Minute)}})
			got := map[string]string{}
			for _, p := range append(pl.StartNow, pl.Later...) {
				got[p.Job] = p.Why
			}
			if !regexp.MustCompile(tc.want).MatchString(got["M"]) {
				t.Errorf("moldable M: why %q, want %q", got["M"], tc.want)
			}
			if got["R"] != "" {
				t.Errorf("rigid R: why %q, want none", got["R"])
			}
		})
	}
}
