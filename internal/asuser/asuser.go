// Package asuser lets a test that runs as root act as an ordinary user:
// a daemon that is not root, a user who does not own a job. It changes the
// effective uid of one OS thread only, so the rest of the test process
// (and the other tests) stay root; no password entry is needed.
package asuser

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// ErrNotRoot is Run's error when the process is not root and so cannot
// take another uid; tests skip on it.
var ErrNotRoot = errors.New("asuser: needs root")

// Run calls fn on a new goroutine whose OS thread has effective uid uid
// (real and saved uid stay 0). It uses the raw setresuid system call, which
// changes the calling thread only; the Go runtime's Setresuid would change
// every thread. The thread is never handed back to the runtime: it ends
// with the goroutine (runtime.LockOSThread without Unlock), and its
// credentials with it. Only fn's own goroutine acts as uid: goroutines fn
// starts run as root, which never denies them what uid could do.
func Run(uid int, fn func() error) error {
	if os.Geteuid() != 0 {
		return ErrNotRoot
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		keep := ^uintptr(0)    // -1: leave unchanged
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, keep, uintptr(uid), keep); e != 0 {
			done <- fmt.Errorf("asuser: setresuid %d: %w", uid, e)
			return
		}
		defer func() {
			if v := recover(); v != nil {
				done <- fmt.Errorf("asuser: uid %d: panic: %v", uid, v)
			}
		}()
		done <- fn()
	}()
	return <-done
}
