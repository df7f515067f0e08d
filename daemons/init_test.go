package daemons

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"msched/spool"
)

func TestInit_QueuesValidAndRejectsInvalid(t *testing.T) {
	sp := newTestSpool(t)
	good := "name: good\ncommand: [\"true\"]\nhosts: {count: 2}\n"
	bad := "name: bad\ncomand: [\"true\"]\nwalltime: soon\n"
	if _, err := sp.Submit("good.yaml", []byte(good)); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Submit("bad.yaml", []byte(bad)); err != nil {
		t.Fatal(err)
	}
	startDaemon(t, (&Init{testEnv(t, sp)}).Run)
	eventually(t, "both judged", func() bool {
		return jobsIn(t, sp, spool.Queued) == 1 && jobsIn(t, sp, spool.Rejected) == 1
	})
	if n := jobsIn(t, sp, spool.Submitted); n != 0 {
		t.Errorf("%d files left in submitted/", n)
	}
	q, _ := sp.List(spool.Queued)
	j, err := sp.Read(spool.Queued, q[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	if j.Name != "good" || !spool.ValidJID(j.JID) || j.User == "" || j.SubmittedAt.IsZero() {
		t.Errorf("queued job lacks what init adds: %+v", j)
	}
	r, _ := sp.List(spool.Rejected)
	rj, err := sp.Read(spool.Rejected, r[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	if rj.JID == j.JID {
		t.Errorf("two jobs got JID %s", j.JID)
	}
	for _, want := range []string{`bad.yaml:2: unknown field "comand"`, "bad.yaml:3: walltime"} {
		if !strings.Contains(rj.Reason, want) {
			t.Errorf("reason %q lacks %q", rj.Reason, want)
		}
	}
	if strings.HasPrefix(rj.Reason, "spool:") {
		t.Errorf("reason carries the package prefix: %q", rj.Reason)
	}
	if rj.Original != bad || rj.Name != "bad" {
		t.Errorf("rejection lost the user's bytes or name: %q %q", rj.Original, rj.Name)
	}
}

// A claim left in tmp/ by an init that died mid-judgement is judged at the
// next start under the JID it already has, and removed.
//
// The claims left are counted once init has stopped: this test used to
// ask RecoverClaims while init ran, a second init acting on init's claims,
// which removed the claim while init's own move was between writing the
// job and removing its claim (2 runs in 50 failed; see
// TestInit_RecoveryToleratesClaimRemovedUnderIt for init's side of it).
func TestInit_RecoversClaims(t *testing.T) {
	sp := newTestSpool(t)
	name, err := sp.Submit("job.yaml", []byte("command: [\"true\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := sp.As(spool.Init).Claim(name)
	if err != nil {
		t.Fatal(err)
	}
	env, lb := loggedEnv(t, sp)
	stop := startDaemon(t, (&Init{env}).Run)
	j := inState(t, sp, c.JID, spool.Queued)
	eventually(t, "the claim removed", func() bool { return len(claimsLeft(t, sp)) == 0 })
	stop()
	if j.History[0].State != spool.Submitted || j.History[len(j.History)-1].State != spool.Queued {
		t.Errorf("history %+v", j.History)
	}
	if n := lb.count("level=ERROR"); n != 0 {
		t.Errorf("init logged %d errors", n)
	}
	claims, err := sp.As(spool.Init).RecoverClaims()
	if err != nil || len(claims) != 0 {
		t.Errorf("claims left: %v %v", claims, err)
	}
}

// Init holds the bytes of every claim it has taken and not yet judged (up
// to spool.MaxJobFile each): it claims a burst of submissions initBatch at a
// time, so that a user who fills submitted/ with thousands of large files
// cannot make it hold them all in memory at once. The claims in tmp/ are
// those bytes: there are never more than initBatch.
func TestInit_ClaimsABurstInBatches(t *testing.T) {
	sp := newTestSpool(t)
	const n = 5 * initBatch
	for i := 0; i < n; i++ {
		if _, err := sp.Submit(fmt.Sprintf("job%03d.yaml", i), []byte("command: [\"true\"]\n")); err != nil {
			t.Fatal(err)
		}
	}
	tmp := sp.Path(spool.DirTmp)
	most := 0
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			default:
			}
			es, _ := os.ReadDir(tmp)
			claims := 0
			for _, e := range es {
				if strings.HasPrefix(e.Name(), "claim.") {
					claims++
				}
			}
			most = max(most, claims)
		}
	}()
	startDaemon(t, (&Init{testEnv(t, sp)}).Run)
	eventually(t, "all queued", func() bool { return jobsIn(t, sp, spool.Queued) == n })
	close(stop)
	<-watched
	if most > initBatch {
		t.Errorf("%d claims in tmp/ at once; want at most %d", most, initBatch)
	}
}
