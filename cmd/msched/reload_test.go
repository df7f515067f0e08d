package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"msched/hoststat"
	"msched/spool"
)

// SIGHUP reloads the configuration and the hosts file: an invalid
// configuration is refused with the daemons going on as they were; a valid
// one, with a second host in the hosts file, restarts the daemons, which
// then run a job on two hosts that one host could not hold.
func TestReload_SIGHUP(t *testing.T) {
	sp, hosts := testSpool(t, 1)
	_, logf := logFile(t, "up")
	conf := filepath.Join(sp.Root(), "msched.yaml")
	if err := os.WriteFile(conf, []byte("policy: easy\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	up := startMsched(t, sp, logf, "up", "up", "--web", "off")
	defer func() { up.cmd.Process.Kill(); <-up.done }()
	logHas := func(what string, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			b, _ := os.ReadFile(logf.Name())
			if strings.Contains(string(b), what) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log within %v", what, within)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// One job on the one host: the daemons run.
	submit(t, sp, "one.yaml", "name: one\ncommand: [\"true\"]\n")
	waitReports(t, sp, 1, 30*time.Second)

	// An invalid configuration: refused, and the daemons go on.
	if err := os.WriteFile(conf, []byte("policy: easy\nplan:\n  objective: nonsense\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	up.cmd.Process.Signal(syscall.SIGHUP)
	logHas("configuration not reloaded", 10*time.Second)
	submit(t, sp, "two.yaml", "name: two\ncommand: [\"true\"]\n")
	waitReports(t, sp, 2, 30*time.Second)

	// A second host and a valid configuration: reloaded.
	hosts = append(hosts, hoststat.Host{Name: "slot1", Arch: "generic", Cluster: "test", Address: "local"})
	if err := hoststat.WriteHosts(filepath.Join(sp.Path(spool.DirDB), "hosts.yaml"), hosts); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte("policy: conservative\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	up.cmd.Process.Signal(syscall.SIGHUP)
	logHas("hosts=2 policy=conservative", 20*time.Second)
	out := filepath.Join(t.TempDir(), "nhosts")
	submit(t, sp, "wide.yaml", fmt.Sprintf("name: wide\nhosts: {count: 2}\ncommand: [\"/bin/sh\", \"-c\", \"echo $MSCHED_NHOSTS > %s\"]\n", out))
	waitReports(t, sp, 3, 30*time.Second)
	if b, err := os.ReadFile(out); err != nil || strings.TrimSpace(string(b)) != "2" {
		t.Fatalf("the two-host job wrote %q (%v), want 2", b, err)
	}
	up.signal(t, syscall.SIGTERM)
}
