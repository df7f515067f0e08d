package daemons

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"msched/spool"
)

// The tests in this file put into submitted/ what users put there besides
// well-formed files renamed into place (issue 13, item 5): entries that
// are no file, names as long as the file system allows, a file init
// cannot claim for a while, and files written in place.

// A symbolic link, a FIFO, a directory and a socket in submitted/ are each
// claimed and rejected with what they are as the reason, and logged: none
// sits there unanswered.
func TestInit_RefusesWhatIsNoFile(t *testing.T) {
	sp := newTestSpool(t)
	dir := sp.Dir(spool.Submitted)
	target := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(target, []byte("command: [\"true\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dir.yaml", "inside"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "sock.yaml"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()

	env, lb := loggedEnv(t, sp)
	startDaemon(t, (&Init{env}).Run)
	want := map[string]string{
		"link.yaml": "a symbolic link",
		"fifo.yaml": "a FIFO, not a regular file",
		"dir.yaml":  "a directory, not a regular file",
		"sock.yaml": "a socket",
	}
	eventually(t, "four rejections", func() bool { return jobsIn(t, sp, spool.Rejected) == len(want) })
	es, _ := sp.List(spool.Rejected)
	for _, e := range es {
		j, err := sp.Read(spool.Rejected, e.Name)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(j.History[0].Note, "as ")
		if w, ok := want[name]; !ok || !strings.Contains(j.Reason, w) {
			t.Errorf("%s (%s): reason %q; want it to say %q", j.JID, name, j.Reason, w)
		}
		if lb.lines("msg=refused", "jid="+j.JID, "file="+name) != 1 {
			t.Errorf("%s (%s): no log line says it was refused", j.JID, name)
		}
		delete(want, name)
	}
	if len(want) != 0 {
		t.Errorf("not rejected: %v", want)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d entries left in submitted/", len(left))
	}
	// A batch removes its claims at its Commit, once the moves are durable:
	// the jobs show in rejected/ (renamed) a moment before.
	eventually(t, "the claims removed", func() bool { return len(claimsLeft(t, sp)) == 0 })
	// And each is reported to whoever put it there, with the reason.
	startDaemon(t, (&Reaper{Env: env}).Run)
	eventually(t, "every rejection reaped", func() bool { return jobsIn(t, sp, spool.Rejected) == 0 })
	for _, e := range es {
		report := readText(t, filepath.Join(sp.Path(spool.DirReports), e.Name+".txt"))
		if !strings.Contains(report, "not a regular file") && !strings.Contains(report, "a symbolic link") && !strings.Contains(report, "a socket") {
			t.Errorf("the report of %s does not say why:\n%s", e.Name, report)
		}
	}
}

// A name of 222 bytes or more does not fit in a claim's name with the JID
// and arrival time: it is claimed under a shortened name, queued, and uses
// exactly one JID (the counter says so), never one per failed attempt.
func TestInit_LongNamesClaimedWithOneJIDEach(t *testing.T) {
	sp := newTestSpool(t)
	lens := []int{221, 222, 240, 255}
	for _, n := range lens {
		name := strings.Repeat("x", n-len(".yaml")) + ".yaml"
		if err := os.WriteFile(filepath.Join(sp.Dir(spool.Submitted), name), []byte("command: [\"true\"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	startDaemon(t, (&Init{testEnv(t, sp)}).Run)
	eventually(t, "all queued", func() bool { return jobsIn(t, sp, spool.Queued) == len(lens) })
	if n := jobsIn(t, sp, spool.Submitted); n != 0 {
		t.Errorf("%d files left in submitted/", n)
	}
	b, err := os.ReadFile(filepath.Join(sp.Path(spool.DirDB), "jid"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != fmt.Sprint(len(lens)) {
		t.Errorf("JID counter at %s after %d submissions: JIDs were burned", got, len(lens))
	}
}

// setImmutable sets or clears the immutable flag (chattr +i) of path: even
// root cannot rename an immutable file, so a claim of it fails for as long
// as the flag is set. The test is skipped where the flag cannot be set.
// fsImmutableFL is FS_IMMUTABLE_FL of <linux/fs.h>, which x/sys/unix lacks.
const fsImmutableFL = 0x10

func setImmutable(t *testing.T, path string, on bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err == nil {
		if on {
			flags |= fsImmutableFL
		} else {
			flags &^= fsImmutableFL
		}
		err = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags))
	}
	if err != nil {
		if on {
			t.Skipf("cannot make a file immutable here: %v", err)
		}
		t.Fatal(err)
	}
}

// A submission init failed to claim (here: immutable, so the rename
// fails) is tried again a while later, not passed over until init restarts
// or the file's modification time changes; clearing the flag changes only
// its ctime. The failure is logged once, with the JID it used up.
func TestInit_RetriesAFailedClaim(t *testing.T) {
	sp := newTestSpool(t)
	path := filepath.Join(sp.Dir(spool.Submitted), "stuck.yaml")
	if err := os.WriteFile(path, []byte("command: [\"true\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	setImmutable(t, path, true)
	cleared := false
	t.Cleanup(func() {
		if !cleared {
			setImmutable(t, path, false)
		}
	})
	env, lb := loggedEnv(t, sp)
	startDaemon(t, (&Init{env}).Run)
	eventually(t, "the failed claim logged", func() bool { return lb.lines("cannot claim submission", "stuck.yaml") > 0 })
	setImmutable(t, path, false)
	cleared = true
	j := inState(t, sp, "J000002", spool.Queued) // J000001 was used up by the failed rename
	if j.History[0].Note != "as stuck.yaml" {
		t.Errorf("queued %+v", j.History)
	}
	if n := lb.lines("cannot claim submission", "stuck.yaml"); n != 1 {
		t.Errorf("the failure was logged %d times; want once", n)
	}
	if lb.lines("cannot claim submission", "J000001") != 1 {
		t.Errorf("the log does not say which JID the failed claim used up")
	}
}

// A claim whose move fails (here: queued/ immutable, so the job cannot be
// written there) stays in tmp/ and is judged again a while later, not at
// init's next start; the failure is logged.
func TestInit_RetriesAFailedMove(t *testing.T) {
	sp := newTestSpool(t)
	queued := sp.Dir(spool.Queued)
	setImmutable(t, queued, true)
	cleared := false
	t.Cleanup(func() {
		if !cleared {
			setImmutable(t, queued, false)
		}
	})
	env, lb := loggedEnv(t, sp)
	startDaemon(t, (&Init{env}).Run)
	if _, err := sp.Submit("job.yaml", []byte("command: [\"true\"]\n")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the failed move logged", func() bool { return lb.lines("level=ERROR", "J000001") > 0 })
	if n := len(claimsLeft(t, sp)); n != 1 {
		t.Fatalf("%d claims in tmp/ after the failed move; want 1", n)
	}
	setImmutable(t, queued, false)
	cleared = true
	inState(t, sp, "J000001", spool.Queued)
	eventually(t, "the claim removed", func() bool { return len(claimsLeft(t, sp)) == 0 })
}

// writeInPlace writes pieces into submitted/name as a user's editor or
// shell might: one open, a pause between pieces, then close (reopen:
// false), or each piece appended through its own open and close (reopen:
// true, as `echo … >> file` does). It returns the longest time the file
// may have been left unchanged between its creation and its last write:
// from before one write (or the creating open) to after the next, which a
// loaded machine can make much longer than pause.
func writeInPlace(t *testing.T, path string, pieces []string, pause time.Duration, reopen bool) (longest time.Duration) {
	t.Helper()
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	last := time.Now() // before the file is made
	f := open()
	for i, p := range pieces {
		if i > 0 {
			time.Sleep(pause) // the writer's own pace, not synchronisation
			if reopen {
				f = open()
			}
		}
		before := time.Now()
		if _, err := f.WriteString(p); err != nil {
			t.Fatal(err)
		}
		longest = max(longest, time.Since(last))
		last = before
		if reopen || i == len(pieces)-1 {
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return longest
}

// A file written in place is claimed only once it is complete: not while
// its writer has it open, however long the writer pauses, and not until it
// has been quiet for spool.QuietTime, so a writer that appends its pieces
// through separate opens, pausing less than that, is not read half-written
// either. The old init claimed each after its first piece and rejected it
// ("command: required").
//
// A writer through separate opens that is held up for QuietTime between
// two pieces may have its file claimed half-written: the quiet time says
// so. Such a try (half of QuietTime already leaves no margin) proves
// nothing either way: it is made again, and the test skipped if no try
// kept its pace.
func TestInit_InPlaceWriterClaimedWhenComplete(t *testing.T) {
	pieces := []string{"name: inplace\n", "command: [\"true\"]\n", "hosts: {count: 1}\n", "walltime: 1m\n"}
	const tries = 5
	for _, c := range []struct {
		name   string
		pause  time.Duration
		reopen bool
	}{
		{"one open, long pauses", 2 * spool.QuietTime, false},
		{"one open, short pauses", 50 * time.Millisecond, false},
		{"an open per piece", spool.QuietTime / 4, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			for try := 1; ; try++ {
				sp := newTestSpool(t)
				stop := startDaemon(t, (&Init{testEnv(t, sp)}).Run)
				path := filepath.Join(sp.Dir(spool.Submitted), "inplace.yaml")
				longest := writeInPlace(t, path, pieces, c.pause, c.reopen)
				closed := time.Now()
				eventually(t, "judged", func() bool { return jobsIn(t, sp, spool.Queued)+jobsIn(t, sp, spool.Rejected) > 0 })
				stop()
				if c.reopen && longest >= spool.QuietTime/2 {
					if try == tries {
						t.Skipf("in each of %d tries the writer was held up between two pieces (last: %v): none tells whether init waits for the quiet time", tries, longest)
					}
					t.Logf("try %d: the writer was held up %v between two pieces; trying again", try, longest)
					continue
				}
				if r, err := sp.Read(spool.Rejected, "J000001"); err == nil {
					t.Fatalf("claimed half-written and rejected (the file unchanged for at most %v): %q", longest, r.Reason)
				}
				j := inState(t, sp, "J000001", spool.Queued)
				if j.Name != "inplace" || j.Walltime == 0 {
					t.Errorf("queued as %+v", j)
				}
				t.Logf("queued %v after the writer closed", time.Since(closed))
				return
			}
		})
	}
}

// Files renamed into submitted/ whole (Submit, and a stage-then-rename as
// `msched bench spool` does) are claimed at once: the quiet time is for
// files written in place only.
func TestInit_RenamedSubmissionsNotDelayed(t *testing.T) {
	sp := newTestSpool(t)
	startDaemon(t, (&Init{testEnv(t, sp)}).Run)
	stage := filepath.Join(sp.Root(), "stage") // on the spool's file system
	if err := os.Mkdir(stage, 0o755); err != nil {
		t.Fatal(err)
	}
	data := []byte("command: [\"true\"]\n")
	// One first, so that init is up before the times are taken: a file
	// that is there before init watches submitted/ waits for the quiet
	// time, by design.
	if _, err := sp.Submit("first.yaml", data); err != nil {
		t.Fatal(err)
	}
	inState(t, sp, "J000001", spool.Queued)
	var lat []time.Duration
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("job%d.yaml", i)
		// Before the file is written: its mtime is no earlier (less a tick
		// of the file system's coarse clock).
		start := time.Now()
		if i%2 == 0 {
			if _, err := sp.Submit(name, data); err != nil {
				t.Fatal(err)
			}
		} else {
			if err := os.WriteFile(filepath.Join(stage, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(stage, name), filepath.Join(sp.Dir(spool.Submitted), name)); err != nil {
				t.Fatal(err)
			}
		}
		inState(t, sp, spool.FormatJID(int64(i+2)), spool.Queued)
		lat = append(lat, time.Since(start))
	}
	t.Logf("submit to queued: %v", lat)
	// An init that waited for the quiet time would take at least QuietTime
	// from each file's mtime to its claim; claimed at once, a submission
	// takes what a claim and a move take (milliseconds, with fsyncs, more on
	// a loaded machine). The slack is the coarse clock's tick, generously.
	const slack = 100 * time.Millisecond
	if m := median(lat); m >= spool.QuietTime-slack {
		t.Errorf("median submit-to-queued %v: renamed submissions wait for the quiet time (%v)", m, spool.QuietTime)
	}
}

func median(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}
