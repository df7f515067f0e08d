package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"msched/spool"
)

// waitHealth waits until the heartbeats say daemon is in state.
func waitHealth(t *testing.T, sp *spool.Spool, daemon, state string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		hs, err := sp.Health(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hs {
			if h.Daemon == daemon && h.State == state {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not %s within 15 s: %+v", daemon, state, hs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// msched status says which daemons are up, and warns of the others: a
// daemon that stopped cleanly is "stopped", one killed is "down".
func TestStatus_DaemonHealth(t *testing.T) {
	sp, _ := testSpool(t, 1)
	_, logf := logFile(t, "sched")
	status := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(mschedBin, append([]string{"status"}, args...)...)
		cmd.Env = testEnv(sp.Root())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("msched status: %v\n%s", err, out)
		}
		return string(out)
	}
	p := startDaemon(t, sp, "sched", logf)
	waitHealth(t, sp, "sched", spool.HealthUp)
	out := status()
	if !strings.Contains(out, "sched up") || !strings.Contains(out, "warning: run is never") {
		t.Errorf("status with sched alone:\n%s", out)
	}
	p.signal(t, syscall.SIGTERM)
	waitHealth(t, sp, "sched", spool.HealthStopped)

	p = startDaemon(t, sp, "sched", logf)
	waitHealth(t, sp, "sched", spool.HealthUp)
	p.signal(t, syscall.SIGKILL)
	waitHealth(t, sp, "sched", spool.HealthDown)
	var st struct {
		Daemons []daemonRow `json:"daemons"`
	}
	if err := json.Unmarshal([]byte(status("--json")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Daemons) != 5 || st.Daemons[1].Daemon != "sched" || st.Daemons[1].State != spool.HealthDown || st.Daemons[1].PID != p.cmd.Process.Pid {
		t.Errorf("status --json daemons after kill -9 of sched: %+v", st.Daemons)
	}
	if out := status(); !strings.Contains(out, "warning: sched is down: its process is gone") {
		t.Errorf("status after kill -9 of sched:\n%s", out)
	}
}

// A second daemon of a kind (init: nothing else of it fails before the
// lock), which cannot take the lock, never writes its heartbeat: the one
// that runs stays up.
func TestHeartbeat_SecondDaemonLeavesTheFirstsBeat(t *testing.T) {
	sp, _ := testSpool(t, 1)
	_, logf := logFile(t, "sched")
	first := startDaemon(t, sp, "init", logf)
	defer first.signal(t, syscall.SIGTERM)
	waitHealth(t, sp, "init", spool.HealthUp)
	second := startDaemon(t, sp, "init", logf)
	// While it tries, the heartbeat file must never name it.
	deadline := time.After(20 * time.Second)
	for gone := false; !gone; {
		select {
		case <-second.done:
			gone = true
		case <-deadline:
			second.cmd.Process.Kill()
			t.Fatal("a second init on the spool did not give up")
		case <-time.After(5 * time.Millisecond):
		}
		hs, err := sp.Health(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if hs[0].Beat != nil && hs[0].Beat.PID == second.cmd.Process.Pid {
			t.Fatalf("the second init, which cannot take the lock, wrote the heartbeat: %+v", hs[0])
		}
	}
	hs, err := sp.Health(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h.Daemon == "init" && (h.State != spool.HealthUp || h.Beat.PID != first.cmd.Process.Pid) {
			t.Fatalf("after a second init gave up: %s, pid %d; want up, pid %d", h.State, h.Beat.PID, first.cmd.Process.Pid)
		}
	}
}
