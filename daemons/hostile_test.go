package daemons

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"msched/spool"
)

// The tests in this file play a local user attacking the daemons, which run
// as root, through the directories every user may write (submitted/,
// control/). As root they can make files owned by any uid: attacker and
// other have no password entry.
const (
	attacker = 12345
	other    = 23456
)

func asRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the daemons serve other users only as root")
	}
}

// secretFile is a file only root may read, outside the spool.
func secretFile(t *testing.T) (path, secret string) {
	t.Helper()
	secret = fmt.Sprintf("SECRET-%d-%d", os.Getpid(), time.Now().UnixNano())
	path = filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, secret
}

// filesHolding lists the files under dir that contain s.
func filesHolding(dir, s string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(s)) {
				out = append(out, p)
			}
		}
		return nil
	})
	return out
}

// logBuf keeps what the daemons log, besides the test's log.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuf) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *logBuf) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

// lines counts the lines that hold every one of parts.
func (l *logBuf) lines(parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range strings.Split(l.buf.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

func loggedEnv(t *testing.T, sp *spool.Spool) (Env, *logBuf) {
	lb := &logBuf{}
	w := io.MultiWriter(tWriter{t}, lb)
	return Env{Spool: sp, Log: slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))}, lb
}

// requestAs writes a cancel request for jid as uid would (its own file,
// named by its uid).
func requestAs(t *testing.T, sp *spool.Spool, jid string, uid int) {
	t.Helper()
	// Written and chowned under a dot-name, then renamed: a daemon that
	// read the request between a write and a chown in place would take it
	// for root's, which may cancel any job.
	dir, name := sp.Path(spool.DirControl), fmt.Sprintf("cancel.%s.%d", jid, uid)
	tmp := filepath.Join(dir, "."+name)
	if err := os.WriteFile(tmp, spool.ControlBody(spool.Cancel, jid, time.Now().UTC()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(tmp, uid, uid); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func requests(t *testing.T, sp *spool.Spool) int {
	cs, err := sp.Controls()
	if err != nil {
		t.Fatal(err)
	}
	return len(cs)
}

// A user swaps a regular file and a symbolic link to a root-only file under
// one name in submitted/ while init claims: init checks the entry (Lstat),
// then renames it, and the old code then read whatever was there by then
// (os.ReadFile follows links), so the root-only file came back as a
// rejection's original bytes and in its report. Now the claim is read once
// through a descriptor that does not follow links: a link won in the race
// is rejected as a link, and the secret appears nowhere.
func TestClaim_SymlinkRace(t *testing.T) {
	asRoot(t)
	secretPath, secret := secretFile(t)
	sp := newTestSpool(t)
	env, lb := loggedEnv(t, sp)
	env.Rescan = 20 * time.Millisecond
	stopInit := startDaemon(t, (&Init{env}).Run)
	stopReaper := startDaemon(t, (&Reaper{Env: env}).Run)

	// The attacker stages both entries in a directory of the same file
	// system and renames them over one name, as fast as it can.
	stage := filepath.Join(sp.Root(), "attacker")
	if err := os.Mkdir(stage, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(sp.Dir(spool.Submitted), "job.yaml")
	var stop atomic.Bool
	var swaps atomic.Int64
	done := make(chan error, 1)
	go func() {
		reg, link := filepath.Join(stage, "reg"), filepath.Join(stage, "link")
		for !stop.Load() {
			if err := os.WriteFile(reg, []byte("name: race\ncommand: [\"true\"]\n"), 0o644); err != nil {
				done <- err
				return
			}
			os.Lchown(reg, attacker, attacker)
			os.Rename(reg, target)
			os.Remove(link)
			if err := os.Symlink(secretPath, link); err != nil {
				done <- err
				return
			}
			os.Lchown(link, attacker, attacker)
			os.Rename(link, target)
			swaps.Add(1)
			runtime.Gosched() // leave init the CPU it needs to claim at all
		}
		done <- nil
	}()

	// Until init has claimed a few links (the race won), or long enough.
	const wantWins = 10
	won := func() int { return lb.lines("msg=refused", "a symbolic link") }
	deadline := time.Now().Add(10 * time.Second)
	for won() < wantWins && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stop.Store(true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	os.Remove(target) // the attacker's last entry, if it is a link init passes over
	eventually(t, "every claim judged and every rejection reaped", func() bool {
		left, _ := filepath.Glob(filepath.Join(sp.Path(spool.DirTmp), "claim.*"))
		return jobsIn(t, sp, spool.Submitted) == 0 && len(left) == 0 && jobsIn(t, sp, spool.Rejected) == 0
	})
	stopInit()
	stopReaper()

	wins := won()
	reports, _ := filepath.Glob(filepath.Join(sp.Path(spool.DirReports), "*.txt"))
	t.Logf("%d swaps, %d queued, %d reports, %d links claimed and rejected", swaps.Load(), jobsIn(t, sp, spool.Queued), len(reports), wins)
	if held := filesHolding(sp.Root(), secret); len(held) > 0 {
		t.Errorf("the root-only file's content is in %v", held)
	}
	if wins == 0 {
		t.Fatalf("init never claimed a link in %d swaps: the race was not exercised", swaps.Load())
	}
	n := 0
	for _, r := range reports {
		if strings.Contains(readText(t, r), "job.yaml: a symbolic link, not a file") {
			n++
		}
	}
	if n == 0 {
		t.Error("no report tells the submitter that a link was rejected")
	}
}

// Claims a user poisoned (a dangling link, a FIFO) do not stop init at
// start: they are rejected with their reason and init then serves
// submitted/. The old init failed its recovery at every start ("claim
// J000001: not found"), or blocked in it for ever on the FIFO.
func TestInit_PoisonedClaimsDoNotStopIt(t *testing.T) {
	asRoot(t)
	sp := newTestSpool(t)
	for i, make := range []func(string) error{
		func(p string) error { return os.Symlink("/nonexistent/msched-test", p) },
		func(p string) error { return syscall.Mkfifo(p, 0o644) },
	} {
		jid, err := sp.NextJID()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(sp.Path(spool.DirTmp), fmt.Sprintf("claim.%s.%d.bad%d.yaml", jid, time.Now().UnixNano(), i))
		if err := make(p); err != nil {
			t.Fatal(err)
		}
		os.Lchown(p, attacker, attacker)
	}
	if _, err := sp.Submit("good.yaml", []byte("command: [\"true\"]\n")); err != nil {
		t.Fatal(err)
	}
	startDaemon(t, (&Init{testEnv(t, sp)}).Run)
	eventually(t, "the poisoned claims rejected and the good submission queued", func() bool {
		return jobsIn(t, sp, spool.Rejected) == 2 && jobsIn(t, sp, spool.Queued) == 1
	})
	es, _ := sp.List(spool.Rejected)
	for _, e := range es {
		j, err := sp.Read(spool.Rejected, e.Name)
		if err != nil {
			t.Fatal(err)
		}
		if j.UID == nil || *j.UID != attacker || !strings.Contains(j.Reason, "not a regular file") && !strings.Contains(j.Reason, "symbolic link") {
			t.Errorf("%s: uid %v, reason %q", j.JID, j.UID, j.Reason)
		}
	}
}

// A FIFO or a link to /dev/zero named like a request in control/ made
// sched block and sched, run and the reaper run out of memory. Now each is
// removed and logged once, and the daemons go on acting on real requests.
func TestControl_FIFOAndSymlink(t *testing.T) {
	asRoot(t)
	sp := newTestSpool(t)
	ctl := sp.Path(spool.DirControl)
	if err := syscall.Mkfifo(filepath.Join(ctl, "cancel.J000090"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(ctl, "cancel.J000091")); err != nil {
		t.Fatal(err)
	}
	os.Lchown(filepath.Join(ctl, "cancel.J000090"), attacker, attacker)
	os.Lchown(filepath.Join(ctl, "cancel.J000091"), attacker, attacker)
	gate := filepath.Join(t.TempDir(), "gate")
	jid := runnable(t, sp, jobArgv(t, "gate", gate), nil)
	if err := sp.RequestCancel(jid); err != nil { // root's: honoured
		t.Fatal(err)
	}
	env, lb := loggedEnv(t, sp)
	r := newRun(t, sp, 0)
	r.Env = env
	startDaemon(t, r.Run)
	startDaemon(t, (&Reaper{Env: env}).Run)
	// sched's part, without a policy: its cancel pass on a queued job.
	queued := putJob(t, sp, spool.Queued, &spool.Job{Name: "q", Command: []string{"true"}})
	requestAs(t, sp, queued, 0)
	s := &Sched{Env: env, sp: sp.As(spool.Sched), log: env.logger("sched")}
	done := make(chan error, 1)
	go func() { done <- s.cancels() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitBound):
		t.Fatal("sched's cancel pass did not return")
	}

	for _, j := range []string{jid, queued} { // rejected, then reported and reaped
		report := filepath.Join(sp.Path(spool.DirReports), j+".txt")
		eventually(t, j+" reported as cancelled", func() bool {
			b, _ := os.ReadFile(report)
			return bytes.Contains(b, []byte("rejected: cancelled"))
		})
	}
	eventually(t, "the junk removed", func() bool {
		left, _ := os.ReadDir(ctl)
		for _, e := range left {
			if strings.HasPrefix(e.Name(), "cancel.J00009") {
				return false
			}
		}
		return true
	})
	for _, f := range []string{"cancel.J000090", "cancel.J000091"} {
		if n := lb.lines(`msg="removed junk from control/"`, "file="+f+" "); n != 1 {
			t.Errorf("%s logged %d times, want once", f, n)
		}
	}
}

// Only a job's owner or root may cancel it. A request from anyone else is
// removed and the attempt logged with who tried, by sched (queued jobs),
// run (runnable and running jobs) or the reaper, and the job goes on; the
// owner's request is honoured. The old daemons cancelled any job for any
// user who could write control/.
func TestCancel_OnlyOwnerOrRoot(t *testing.T) {
	asRoot(t)

	t.Run("sched", func(t *testing.T) {
		sp := newTestSpool(t)
		jid := putJob(t, sp, spool.Queued, &spool.Job{Name: "q", Command: []string{"true"}, UID: ptr(attacker), User: "uid12345"})
		env, lb := loggedEnv(t, sp)
		s := &Sched{Env: env, sp: sp.As(spool.Sched), log: env.logger("sched")}
		requestAs(t, sp, jid, other)
		if err := s.cancels(); err != nil {
			t.Fatal(err)
		}
		if _, err := sp.Read(spool.Queued, jid); err != nil || requests(t, sp) != 0 {
			t.Fatalf("after another user's request: %v, %d requests left", err, requests(t, sp))
		}
		if lb.count("refused request") != 1 || lb.count("from=\"uid23456 (uid 23456)\"") != 1 || lb.count("belongs to uid12345; only uid12345 or root may cancel it") != 1 {
			t.Errorf("the refusal is not logged with who tried:\n%s", lb.buf.String())
		}
		requestAs(t, sp, jid, attacker)
		if err := s.cancels(); err != nil {
			t.Fatal(err)
		}
		if j, err := sp.Read(spool.Rejected, jid); err != nil || j.Reason != "cancelled" {
			t.Errorf("owner's request: %v %v", j, err)
		}
	})

	t.Run("run", func(t *testing.T) {
		// The job runs as its owner, who must exist in the password
		// database: nobody (65534 on Debian) runs sleep.
		nobody, err := user.Lookup("nobody")
		if err != nil {
			t.Skip("no user nobody")
		}
		owner, _ := strconv.Atoi(nobody.Uid)
		sp := newTestSpool(t)
		wd, err := os.MkdirTemp("", "msched-nobody-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(wd) })
		os.Chmod(wd, 0o755)
		os.Chown(wd, owner, owner)
		waiting := runnable(t, sp, []string{"sleep", "60"}, func(j *spool.Job) {
			j.UID, j.User, j.Workdir, j.Stdout, j.Stderr = &owner, "nobody", wd, filepath.Join(wd, "out"), filepath.Join(wd, "err")
		})
		requestAs(t, sp, waiting, other) // before it starts
		env, lb := loggedEnv(t, sp)
		r := newRun(t, sp, 0)
		r.Env = env
		startDaemon(t, r.Run)
		inState(t, sp, waiting, spool.Running)
		eventually(t, "the refusal logged", func() bool { return lb.count("refused request") == 1 })
		requestAs(t, sp, waiting, other) // while it runs
		eventually(t, "the second refusal logged", func() bool { return lb.count("refused request") == 2 })
		if _, err := sp.Read(spool.Running, waiting); err != nil {
			t.Fatalf("another user's request stopped the job: %v", err)
		}
		requestAs(t, sp, waiting, owner)
		if j := inState(t, sp, waiting, spool.Finished); !j.CancelRequested {
			t.Errorf("owner's request not honoured: %+v", j.Run)
		}
	})

	t.Run("reaper", func(t *testing.T) {
		sp := newTestSpool(t)
		jid := putJob(t, sp, spool.Running, &spool.Job{Name: "r", Command: []string{"true"}, UID: ptr(attacker), User: "uid12345",
			Run: &spool.RunInfo{StartedAt: time.Now().UTC(), Attempts: 1}})
		requestAs(t, sp, jid, other)
		requestAs(t, sp, jid, attacker)
		env, lb := loggedEnv(t, sp)
		stop := startDaemon(t, (&Reaper{Env: env}).Run)
		eventually(t, "the refusal", func() bool { return lb.count("refused request") == 1 })
		stop()
		cs, _ := sp.Controls()
		if len(cs) != 1 || cs[0].UID != attacker {
			t.Errorf("requests left: %+v; want the owner's", cs)
		}
	})
}

// When the daemons run as root, a report is its job owner's alone: owned by
// the job's uid, mode 0600, for a job that ran and for a rejected
// submission; a job file from before uids were recorded goes to its user
// by name, else to root alone.
func TestReport_OwnedByUser(t *testing.T) {
	asRoot(t)
	sp := newTestSpool(t)
	ran := finishedJob(t, sp)
	j, err := sp.Read(spool.Finished, ran)
	if err != nil {
		t.Fatal(err)
	}
	j.UID = ptr(attacker)
	b, _ := j.Marshal()
	if err := spool.WriteAtomic(sp.Dir(spool.Finished), ran, b); err != nil {
		t.Fatal(err)
	}
	bad := putJob(t, sp, spool.Rejected, &spool.Job{Name: "bad", Reason: "bad.yaml:1: nope", Original: "nope\n", UID: ptr(other),
		History: []spool.Event{{State: spool.Submitted, At: time.Now().UTC()}, {State: spool.Rejected, At: time.Now().UTC()}}})
	legacy := putJob(t, sp, spool.Rejected, &spool.Job{Name: "old", Reason: "x", User: "no-such-user-msched",
		History: []spool.Event{{State: spool.Submitted, At: time.Now().UTC()}, {State: spool.Rejected, At: time.Now().UTC()}}})
	want := map[string]int{ran: attacker, bad: other, legacy: 0}
	if spool.UserName(65534) == "nobody" {
		byName := putJob(t, sp, spool.Rejected, &spool.Job{Name: "old", Reason: "x", User: "nobody",
			History: []spool.Event{{State: spool.Submitted, At: time.Now().UTC()}, {State: spool.Rejected, At: time.Now().UTC()}}})
		want[byName] = 65534
	}
	stop := startDaemon(t, (&Reaper{Env: testEnv(t, sp)}).Run)
	eventually(t, "all reaped", func() bool { return jobsIn(t, sp, spool.Finished)+jobsIn(t, sp, spool.Rejected) == 0 })
	stop()
	for jid, uid := range want {
		p := filepath.Join(sp.Path(spool.DirReports), jid+".txt")
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := int(fi.Sys().(*syscall.Stat_t).Uid); got != uid || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s's report: uid %d mode %v; want uid %d mode 0600", jid, got, fi.Mode(), uid)
		}
	}
	if !strings.Contains(readText(t, filepath.Join(sp.Path(spool.DirReports), ran+".txt")), "hello from the job") {
		t.Error("the report lost the job's output")
	}
	if left, _ := filepath.Glob(filepath.Join(sp.Path(spool.DirTmp), "reaper", ".*")); len(left) > 0 {
		t.Errorf("staging files left: %v", left)
	}
}
