package atomicfile

import (
	"context"
	"errors"
	"syscall"
	"time"
)

// Waits between tries of a write that found its file system full: short
// at first, since space often comes back as soon as a big file is removed,
// and bounded, so that a write resumes within NoSpaceMaxWait of space
// coming back while a long outage costs one try a second.
const (
	NoSpaceMinWait = 10 * time.Millisecond
	NoSpaceMaxWait = time.Second
)

// NoSpace reports whether err is a file system out of space (ENOSPC) or a
// user over quota (EDQUOT): a failure that ends when space is freed, so the
// same write is worth trying again. Other errors are not: a write that
// failed for them would fail the same way again.
func NoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// NoSpaceWait is how long to wait before try round+1 (from 0) of a write
// that found no space: NoSpaceMinWait doubling up to NoSpaceMaxWait.
func NoSpaceWait(round int) time.Duration {
	return min(NoSpaceMinWait<<min(round, 16), NoSpaceMaxWait)
}

// RetryNoSpace calls write until it succeeds or fails for another reason
// than NoSpace, waiting NoSpaceWait between tries, and returns write's last
// error. It gives up when ctx is done, with write's last error (not ctx's:
// the caller learns what went wrong with the write). waiting, if not nil,
// is called before each wait with the error and the round, so that a
// caller can say once that it is waiting for space.
//
// write must be safe to repeat: every writer in this package is (a failed
// write leaves the target as it was).
func RetryNoSpace(ctx context.Context, write func() error, waiting func(err error, round int)) error {
	for round := 0; ; round++ {
		err := write()
		if err == nil || !NoSpace(err) || ctx.Err() != nil {
			return err
		}
		if waiting != nil {
			waiting(err, round)
		}
		t := time.NewTimer(NoSpaceWait(round))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
