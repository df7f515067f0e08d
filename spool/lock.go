package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"msched/atomicfile"
)

// ErrDaemonRunning is returned (wrapped) by LockDaemon when another daemon of
// the same kind holds the spool.
var ErrDaemonRunning = errors.New("already running on this spool")

// lockWait is how long LockDaemon waits for a held lock before it reports
// ErrDaemonRunning.
var lockWait = 2 * time.Second

// LockDaemon makes sure only one daemon of each kind works on the spool: two
// run daemons would both start a job and fight over its file (the ownership
// table assumes one owner). It takes an flock(2) on db/<name>.lock, held
// until release is called or the process dies (even by kill -9: the kernel
// drops the lock), and records the holder's pid in the file for the error a
// second daemon gets.
//
// A lock still held after lockWait (2 s) is another daemon's. LockDaemon
// waits that long rather than failing at once, because a lock that was just
// released can still look held for a moment: a process that forks (the run
// daemon starting a job, in a process that hosts several daemons) gives the
// child a copy of every descriptor, the lock's too, until the child execs
// and its close-on-exec copy goes. A daemon restarted in such a process
// would otherwise fail to start for no reason.
func (s *Spool) LockDaemon(name string) (release func() error, err error) {
	if !plainName(name) {
		return nil, fmt.Errorf("spool: lock: bad daemon name %q", name)
	}
	path := filepath.Join(s.Path(DirDB), name+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, FilePerm)
	if err != nil {
		return nil, fmt.Errorf("spool: lock %s: %w", name, err)
	}
	err = atomicfile.TryLock(f, lockWait)
	if err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "another process"
			if b, rerr := os.ReadFile(path); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
					holder = "pid " + strconv.Itoa(pid)
				}
			}
			return nil, fmt.Errorf("spool: %s daemon %w (%s holds %s)", name, ErrDaemonRunning, holder, path)
		}
		return nil, fmt.Errorf("spool: lock %s: %w", name, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f.Close, nil // closing the descriptor releases the lock
}
