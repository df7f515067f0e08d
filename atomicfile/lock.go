package atomicfile

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// lockPoll is the pause between TryLock's attempts.
const lockPoll = 10 * time.Millisecond

// TryLock takes an exclusive flock(2) on f without blocking, trying again
// every 10 ms for up to wait while another holder has it (wait 0: one
// try), and across interrupted calls (EINTR). It returns
// syscall.EWOULDBLOCK if the lock is still held after wait. Closing f (or
// the process ending, even by kill -9) releases the lock.
//
// Why wait at all: a lock that was just released can still look held for a
// moment in a process that forks (the run daemon starting a job): the child
// has a copy of every descriptor, the lock's too, until it execs and its
// close-on-exec copy goes. Lock files of msched's daemons, of the host
// statistics store and of the web page's login counts are taken this way.
func TryLock(f *os.File, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == syscall.EINTR:
		case errors.Is(err, syscall.EWOULDBLOCK) && time.Now().Before(deadline):
			time.Sleep(lockPoll)
		default:
			return err
		}
	}
}
