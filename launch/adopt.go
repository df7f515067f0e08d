package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// State is what Adopt found of a job started before a restart.
type State int

const (
	// Gone: no Result and no shepherd. The job is lost in flight (or was
	// never started); what was left of it has been killed.
	Gone State = iota
	// Running: a shepherd is alive; follow it with the Adoption's Handle.
	Running
	// Finished: the Result is in the Adoption.
	Finished
)

func (s State) String() string {
	switch s {
	case Gone:
		return "gone"
	case Running:
		return "running"
	case Finished:
		return "finished"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Adoption is the outcome of Adopt.
type Adoption struct {
	State  State
	Result Result // when Finished
	Handle Handle // when Running
}

// Adopt finds out what became of a job whose shepherd this process may not
// have started: the run daemon calls it on restart for each job in running/.
// The result file is looked at before and after the lock, because the
// shepherd writes its result and then releases the lock: a shepherd that
// finishes between the two looks is seen as Finished, never as Gone.
func Adopt(pidPath, resultPath string) (Adoption, error) {
	res, ok, err := readResult(resultPath)
	if err != nil {
		return Adoption{}, err
	}
	if ok {
		return Adoption{State: Finished, Result: res}, nil
	}
	held, err := lockHeld(pidPath)
	if err != nil {
		return Adoption{}, err
	}
	if held {
		h := &adoptedHandle{pidPath: pidPath, resultPath: resultPath}
		h.rec, _ = awaitRecord(pidPath) // if still incomplete, Pid and Cancel re-read
		return Adoption{State: Running, Handle: h}, nil
	}
	if res, ok, err = readResult(resultPath); err != nil || ok {
		return Adoption{State: Finished, Result: res}, err
	}
	if rec, err := ReadPidFile(pidPath); err == nil {
		if err := killOrphans(rec); err != nil {
			return Adoption{}, err
		}
	}
	return Adoption{State: Gone}, nil
}

// awaitRecord reads the pid file of a live shepherd, giving a shepherd that
// has just been forked a moment (bounded by recordWait) to write it.
func awaitRecord(pidPath string) (PidFile, error) {
	deadline := time.Now().Add(recordWait)
	for {
		rec, err := ReadPidFile(pidPath)
		if err == nil || !errors.Is(err, errIncomplete) || time.Now().After(deadline) {
			return rec, err
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// recordWait bounds how long a fresh shepherd may take to write its pid
// record: an exec and a Go runtime start, far less than this on an idle
// machine, but a loaded one may be slow.
const recordWait = 2 * time.Second

// lockHeld reports whether a shepherd (or a Start about to fork one) holds
// the pid file's lock. No pid file means no shepherd: Start creates it
// before forking.
func lockHeld(pidPath string) (bool, error) {
	f, err := os.Open(pidPath)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("launch: %w", err)
	}
	defer f.Close()
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err {
	case nil:
		return false, nil // closing f drops our probe lock
	case syscall.EWOULDBLOCK:
		return true, nil
	default:
		return false, fmt.Errorf("launch: probing lock of %s: %w", pidPath, err)
	}
}

// Poll intervals for an adopted shepherd, which is not our child: start
// short, since most jobs of a busy system are short, and back off to a
// bound that keeps an idle daemon cheap and a finished job noticed promptly.
const (
	pollMin = 20 * time.Millisecond
	pollMax = 500 * time.Millisecond
)

func backoff(round int) time.Duration {
	d := pollMin << min(round, 10)
	return min(d, pollMax)
}

func sleepBackoff(round int) { time.Sleep(backoff(round)) }

// adoptedHandle follows a shepherd found by Adopt, by polling its files.
type adoptedHandle struct {
	pidPath, resultPath string
	rec                 PidFile
}

func (h *adoptedHandle) Pid() int {
	if h.rec.Shepherd == 0 {
		h.rec, _ = awaitRecord(h.pidPath)
	}
	return h.rec.Shepherd
}

func (h *adoptedHandle) Wait(ctx context.Context) (Result, error) {
	for round := 0; ; round++ {
		a, err := Adopt(h.pidPath, h.resultPath)
		if err != nil {
			return Result{}, err
		}
		switch a.State {
		case Finished:
			return a.Result, nil
		case Gone:
			// The shepherd's own last words, if it left any (a panic, a
			// fatal error), say why.
			if b, err := os.ReadFile(h.resultPath + errLogSuffix); err == nil && len(bytes.TrimSpace(b)) > 0 {
				return Result{}, fmt.Errorf("%w: %s: shepherd: %s", ErrLost, h.pidPath, bytes.TrimSpace(b))
			}
			return Result{}, fmt.Errorf("%w: %s", ErrLost, h.pidPath)
		}
		t := time.NewTimer(backoff(round))
		select {
		case <-ctx.Done():
			t.Stop()
			return Result{}, fmt.Errorf("launch: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// Cancel signals the shepherd once its record is readable and names a live
// process with the recorded start time; a pid that has been reused is never
// signalled. If the shepherd is gone, the job's leftovers are killed.
func (h *adoptedHandle) Cancel() error {
	for round := 0; ; round++ {
		rec, err := awaitRecord(h.pidPath)
		if err == nil {
			h.rec = rec
			if sameProcess(rec.Shepherd, rec.ShepherdStart, rec.BootID) {
				if err := syscall.Kill(rec.Shepherd, syscall.SIGTERM); err != nil && err != syscall.ESRCH {
					return fmt.Errorf("launch: cancel: %w", err)
				}
				return nil
			}
		}
		held, lerr := lockHeld(h.pidPath)
		if lerr != nil {
			return lerr
		}
		if !held {
			// Finished or gone: nothing to cancel but leftovers.
			if err == nil {
				return killOrphans(rec)
			}
			return nil
		}
		// Held, yet the record is not whole or names a process that is not
		// there: the shepherd is exiting right now; look again.
		if round >= 3 {
			return fmt.Errorf("launch: cancel: shepherd of %s holds its pid file but names no live process: %v", h.pidPath, err)
		}
		sleepBackoff(round)
	}
}
