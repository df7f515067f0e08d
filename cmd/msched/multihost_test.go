package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"msched/examples/testbed"
	"msched/hoststat"
	"msched/spool"
)

// These tests run msched as its users would on the testbed
// (examples/testbed): the daemons as root, separate `msched daemon X`
// processes, jobs submitted with `msched submit` by ordinary users, on the
// bed's ssh hosts (cluster ws), with mpirun over them, and on its Slurm
// clusters (c1, c2). They need root and the testbed's packages; without
// them they skip, unless CI is set.

// multiBound bounds every wait of these tests: a Slurm job is scheduled
// within a few seconds, an ssh job starts in well under one.
const multiBound = 90 * time.Second

// site is a running msched on a testbed.
type site struct {
	bed   *testbed.Bed
	sp    *spool.Spool
	hosts string // the hosts file the daemons read
	log   *os.File
	procs map[string]*daemonProc
}

// startSite starts a bed and the five daemons on it with the bed's hosts.
func startSite(t *testing.T) *site {
	t.Helper()
	bed := testbed.Start(t)
	return startSiteOn(t, bed, bed.HostsFile)
}

// start starts (or restarts) daemon d.
func (s *site) start(t *testing.T, d string) {
	t.Helper()
	cmd := exec.Command(mschedBin, "daemon", d, "--config", s.bed.ConfigFile)
	cmd.Env = append(testEnv(s.sp.Root()), "MSCHED_HOSTS="+s.hosts, "MSCHED_STATS_INTERVAL=2s")
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &daemonProc{name: d, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	s.procs[d] = p
}

// as runs msched with args as user u, in u's home directory; it returns
// the combined output and the error.
func (s *site) as(u testbed.User, args ...string) (string, error) {
	cmd := exec.Command(mschedBin, append(args, "--config", s.bed.ConfigFile)...)
	cmd.Dir = u.Home
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + u.Home, "USER=" + u.Name, "MSCHED_HOSTS=" + s.hosts}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID)}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// submitAs writes body as name.yaml in u's home, owned by u, and submits
// it with `msched submit` run as u.
func (s *site) submitAs(t *testing.T, u testbed.User, name, body string) {
	t.Helper()
	f := filepath.Join(u.Home, name+".yaml")
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(f, u.UID, u.GID); err != nil {
		t.Fatal(err)
	}
	if out, err := s.as(u, "submit", f); err != nil {
		t.Fatalf("msched submit as %s: %v\n%s", u.Name, err, out)
	}
}

// waitRecord waits for the accounting record of the job named name.
func (s *site) waitRecord(t *testing.T, name string) record {
	t.Helper()
	deadline := time.Now().Add(multiBound)
	for time.Now().Before(deadline) {
		for _, r := range readRecords(t, s.sp) {
			if r.Name == name {
				return r
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no report for %s within %v; spool:\n%s", name, multiBound, spoolListing(s.sp))
	return record{}
}

// report reads a job's report (as root) and checks that it belongs to u,
// mode 0600.
func (s *site) report(t *testing.T, r record, u testbed.User) string {
	t.Helper()
	p := filepath.Join(s.sp.Path(spool.DirReports), r.JID+".txt")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != u.UID || fi.Mode().Perm() != 0o600 {
		t.Errorf("report %s: owner %d mode %v, want %d 0600", r.JID, st.Uid, fi.Mode().Perm(), u.UID)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMultiHost_UserJobsOnSSHMPIAndSlurm is issue 11's first acceptance:
// a user submits a job on the ssh hosts, an MPI job over four of them and
// a Slurm job; each runs as the user, where it was sent, and its report
// carries its output.
func TestMultiHost_UserJobsOnSSHMPIAndSlurm(t *testing.T) {
	s := startSite(t)
	alice := s.bed.AddUser(t, "alice")
	s.submitAs(t, alice, "ws", "name: ws\ncommand: [sh, -c, 'echo \"user=$(id -un)\"; echo \"ssh=$SSH_CONNECTION\"; pwd']\nhosts: {cluster: ws}\n")
	s.submitAs(t, alice, "mpi", "name: mpi\nlaunch: mpi\nhosts: {count: 4}\n"+
		"command: [sh, -c, 'echo \"rank $OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE user=$(id -un)\"']\n")
	s.submitAs(t, alice, "slurm", "name: slurm\ncommand: [sh, -c, 'echo \"slurm=$SLURM_JOB_ID user=$(id -un)\"']\nhosts: {cluster: c1}\n")

	ws := s.report(t, s.waitRecord(t, "ws"), alice)
	if !strings.Contains(ws, "user="+alice.Name+"\n") || !regexp.MustCompile(`ssh=127\.0\.0\.\d+ \d+ 127\.0\.0\.[2-5] \d+`).MatchString(ws) ||
		!regexp.MustCompile(`(?m)^\s*`+regexp.QuoteMeta(alice.Home)+`$`).MatchString(ws) {
		t.Errorf("ws job's report lacks the user, the ssh connection to a bed address or the submit directory:\n%s", ws)
	}
	mpi := s.report(t, s.waitRecord(t, "mpi"), alice)
	for r := 0; r < 4; r++ {
		if !strings.Contains(mpi, fmt.Sprintf("rank %d of 4 user=%s\n", r, alice.Name)) {
			t.Errorf("mpi job's report lacks rank %d of 4 as %s:\n%s", r, alice.Name, mpi)
		}
	}
	slurm := s.report(t, s.waitRecord(t, "slurm"), alice)
	if !regexp.MustCompile(`slurm=\d+ user=` + regexp.QuoteMeta(alice.Name) + "\n").MatchString(slurm) {
		t.Errorf("slurm job's report lacks its Slurm job id and the user:\n%s", slurm)
	}
	for _, r := range readRecords(t, s.sp) {
		if r.State != "exited" || r.ExitStatus == nil || *r.ExitStatus != 0 || r.Attempts != 1 {
			t.Errorf("%s (%s): %s, exit %v, attempts %d, %s", r.JID, r.Name, r.State, r.ExitStatus, r.Attempts, r.Reason)
		}
	}
}

// TestMultiHost_RunKilled kills the run daemon with SIGKILL while a job of
// each kind runs and starts it again: each job is reported once, with its
// real exit status and output, and ran once.
func TestMultiHost_RunKilled(t *testing.T) {
	s := startSite(t)
	alice := s.bed.AddUser(t, "alice")
	// Each job notes its start in the user's home, runs until the test
	// releases it (so that it is surely running across the kill, however
	// slow the machine), and exits 7 after printing "done".
	body := func(name, extra string) string {
		return fmt.Sprintf("name: %s\n%scommand: [sh, -c, 'echo $MSCHED_JID >> ran.%s; %s; echo done; exit 7']\n", name, extra, name, untilReleased("release."+name))
	}
	for _, kind := range []struct{ name, extra string }{
		{"ssh", "hosts: {cluster: ws}\n"},
		{"mpi", "launch: mpi\nranks_per_host: 1\nhosts: {count: 2, cluster: ws}\n"},
		{"slurm", "hosts: {cluster: c2}\n"},
	} {
		t.Run(kind.name, func(t *testing.T) {
			releaseOnCleanup(t, filepath.Join(alice.Home, "release."+kind.name))
			s.submitAs(t, alice, kind.name, body(kind.name, kind.extra))
			ran := filepath.Join(alice.Home, "ran."+kind.name)
			deadline := time.Now().Add(multiBound)
			for {
				if b, err := os.ReadFile(ran); err == nil && len(b) > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s job not started within %v; spool:\n%s", kind.name, multiBound, spoolListing(s.sp))
				}
				time.Sleep(50 * time.Millisecond)
			}
			s.procs["run"].signal(t, syscall.SIGKILL)
			time.Sleep(500 * time.Millisecond)
			s.start(t, "run")
			if err := os.WriteFile(filepath.Join(alice.Home, "release."+kind.name), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			r := s.waitRecord(t, kind.name)
			if r.ExitStatus == nil || *r.ExitStatus != 7 || r.Attempts != 1 {
				t.Errorf("%s: exit %v attempts %d (%s), want exit 7 on attempt 1", kind.name, r.ExitStatus, r.Attempts, r.Reason)
			}
			if rep := s.report(t, r, alice); !strings.Contains(rep, "done") {
				t.Errorf("%s: report lacks the job's output:\n%s", kind.name, rep)
			}
			b, _ := os.ReadFile(ran)
			if lines := strings.Count(string(b), "\n"); lines != 1 {
				// The MPI job writes once per rank: two ranks, one run.
				if !(kind.name == "mpi" && lines == 2 && strings.Count(string(b), r.JID) == 2) {
					t.Errorf("%s ran %d times: %q", kind.name, lines, b)
				}
			}
		})
	}
	checkOneReportEach(t, s.sp, 3)
}

// TestMultiHost_SSHServerDown stops the ssh server of one host while a job
// runs there: that job ends as it would have (sshd's running sessions
// outlive it), the next job placed there cannot reach it and goes back to
// the queue, the host is shown down and nothing more is placed on it; once
// the server is back, the host is up and used again.
func TestMultiHost_SSHServerDown(t *testing.T) {
	bed := testbed.Start(t)
	// A server of its own for one address, 127.0.0.6, made from the bed's
	// configuration: the bed's one sshd serves all four of its addresses.
	conf, err := os.ReadFile(filepath.Join(bed.Dir, "ssh", "sshd_config"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(conf), "\n") {
		if !strings.HasPrefix(l, "ListenAddress") && !strings.HasPrefix(l, "PidFile") {
			lines = append(lines, l)
		}
	}
	port := bed.SSHPort
	own := filepath.Join(bed.Dir, "ssh", "own.conf")
	pidFile := filepath.Join(bed.Dir, "ssh", "own.pid")
	lines = append(lines, fmt.Sprintf("ListenAddress 127.0.0.6:%d", port), "PidFile "+pidFile)
	if err := os.WriteFile(own, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	startSSHD := func() {
		t.Helper()
		if out, err := exec.Command("/usr/sbin/sshd", "-f", own, "-E", own+".log").CombinedOutput(); err != nil {
			t.Fatalf("sshd: %v\n%s", err, out)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if b, err := os.ReadFile(pidFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("own sshd wrote no pid file in 10 s")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	stopSSHD := func() {
		t.Helper()
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid > 1 {
			syscall.Kill(pid, syscall.SIGTERM)
			for i := 0; i < 200 && syscall.Kill(pid, 0) == nil; i++ {
				time.Sleep(20 * time.Millisecond)
			}
		}
		os.Remove(pidFile)
	}
	startSSHD()
	t.Cleanup(stopSSHD)
	// The known-hosts file must know the new address's key (the bed's).
	kh := filepath.Join(bed.Dir, "ssh", "known_hosts")
	khb, err := os.ReadFile(kh)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(khb), "\n")
	_, key, _ := strings.Cut(first, " ")
	if err := os.WriteFile(kh, append(khb, []byte(fmt.Sprintf("[127.0.0.6]:%d %s\n", port, key))...), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts := []hoststat.Host{
		{Name: "far", Arch: "generic", Cluster: "far", Address: fmt.Sprintf("ssh://127.0.0.6:%d", port)},
		{Name: "near", Arch: "generic", Cluster: "near", Address: fmt.Sprintf("ssh://127.0.0.2:%d", port)},
	}
	hostsFile := filepath.Join(bed.Dir, "hosts-down.yaml")
	if err := hoststat.WriteHosts(hostsFile, hosts); err != nil {
		t.Fatal(err)
	}
	s := startSiteOn(t, bed, hostsFile)
	alice := bed.AddUser(t, "alice")

	// long runs until the test releases it, so that it surely runs while
	// far's server is stopped.
	releaseOnCleanup(t, filepath.Join(alice.Home, "release.long"))
	s.submitAs(t, alice, "long", "name: long\nhosts: {cluster: far}\ncommand: [sh, -c, 'echo started > long.started; "+untilReleased("release.long")+"; echo long done']\n")
	waitFile(t, filepath.Join(alice.Home, "long.started"))
	stopSSHD()
	// Placed on far (cluster far) while it is down: cannot start there.
	s.submitAs(t, alice, "stuck", "name: stuck\nhosts: {cluster: far}\ncommand: [echo, stuck ran]\n")
	if err := os.WriteFile(filepath.Join(alice.Home, "release.long"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	long := s.waitRecord(t, "long")
	if long.ExitStatus == nil || *long.ExitStatus != 0 || !strings.Contains(s.report(t, long, alice), "long done") {
		t.Errorf("the job running when its host's sshd stopped: exit %v, %s", long.ExitStatus, long.Reason)
	}
	// far is free now: stuck is tried there, cannot reach it, and far is
	// shown down, with ssh's reason (the attempt and the report of long are
	// made by different daemons: wait for it, bounded).
	hostsDown := regexp.MustCompile(`(?m)^far\b.*down`)
	for deadline := time.Now().Add(multiBound); ; time.Sleep(100 * time.Millisecond) {
		out, err := s.as(alice, "hosts")
		if err == nil && hostsDown.MatchString(out) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("msched hosts does not show far down within %v: %v\n%s", multiBound, err, out)
		}
	}
	// Not bound to a cluster, with far known down: runs on near.
	s.submitAs(t, alice, "free", "name: free\ncommand: [sh, -c, 'echo free on $SSH_CONNECTION']\n")
	free := s.waitRecord(t, "free")
	if rep := s.report(t, free, alice); !strings.Contains(rep, "free on ") || !strings.Contains(rep, " 127.0.0.2 ") {
		t.Errorf("the free job did not run on near:\n%s", rep)
	}
	if slices.ContainsFunc(readRecords(t, s.sp), func(r record) bool { return r.Name == "stuck" }) {
		t.Fatalf("stuck was reported while its only host was down: %+v", readRecords(t, s.sp))
	}
	startSSHD()
	stuck := s.waitRecord(t, "stuck")
	if stuck.ExitStatus == nil || *stuck.ExitStatus != 0 || !strings.Contains(s.report(t, stuck, alice), "stuck ran") {
		t.Errorf("stuck, once far was back: exit %v attempts %d, %s", stuck.ExitStatus, stuck.Attempts, stuck.Reason)
	}
	if out, err := s.as(alice, "hosts"); err != nil || regexp.MustCompile(`(?m)^far\b.*down`).MatchString(out) {
		t.Errorf("msched hosts still shows far down: %v\n%s", err, out)
	}
}

// startSiteOn starts the five daemons on bed's spool, as root, reading
// hostsFile.
func startSiteOn(t *testing.T, bed *testbed.Bed, hostsFile string) *site {
	t.Helper()
	if err := os.Chmod(filepath.Dir(mschedBin), 0o755); err != nil {
		t.Fatal(err)
	}
	sp, err := spool.Create(filepath.Join(bed.Dir, "spool"))
	if err != nil {
		t.Fatal(err)
	}
	_, log := logFile(t, "daemons")
	s := &site{bed: bed, sp: sp, hosts: hostsFile, log: log, procs: map[string]*daemonProc{}}
	for _, d := range daemonNames {
		s.start(t, d)
	}
	t.Cleanup(func() {
		for _, p := range s.procs {
			p.signal(t, syscall.SIGTERM)
		}
	})
	return s
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(multiBound)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not there within %v", path, multiBound)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// untilReleased is a shell loop, for a job's command, that waits until the
// file release exists in the job's directory, or 90 s (multiBound) have
// passed: a job that must still run when the test acts, however slow the
// machine, and still ends if the test fails before releasing it.
func untilReleased(release string) string {
	return fmt.Sprintf("i=0; while [ ! -e %s ] && [ $i -lt %d ]; do sleep 0.1; i=$((i+1)); done", release, int(multiBound/(100*time.Millisecond)))
}

// releaseOnCleanup releases, when the test ends, the jobs waiting for the
// file release (untilReleased), so that a test that fails before it
// releases them leaves none running.
func releaseOnCleanup(t *testing.T, release string) {
	t.Cleanup(func() { os.WriteFile(release, nil, 0o644) })
}

// waitGone waits, bounded, until path no longer exists.
func waitGone(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(multiBound)
	for {
		if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there after %v", path, multiBound)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMultiHost_UsersIsolated: through msched, alice cannot read bob's
// output or report, cancel bob's job, make a job write where she could not,
// or run anything as bob.
func TestMultiHost_UsersIsolated(t *testing.T) {
	s := startSite(t)
	alice, bob := s.bed.AddUser(t, "alice"), s.bed.AddUser(t, "bob")
	shAs := func(u testbed.User, script string) (string, error) {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Dir = u.Home
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + u.Home}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID)}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// bob's job runs until the test releases it (bounded: 90 s), so that
	// alice's attempts below meet it running however slow the machine is;
	// a fixed sleep once ended before the test looked.
	releaseOnCleanup(t, filepath.Join(bob.Home, "release"))
	s.submitAs(t, bob, "secret", "name: secret\nhosts: {cluster: ws}\ncommand: [sh, -c, 'echo bob-secret; echo x > started; "+untilReleased("release")+"']\n")
	waitFile(t, filepath.Join(bob.Home, "started"))
	var jid string
	for _, st := range []spool.State{spool.Running, spool.Runnable} {
		es, _ := s.sp.List(st)
		for _, e := range es {
			if j, err := s.sp.Read(st, e.Name); err == nil && j.Name == "secret" {
				jid = j.JID
			}
		}
	}
	if jid == "" {
		t.Fatalf("bob's job not found running; spool:\n%s", spoolListing(s.sp))
	}
	outFile := filepath.Join(s.sp.Path(spool.DirOutput), jid, "stdout")
	if out, err := shAs(alice, "cat "+outFile); err == nil || strings.Contains(out, "bob-secret") {
		t.Errorf("alice read bob's output: %v %q", err, out)
	}
	if out, err := s.as(alice, "cancel", jid); err == nil || !strings.Contains(out, bob.Name) {
		t.Errorf("alice's msched cancel of bob's job: %v\n%s", err, out)
	}
	// By hand, past the command line: the daemons must not honour it.
	byHand := filepath.Join(s.sp.Path(spool.DirControl), "cancel."+jid)
	if out, err := shAs(alice, "date > "+byHand); err != nil {
		t.Fatalf("alice cannot write a request in control/: %v %s", err, out)
	}
	// The daemons refuse it (and remove it) while bob's job still runs;
	// only then is the job let go.
	waitGone(t, byHand)
	if _, err := s.sp.Read(spool.Running, jid); err != nil {
		t.Fatalf("bob's job is no longer running once alice's request was dealt with: %v\n%s", err, spoolListing(s.sp))
	}
	if err := os.WriteFile(filepath.Join(bob.Home, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Into bob's home (no write permission there) and into a root file.
	s.submitAs(t, alice, "steal", fmt.Sprintf("name: steal\nhosts: {cluster: ws}\ncommand: [echo, stolen]\nstdout: %s/stolen\n", bob.Home))
	s.submitAs(t, alice, "passwd", "name: passwd\nhosts: {cluster: ws}\ncommand: [echo, 'x::0:0::/:/bin/sh']\nstdout: /etc/passwd\n")
	s.submitAs(t, alice, "touch", fmt.Sprintf("name: touch\nhosts: {cluster: ws}\ncommand: [touch, %s/pwned]\n", bob.Home))
	// bob's job file, offered by alice as hers: by a symlink, and by a hard
	// link where the kernel lets her make one.
	evil := fmt.Sprintf("name: evil\ncommand: [sh, -c, 'id -un > %s/evil-ran']\n", bob.Home)
	bobFile := filepath.Join(bob.Home, "evil.yaml")
	if err := os.WriteFile(bobFile, []byte(evil), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chown(bobFile, bob.UID, bob.GID)
	sub := s.sp.Dir(spool.Submitted)
	if out, err := shAs(alice, fmt.Sprintf("ln -s %s %s/evil-sym.yaml", bobFile, sub)); err != nil {
		t.Fatalf("symlink: %v %s", err, out)
	}
	hardlinked := false
	if _, err := shAs(alice, fmt.Sprintf("ln %s %s/evil-hard.yaml", bobFile, sub)); err == nil {
		hardlinked = true
	}

	secret := s.waitRecord(t, "secret")
	if secret.ExitStatus == nil || *secret.ExitStatus != 0 || secret.Cancelled {
		t.Errorf("bob's job was disturbed by alice: exit %v cancelled %v %s", secret.ExitStatus, secret.Cancelled, secret.Reason)
	}
	if out, err := s.as(alice, "status", jid); err == nil || strings.Contains(out, "bob-secret") {
		t.Errorf("alice read bob's report with msched status: %v\n%s", err, out)
	}
	for _, name := range []string{"steal", "passwd"} {
		r := s.waitRecord(t, name)
		if r.ExitStatus != nil || !strings.Contains(r.Reason, "permission denied") {
			t.Errorf("%s: exit %v, reason %q; want a start refused with permission denied", name, r.ExitStatus, r.Reason)
		}
	}
	if r := s.waitRecord(t, "touch"); r.ExitStatus == nil || *r.ExitStatus == 0 {
		t.Errorf("touch in bob's home: exit %v %s", r.ExitStatus, r.Reason)
	}
	for _, f := range []string{filepath.Join(bob.Home, "stolen"), filepath.Join(bob.Home, "pwned"), filepath.Join(bob.Home, "evil-ran")} {
		if _, err := os.Lstat(f); err == nil {
			t.Errorf("%s exists: alice wrote as bob", f)
		}
	}
	if b, err := os.ReadFile("/etc/passwd"); err != nil || strings.Contains(string(b), "x::0:0::/:/bin/sh") {
		t.Errorf("/etc/passwd was written: %v", err)
	}
	// The linked submissions are rejected (their reports go to alice, who
	// made the links), and never run.
	deadline := time.Now().Add(multiBound)
	for {
		n := 0
		for _, r := range readRecords(t, s.sp) {
			if r.State == "rejected" && (r.Name == "evil-sym.yaml" || r.Name == "evil-hard.yaml" || r.Name == "evil") {
				n++
			}
		}
		if n >= 1+btoi(hardlinked) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("linked submissions not rejected within %v: %+v", multiBound, readRecords(t, s.sp))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Lstat(filepath.Join(bob.Home, "evil-ran")); err == nil {
		t.Error("bob's job file ran through alice's link")
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
