package daemons

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"msched/hoststat"
	"msched/spool"
)

// nobodyDir is a directory of the user nobody, for a job that runs as
// nobody to write its output in; it returns nobody's uid too.
func nobodyDir(t *testing.T) (uid int, dir string) {
	t.Helper()
	asRoot(t)
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody")
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir, err = os.MkdirTemp("", "msched-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	return uid, dir
}

// A job file written before msched recorded the uid (an old spool) runs as
// its user, by name, as cancel and the reaper take it; never as the root
// daemon. Without a user in the password database it does not run.
func TestRun_JobWithoutUIDRunsAsItsUser(t *testing.T) {
	uid, wd := nobodyDir(t)
	sp := newTestSpool(t)
	out := filepath.Join(wd, "out")
	old := runnable(t, sp, []string{"sh", "-c", "id -u"}, func(j *spool.Job) {
		j.UID, j.User, j.Workdir, j.Stdout, j.Stderr = nil, "nobody", wd, out, out
	})
	ran := filepath.Join(wd, "ran")
	unknown := runnable(t, sp, []string{"touch", ran}, func(j *spool.Job) {
		j.UID, j.User, j.Workdir = nil, "msched-no-such-user", wd
	})
	startDaemon(t, newRun(t, sp, 1).Run)
	inState(t, sp, old, spool.Finished)
	if got := readText(t, out); got != strconv.Itoa(uid)+"\n" {
		t.Errorf("the job without a uid ran as uid %q, want nobody's %d", got, uid)
	}
	j := inState(t, sp, unknown, spool.Finished)
	if !strings.Contains(j.Reason, "no uid") {
		t.Errorf("reason %q, want one saying the job file has no uid", j.Reason)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("a job with neither uid nor known user ran")
	}
}

// A job scheduled on a host the hosts file no longer lists does not start
// (least of all on this machine, where an unknown name used to send it): it
// is re-queued, for the scheduler to place anew.
func TestRun_HostNoLongerListedDoesNotStart(t *testing.T) {
	sp := newTestSpool(t)
	ran := filepath.Join(t.TempDir(), "ran")
	jid := runnable(t, sp, []string{"touch", ran}, func(j *spool.Job) { j.Schedule.Hosts = []string{"gone"} })
	r := newRun(t, sp, 0)
	r.Hosts = []hoststat.Host{{Name: "ws1", Arch: "generic", Cluster: "ws", Address: "ssh://127.0.0.2:2222"}}
	startDaemon(t, r.Run)
	j := inState(t, sp, jid, spool.Queued)
	if note := j.History[len(j.History)-1].Note; !strings.Contains(note, "gone is not in the hosts file") {
		t.Errorf("history note %q, want the missing host named", note)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the job ran, on this machine")
	}
}

// The spool's output files of another user's job are the user's, but the
// directory holding them is not: the job cannot put a symbolic link or a
// FIFO in their place for the root daemons that read them (the reaper's
// report, the status page) to follow into a file only root may read.
func TestRun_CapturedOutputCannotBeReplacedByTheJob(t *testing.T) {
	uid, wd := nobodyDir(t)
	top, err := os.MkdirTemp("", "msched-spool-") // t.TempDir is 0700: the job must reach output/
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	os.Chmod(top, 0o755)
	sp, err := spool.Create(filepath.Join(top, "spool"))
	if err != nil {
		t.Fatal(err)
	}
	secret, _ := secretFile(t)
	jid := runnable(t, sp, []string{"sh", "-c", `o=$(readlink /proc/$$/fd/1); rm -f "$o" && ln -s "$0" "$o"; echo written`, secret},
		func(j *spool.Job) { j.UID, j.User, j.Workdir = &uid, "nobody", wd })
	startDaemon(t, newRun(t, sp, 0).Run)
	inState(t, sp, jid, spool.Finished)
	out, _ := spool.CapturedPaths(sp.Path(spool.DirOutput), jid)
	fi, err := os.Lstat(out)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("captured stdout %s: %v %v, want the regular file the job wrote", out, fi.Mode(), err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != uid || fi.Mode().Perm() != 0o600 {
		t.Errorf("captured stdout: uid %d mode %v, want the job's %d, 0600", st.Uid, fi.Mode().Perm(), uid)
	}
	if got := readText(t, out); got != "written\n" {
		t.Errorf("captured stdout %q", got)
	}
	di, err := os.Lstat(filepath.Dir(out))
	if err != nil {
		t.Fatal(err)
	}
	if st := di.Sys().(*syscall.Stat_t); int(st.Uid) != os.Geteuid() || di.Mode().Perm() != 0o710 {
		t.Errorf("output directory: uid %d mode %v, want root's, 0710", st.Uid, di.Mode().Perm())
	}
}

// The output the spool captures of a job of the daemon's own user (root's
// own jobs, under root) is that user's alone too, like its report.
func TestRun_CapturedOutputOfOwnUserIsPrivate(t *testing.T) {
	sp := newTestSpool(t)
	jid := runnable(t, sp, jobArgv(t, "exit", "0"), nil)
	startDaemon(t, newRun(t, sp, 0).Run)
	inState(t, sp, jid, spool.Finished)
	out, _ := spool.CapturedPaths(sp.Path(spool.DirOutput), jid)
	di, err := os.Lstat(filepath.Dir(out))
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm()&0o077 != 0 {
		t.Errorf("output directory mode %v: others may read the job's output", di.Mode().Perm())
	}
}
