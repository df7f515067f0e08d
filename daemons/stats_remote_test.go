package daemons

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"msched/examples/testbed"
	"msched/hoststat"
	"msched/spool"
)

// statsFor runs a stats daemon on hosts until the test ends and returns
// its store and the spool's db/ (where db/health/ is).
func statsFor(t *testing.T, hosts []hoststat.Host, edit func(*Stats)) (*hoststat.Store, string) {
	t.Helper()
	sp := newTestSpool(t)
	store, err := hoststat.OpenStore(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	d := &Stats{Env: testEnv(t, sp), Hosts: hosts, Store: store}
	edit(d)
	stop := startDaemon(t, d.Run)
	t.Cleanup(func() { stop(); store.Close() })
	return store, sp.Path(spool.DirDB)
}

func downNow(t *testing.T, db string) map[string]hoststat.DownInfo {
	t.Helper()
	d, err := hoststat.Down(db)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// An ssh host is sampled over ssh with the jobs' settings; when its sshd
// stops, its hosts are marked down with ssh's message within a bounded
// time; when it starts again they are marked up, and sampled again. A host
// whose key is not the known one is down from the start.
func TestStats_SSHHostDownAndBack(t *testing.T) {
	sshd := startSSHD(t, "127.0.0.2", "127.0.0.3")
	addr := fmt.Sprintf("ssh://%s:%d", sshd.Addr, sshd.Port)
	hosts := []hoststat.Host{
		{Name: "ws/a", Arch: "x", Cluster: "ws", Address: addr},
		{Name: "ws/b", Arch: "x", Cluster: "ws", Address: addr},
		{Name: "stranger", Arch: "x", Cluster: "other", Address: fmt.Sprintf("ssh://127.0.0.3:%d", sshd.Port)},
		{Name: "here", Arch: "x", Cluster: "here"},
	}
	const interval = 300 * time.Millisecond
	store, db := statsFor(t, hosts, func(d *Stats) {
		// A timeout far above a login's time on a loaded machine: a probe
		// cut short marks ws/a down before sshd stops.
		d.SSH, d.Interval, d.Retry, d.Timeout = sshd.SSH, interval, 100*time.Millisecond, 15*time.Second
	})

	eventually(t, "ws/a and ws/b sampled, the stranger down", func() bool {
		_, down := downNow(t, db)["stranger"]
		return len(store.History("ws/a")) > 0 && len(store.History("ws/b")) > 0 && down
	})
	s := store.History("ws/a")[0]
	local, err := hoststat.Local()
	if err != nil {
		t.Fatal(err)
	}
	// The same machine, seen through ssh: the same boot, a sane load.
	if s.NCPU < 1 || s.Load1 < 0 || s.Load1 > 1000 || math.Abs(s.Uptime-local.Uptime) > 60 || time.Since(s.Time) > waitBound {
		t.Errorf("sample over ssh %+v; local %+v", s, local)
	}
	if s != store.History("ws/b")[0] {
		t.Errorf("hosts of one address got different samples")
	}
	down := downNow(t, db)
	if r := down["stranger"].Reason; !strings.Contains(r, "Host key verification failed") {
		t.Errorf("stranger: %q", r)
	}
	if _, ok := down["ws/a"]; ok || len(store.History("stranger")) != 0 {
		t.Errorf("down %v, stranger sampled %d times", down, len(store.History("stranger")))
	}

	sshd.Stop()
	// The next round finds it: an interval, and a refused connection. A
	// probe under way when sshd stopped may fail otherwise ("Connection
	// reset by peer", its connection dropped from the listen queue) and
	// mark them down first; the round after says refused.
	var reason string
	took := eventuallyWithin(t, progressBound, "ws/a and ws/b down, the connection refused", func() bool {
		d := downNow(t, db)
		if r := d["ws/a"].Reason; r != reason {
			reason = r
			t.Logf("ws/a down: %q", r)
		}
		return strings.Contains(reason, "Connection refused") && strings.Contains(d["ws/b"].Reason, "Connection refused")
	})
	t.Logf("down %v after sshd stopped", took)
	if !strings.HasPrefix(reason, "ssh root@127.0.0.2:") || strings.Contains(reason, "ssh: ") {
		t.Errorf("reason %q", reason)
	}

	n := len(store.History("ws/a"))
	sshd.Start()
	eventually(t, "ws/a and ws/b up and sampled again", func() bool {
		d := downNow(t, db)
		_, a := d["ws/a"]
		_, b := d["ws/b"]
		return !a && !b && len(store.History("ws/a")) > n
	})
	if _, ok := downNow(t, db)["stranger"]; !ok {
		t.Error("the stranger's key is still not known; it must stay down")
	}
	if len(store.History("here")) == 0 {
		t.Error("the local host was not sampled")
	}
}

// A host the run daemon marks down (a job could not reach it) is probed
// again within seconds, not after the interval, and marked up if it
// answers.
func TestStats_DownHostsProbedSoon(t *testing.T) {
	sshd := startSSHD(t, "127.0.0.2")
	hosts := []hoststat.Host{{Name: "ws/a", Arch: "x", Address: fmt.Sprintf("ssh://root@%s:%d", sshd.Addr, sshd.Port)}}
	store, db := statsFor(t, hosts, func(d *Stats) {
		d.SSH, d.Interval, d.Retry = sshd.SSH, time.Hour, 100*time.Millisecond
	})
	eventually(t, "ws/a sampled", func() bool { return len(store.History("ws/a")) > 0 })
	marked := time.Now()
	if err := hoststat.MarkDown(db, "ws/a", "ssh: connect to host 127.0.0.2: Connection timed out (as run saw it)", marked); err != nil {
		t.Fatal(err)
	}
	// Within the retry's time, generously bounded, not the interval's hour.
	eventuallyWithin(t, progressBound, "ws/a up again and sampled (the retry is 100 ms, the interval an hour)", func() bool {
		_, down := downNow(t, db)["ws/a"]
		return !down && len(store.History("ws/a")) > 1
	})
	t.Logf("up %v after it was marked down", time.Since(marked))
}

// fakeScontrol writes an scontrol that answers as the cluster whose
// "slurm.conf" holds up, down or hang says, with nodes n1 (idle, load 0.5)
// and n2 (not responding), and returns its directory and the conf.
func fakeScontrol(t *testing.T) (bin, conf string) {
	t.Helper()
	dir := t.TempDir()
	bin, conf = filepath.Join(dir, "bin"), filepath.Join(dir, "slurm.conf")
	script := `#!/bin/sh
state=$(cat "$SLURM_CONF")
case $state in hang) exec sleep 120 ;; esac
case "$1 $state" in
"ping up") echo 'Slurmctld(primary) at ctl is UP' ;;
"ping down") printf 'Slurmctld(primary) at ctl is DOWN\n*****\n** RESTORE SLURMCTLD DAEMON TO SERVICE **\n*****\n'; exit 1 ;;
"show up")
	echo 'NodeName=n1 Arch=x86_64 CPUAlloc=0 CPUTot=2 CPULoad=0.50 NodeAddr=127.0.0.1 OS=Linux 6.1.0 #1 SMP State=IDLE BootTime=2026-11-24T01:55:37 Partitions=debug'
	echo 'NodeName=n2 Arch=x86_64 CPUAlloc=0 CPUTot=2 CPULoad=N/A State=DOWN* BootTime=None Reason=Not responding [slurm@2026-11-24T02:15:00]' ;;
*) echo "scontrol: error: unexpected $*" >&2; exit 1 ;;
esac
`
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "scontrol"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	setCluster(t, conf, "up")
	return bin, conf
}

func setCluster(t *testing.T, conf, state string) {
	t.Helper()
	if err := os.WriteFile(conf, []byte(state+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A Slurm cluster is probed through its controller: nodes named in the
// hosts file are sampled, or down when Slurm says so; a controller that
// answers DOWN, or not at all, takes down every host of the cluster; one
// that answers again brings them back.
func TestStats_SlurmCluster(t *testing.T) {
	bin, conf := fakeScontrol(t)
	addr := "slurm://" + conf
	hosts := []hoststat.Host{
		{Name: "n1", Arch: "x", Cluster: "c1", Address: addr},
		{Name: "n2", Arch: "x", Cluster: "c1", Address: addr},
		{Name: "slot", Arch: "x", Cluster: "c1", Address: addr}, // not a node's name
	}
	// The timeout is far above what the fake scontrol (sh and cat) takes
	// on a loaded machine: one probe cut short marks every host down. The
	// hang below is far above the timeout.
	store, db := statsFor(t, hosts, func(d *Stats) {
		d.SlurmBin, d.Interval, d.Retry, d.Timeout = bin, 200*time.Millisecond, 50*time.Millisecond, 5*time.Second
	})
	eventually(t, "n1 sampled, n2 down", func() bool {
		_, down := downNow(t, db)["n2"]
		return len(store.History("n1")) > 0 && down
	})
	if s := store.History("n1")[0]; s.Load1 != 0.5 || s.NCPU != 2 || s.Uptime <= 0 || s.Idle != hoststat.NoUser {
		t.Errorf("n1 sample %+v", s)
	}
	d := downNow(t, db)
	if !strings.Contains(d["n2"].Reason, "not responding") || len(d) != 1 || len(store.History("slot")) != 0 {
		t.Errorf("down %+v; slot sampled %d times", d, len(store.History("slot")))
	}

	for _, tc := range []struct{ state, reason string }{
		{"down", "slurm: the controller does not answer: Slurmctld(primary) at ctl is DOWN"},
		{"hang", "slurm: scontrol ping: no answer within 5s"},
	} {
		setCluster(t, conf, tc.state)
		eventually(t, "every host down: "+tc.state, func() bool {
			d := downNow(t, db)
			for _, h := range hosts {
				if d[h.Name].Reason != tc.reason {
					return false
				}
			}
			return true
		})
	}
	setCluster(t, conf, "up")
	eventually(t, "n1 and slot up, n2 down as Slurm says", func() bool {
		d := downNow(t, db)
		_, n1 := d["n1"]
		_, slot := d["slot"]
		return !n1 && !slot && strings.Contains(d["n2"].Reason, "not responding")
	})
}

// Against the testbed's real Slurm cluster c1 (slurmctld, slurmd and
// munged from Debian's packages): its node is sampled and up.
func TestStats_SlurmTestbed(t *testing.T) {
	bed := testbed.Start(t)
	hosts := []hoststat.Host{{Name: "c1n1", Arch: "x", Cluster: "c1", Address: "slurm://" + bed.SlurmConf["c1"]}}
	store, db := statsFor(t, hosts, func(d *Stats) { d.Interval = 200 * time.Millisecond })
	// slurmd reports its load a moment after it registers.
	eventually(t, "c1n1 sampled", func() bool { return len(store.History("c1n1")) > 0 })
	s := store.History("c1n1")[0]
	if s.NCPU < 1 || s.Load1 < 0 || s.Uptime <= 0 {
		t.Errorf("sample %+v", s)
	}
	if d := downNow(t, db); len(d) != 0 {
		t.Errorf("down %+v", d)
	}
}

// A login refused to the probe's user ("Permission denied", such as root's
// where sshd has PermitRootLogin no) is no sign that the host is down: sshd
// answered, and the jobs log in as their own users. As the run daemon does
// for a job's login (launch: Result.Unreachable), the stats daemon leaves
// the host up, with no sample and a warning; it marked it down, for as long
// as the login was refused, and sched placed nothing there.
func TestStats_SSHLoginRefusedIsNotDown(t *testing.T) {
	sshd := startSSHD(t, "127.0.0.2")
	hosts := []hoststat.Host{
		{Name: "ws/a", Arch: "x", Address: fmt.Sprintf("ssh://no-such-user-msched@%s:%d", sshd.Addr, sshd.Port)},
		{Name: "ws/b", Arch: "x", Address: fmt.Sprintf("ssh://%s:%d", sshd.Addr, sshd.Port)},
	}
	store, db := statsFor(t, hosts, func(d *Stats) {
		d.SSH, d.Interval, d.Retry = sshd.SSH, 100*time.Millisecond, 50*time.Millisecond
	})
	eventually(t, "ws/b sampled twice", func() bool { return len(store.History("ws/b")) > 1 })
	if d := downNow(t, db); len(d) != 0 {
		t.Errorf("down: %+v", d)
	}
	if n := len(store.History("ws/a")); n != 0 {
		t.Errorf("ws/a sampled %d times", n)
	}
}
