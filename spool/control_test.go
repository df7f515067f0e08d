package spool

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Entries in control/ with a request's name that are no requests (a FIFO
// made sched block for ever; a link to /dev/zero made sched, run and the
// reaper read until they ran out of memory) are returned promptly, marked
// as junk with what they are, and removed by DiscardControl; the one real
// request beside them is read with its sender's uid.
func TestControl_FIFOAndSymlink(t *testing.T) {
	needRoot(t)
	s := newSpool(t)
	dir := s.Path(DirControl)
	secretPath, secret := secretFile(t)
	junk := map[string]struct {
		make func(p string) error
		want string
	}{
		"cancel.J000042":                         {func(p string) error { return syscall.Mkfifo(p, 0o666) }, "a FIFO"},
		"cancel.J000043":                         {func(p string) error { return os.Symlink("/dev/zero", p) }, "a symbolic link"},
		"cancel.J000044." + fmt.Sprint(attacker): {func(p string) error { return os.Symlink(secretPath, p) }, "a symbolic link"},
		"cancel.J000045":                         {func(p string) error { return os.WriteFile(p, make([]byte, 2*MaxControl), 0o644) }, "too large"},
		"cancel.J000046":                         {func(p string) error { return os.Mkdir(p, 0o755) }, "a directory"},
	}
	for name, j := range junk {
		p := filepath.Join(dir, name)
		if err := j.make(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, attacker, attacker); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RequestCancel("J000047"); err != nil {
		t.Fatal(err)
	}
	var cs []Control
	var err error
	within(t, "Controls", func() { cs, err = s.Controls() })
	if err != nil || len(cs) != len(junk)+1 {
		t.Fatalf("Controls: %d, %v; want %d", len(cs), err, len(junk)+1)
	}
	for _, c := range cs {
		if c.JID == "J000047" {
			if c.Junk != "" || c.UID != 0 || c.At.IsZero() {
				t.Errorf("the real request: %+v", c)
			}
			continue
		}
		want := junk[c.File()].want
		if want == "" || !strings.Contains(c.Junk, want) || c.UID != attacker {
			t.Errorf("%s: junk %q from uid %d; want %q from uid %d", c.File(), c.Junk, c.UID, want, attacker)
		}
		if strings.Contains(c.Junk, secret) {
			t.Errorf("%s: the secret in the junk's description", c.File())
		}
		removed, err := s.DiscardControl(c)
		if err != nil || !removed {
			t.Errorf("discard %s: %v %v", c.File(), removed, err)
		}
		if removed, err := s.DiscardControl(c); removed || err != nil {
			t.Errorf("discard %s again: %v %v; want nothing to do", c.File(), removed, err)
		}
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 {
		t.Errorf("control/ holds %d entries after the junk went; want the one request", len(left))
	}
	grepSpool(t, s, secret)
}

// A request is named by its sender's uid and a random tag (RequestCancel),
// so each call makes a request of its own; the names older versions wrote,
// cancel.<JID>.<uid> and cancel.<JID>, are still read. Who sent a request
// is its file's owner: a name whose uid is not the owner's is junk.
func TestControl_Naming(t *testing.T) {
	needRoot(t)
	s := newSpool(t)
	dir := s.Path(DirControl)
	for range 2 {
		if err := s.RequestCancel("J000001"); err != nil {
			t.Fatal(err)
		}
	}
	for name, uid := range map[string]int{
		"cancel.J000001." + fmt.Sprint(attacker):             attacker, // the name before tags
		"cancel.J000002":                                     attacker, // the name before uids
		"cancel.J000003.0":                                   attacker, // root's name, not root's file: junk
		"cancel.J000003.0.0123abcd":                          attacker,
		"cancel.J000004." + fmt.Sprint(attacker) + ".Tag0x9": attacker,
		"cancel.J000005.x":                                   0, // not a request's name: left alone
		"cancel.J000005.+1":                                  0,
		"cancel.J000005.0.":                                  0,
		"cancel.J000005.0.a-b":                               0,
		"cancel.J000005.0.a.b":                               0,
		"cancel.J000005.0." + strings.Repeat("a", maxTag+1):  0,
	} {
		jid := strings.Split(name, ".")[1]
		writeOwned(t, filepath.Join(dir, name), ControlBody(Cancel, jid, time.Now()), 0o644, uid, uid)
	}
	cs, err := s.Controls()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		what := "request"
		if c.Junk != "" {
			what = "junk: " + c.Junk
		}
		file := regexp.MustCompile(`^(cancel\.J000001\.0\.)[0-9a-f]{16}$`).ReplaceAllString(c.File(), "${1}<tag>")
		got = append(got, fmt.Sprintf("%s %s uid %d %s", file, c.JID, c.UID, what))
	}
	squat := fmt.Sprintf("junk: named for uid 0 but owned by uid%d (uid %d) (a request is named by its owner's uid)", attacker, attacker)
	want := []string{
		"cancel.J000001.0.<tag> J000001 uid 0 request",
		"cancel.J000001.0.<tag> J000001 uid 0 request",
		fmt.Sprintf("cancel.J000001.%d J000001 uid %d request", attacker, attacker),
		fmt.Sprintf("cancel.J000002 J000002 uid %d request", attacker),
		fmt.Sprintf("cancel.J000003.0 J000003 uid %d %s", attacker, squat),
		fmt.Sprintf("cancel.J000003.0.0123abcd J000003 uid %d %s", attacker, squat),
		fmt.Sprintf("cancel.J000004.%d.Tag0x9 J000004 uid %d request", attacker, attacker),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if cs[0].File() == cs[1].File() {
		t.Errorf("two requests of RequestCancel under one name")
	}
}

// control/ is sticky and every user writes it: a user may make the name
// another's request will take before it is written, and the owner's rename
// onto it then failed (EPERM) however often they asked, so they could not
// cancel their own job (msched cancel, the web page's Cancel). The name
// was cancel.<JID>.<uid>, known in advance; now a random tag ends it, and
// a name with the owner's uid made by another user is junk.
func TestControl_NameSquatting(t *testing.T) {
	needRoot(t)
	s := newSpool(t)
	for d := s.Root(); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	const jid = "J000001"
	victim := other
	asUser(t, attacker, func() error {
		name := fmt.Sprintf("cancel.%s.%d", jid, victim)
		return os.WriteFile(filepath.Join(s.Path(DirControl), name), ControlBody(Cancel, jid, time.Now()), 0o644)
	})
	for range 2 {
		asUser(t, victim, func() error { return s.RequestCancel(jid) })
	}
	cs, err := s.Controls()
	if err != nil || len(cs) != 3 {
		t.Fatalf("controls %+v, %v; want the squatter's and the owner's two", cs, err)
	}
	var requests int
	for _, c := range cs {
		switch {
		case c.File() == fmt.Sprintf("cancel.%s.%d", jid, victim):
			if c.UID != attacker || !strings.Contains(c.Junk, fmt.Sprintf("named for uid %d but owned by", victim)) {
				t.Errorf("the squatter's file: %+v; want junk from uid %d", c, attacker)
			}
		case c.UID == victim && c.Junk == "" && c.JID == jid:
			requests++
		default:
			t.Errorf("unexpected %+v", c)
		}
	}
	if requests != 2 {
		t.Errorf("%d requests from the job's owner, want 2", requests)
	}
}

// Only a job's owner or root may cancel it; the refusal says who may. A job
// file from before uids were recorded is matched by its user's name.
func TestCancel_OnlyOwnerOrRoot(t *testing.T) {
	bob := 1002
	j := &Job{JID: "J000042", User: "bob", UID: &bob}
	legacy := &Job{JID: "J000043", User: "nobody"} // no uid recorded; nobody is 65534 on Debian
	for _, c := range []struct {
		job  *Job
		uid  int
		want string // "" allowed
	}{
		{j, 0, ""},
		{j, bob, ""},
		{j, 1003, "spool: J000042 belongs to bob; only bob or root may cancel it"},
		{j, 65534, "spool: J000042 belongs to bob; only bob or root may cancel it"},
		{legacy, 0, ""},
		{legacy, 1003, "spool: J000043 belongs to nobody; only nobody or root may cancel it"},
		{&Job{JID: "J000044"}, 1003, "spool: J000044 has no recorded owner; only root may cancel it"},
	} {
		err := Control{Kind: Cancel, JID: c.job.JID, UID: c.uid}.Allowed(c.job)
		if got := fmt.Sprint(err); (c.want == "" && err != nil) || (c.want != "" && got != c.want) {
			t.Errorf("%s by uid %d: %v; want %q", c.job.JID, c.uid, err, c.want)
		}
	}
	if UserName(65534) == "nobody" {
		if err := (Control{Kind: Cancel, JID: legacy.JID, UID: 65534}).Allowed(legacy); err != nil {
			t.Errorf("legacy job by its user: %v", err)
		}
	}
}

// TestControl_MustStateItself: the owner of a file in control/ need not be
// who put it there (rename into a sticky directory needs no ownership: a
// file of root's from a user's home, say). A request counts only if its
// content asks for what its name says; anything else is junk.
func TestControl_MustStateItself(t *testing.T) {
	s := newSpool(t)
	dir := s.Path(DirControl)
	for name, body := range map[string]string{
		"cancel.J000001.0": "PermitRootLogin no\n",
		"cancel.J000002.0": "cancel J000003 2026-01-01T00:00:00Z\n",
		"cancel.J000004.0": "",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RequestCancel("J000005"); err != nil {
		t.Fatal(err)
	}
	cs, err := s.Controls()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		switch {
		case c.JID == "J000005" && (c.Junk != "" || c.At.IsZero()):
			t.Errorf("a request of RequestCancel refused: %+v", c)
		case c.JID != "J000005" && !strings.Contains(c.Junk, "does not say"):
			t.Errorf("%s taken for a request: %+v", c.file, c)
		}
	}
	if len(cs) != 4 {
		t.Errorf("%d controls, want 4: %+v", len(cs), cs)
	}
}

// squatter makes a file under each dot-file's name as soon as it is
// renamed away from a directory, as any user may in the sticky,
// world-writable control/ and submitted/. RequestCancel and Submit stage
// their files as dot-files there, and once removed the dot-file's name
// after the rename (a deferred Cleanup), which as root (the web page's
// cancel) removed the file made by someone else.
//
// Only a file made before the call that renamed returns can tell whether
// it removes the name: one made later is no test. inTime counts those made
// before the directory sync that follows the rename (CommitNoReplace's;
// the commit returns after it, and a Cleanup runs after that) ended, as
// inotify orders the two: the squatter's file created, the directory
// closed.
type squatter struct {
	t      *testing.T
	inTime atomic.Int64
	moved  chan struct{} // a rename away seen, and a file made if it could be
	quit   chan struct{}
	halted sync.Once
	done   chan [2][]string
	dir    string
}

// squatterStop is the file stop makes: the squatter returns once it sees it
// made, so every event before it has been seen.
const squatterStop = "squatter-stop"

func squatStaging(t *testing.T, dir string) *squatter {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_MOVED_FROM|unix.IN_CREATE|unix.IN_CLOSE_NOWRITE|unix.IN_ONLYDIR); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	sq := &squatter{t: t, dir: dir, moved: make(chan struct{}, 1<<16), quit: make(chan struct{}), done: make(chan [2][]string, 1)}
	t.Cleanup(sq.halt) // a test that fails before stop leaves no squatter
	go func() {
		defer unix.Close(fd)
		var made, caught []string
		waiting := map[string]bool{} // made since the last close of dir
		defer func() { sq.done <- [2][]string{made, caught} }()
		buf := make([]byte, 64<<10)
		for {
			select {
			case <-sq.quit:
				return
			default:
			}
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, _ := unix.Poll(pfd, 10); n <= 0 {
				continue
			}
			n, err := unix.Read(fd, buf)
			for off := 0; err == nil && off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
				off += unix.SizeofInotifyEvent + int(ev.Len)
				path := filepath.Join(dir, name)
				switch {
				case ev.Mask&unix.IN_Q_OVERFLOW != 0:
					t.Errorf("inotify overflow on %s", dir)
				case ev.Mask&unix.IN_CLOSE_NOWRITE != 0 && name == "":
					clear(waiting) // dir itself closed: a directory sync ended
				case ev.Mask&unix.IN_MOVED_FROM != 0 && strings.HasPrefix(name, "."):
					if f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
						f.Close()
						made = append(made, path)
						waiting[name] = true
					}
					sq.moved <- struct{}{}
				case ev.Mask&unix.IN_CREATE != 0 && waiting[name]:
					delete(waiting, name)
					caught = append(caught, path)
					sq.inTime.Add(1)
				case ev.Mask&unix.IN_CREATE != 0 && name == squatterStop:
					return
				}
			}
		}
	}()
	return sq
}

// caughtUp waits until the squatter has seen one more rename away (and
// made its file): a test that calls and then waits so never runs ahead of
// it, and every call has the same chance.
func (sq *squatter) caughtUp() {
	sq.t.Helper()
	select {
	case <-sq.moved:
	case <-time.After(20 * time.Second):
		sq.t.Fatalf("the squatter saw no rename away from %s within 20s", sq.dir)
	}
}

// halt stops the squatter now (once).
func (sq *squatter) halt() { sq.halted.Do(func() { close(sq.quit) }) }

// stop stops the squatter once it has seen every event so far, and returns
// every file it made and those of them made in time.
func (sq *squatter) stop() (made, caught []string) {
	path := filepath.Join(sq.dir, squatterStop)
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		sq.t.Error(err)
	}
	var r [2][]string
	select {
	case r = <-sq.done:
	case <-time.After(20 * time.Second):
		sq.t.Errorf("the squatter did not see %s made within 20s", squatterStop)
		sq.halt()
		r = <-sq.done
	}
	if err := os.Remove(path); err != nil {
		sq.t.Error(err)
	}
	return r[0], r[1]
}

// Neither RequestCancel nor Submit removes a file made under its staging
// dot-file's name once that is renamed into place (atomicfile's
// CommitNoReplace; before it, a deferred Cleanup removed the name). Calls
// are made, each once the squatter has dealt with the last, until it has
// made minInTime files in time (see squatter): on a file system whose
// directory fsync is all but free (tmpfs) and a loaded machine, one call
// in hundreds. Fewer within the bound tell too little, and fail the test;
// the old code removed every file made in time.
func TestSubmitAndCancel_KeepOthersFileUnderStagingName(t *testing.T) {
	const (
		minInTime = 5
		bound     = 20 * time.Second
		maxCalls  = 100000 // files in one directory
	)
	s := newSpool(t)
	for _, c := range []struct {
		dir string
		do  func(i int) error
	}{
		{s.Path(DirControl), func(int) error { return s.RequestCancel("J000001") }},
		{s.Dir(Submitted), func(i int) error { _, err := s.Submit(fmt.Sprintf("job%d.yaml", i), []byte(validJob)); return err }},
	} {
		sq := squatStaging(t, c.dir)
		calls := 0
		for deadline := time.Now().Add(bound); calls < maxCalls && sq.inTime.Load() < minInTime && time.Now().Before(deadline); calls++ {
			if err := c.do(calls); err != nil {
				sq.stop()
				t.Fatal(err)
			}
			sq.caughtUp()
		}
		made, caught := sq.stop()
		t.Logf("%s: %d calls, %d files made under a staging name, %d of them in time", filepath.Base(c.dir), calls, len(made), len(caught))
		if len(caught) < minInTime {
			t.Errorf("%s: only %d of %d files made under a staging name in %d calls were made before the call returned; want %d to tell whether it removes them",
				filepath.Base(c.dir), len(caught), len(made), calls, minInTime)
		}
		var gone []string
		for _, path := range made {
			if _, err := os.Lstat(path); err != nil {
				gone = append(gone, filepath.Base(path))
			}
		}
		goneInTime := 0
		for _, path := range caught {
			if slices.Contains(gone, filepath.Base(path)) {
				goneInTime++
			}
		}
		if len(gone) > 0 {
			t.Errorf("%d of %d files made under a staging name in %s removed (%d of the %d made in time), e.g. %s",
				len(gone), len(made), filepath.Base(c.dir), goneInTime, len(caught), gone[0])
		}
	}
}
