package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"msched/atomicfile"
)

// A Launcher starts jobs. Start returns once the job's shepherd runs (not
// once the job itself has started: a failure to start the job comes back as
// a Result with StartError set). Cancelling ctx only abandons a Start that has
// not forked yet; it never ends a started job.
type Launcher interface {
	Start(ctx context.Context, spec Spec) (Handle, error)
}

// A Handle follows one started job.
type Handle interface {
	// Wait blocks until the job has ended and its Result is on disk, or ctx
	// is done (the job keeps running). It returns an error wrapping ErrLost
	// if the shepherd died without a Result and the job may never have run
	// (the job is then dead too). A job that ran and ended but whose
	// shepherd could not write its Result (ExitUnrecorded) is not lost: its
	// Result, made here, says so in Reason.
	Wait(ctx context.Context) (Result, error)
	// Cancel asks the shepherd to end the job: SIGTERM to its process
	// group, SIGKILL after KillGrace. It does not wait; the Result says
	// "cancelled". Cancelling an ended job does nothing.
	Cancel() error
	// Pid is the shepherd's pid (0 if not yet known after Adopt).
	Pid() int
}

// A StartNotifier is a Handle that hears from its shepherd when the job has
// started: Started delivers the shepherd's PidFile record (with the job's
// process group) and is then closed, or is closed without one if the job
// never started. Local's handles are; adopted ones are not (poll the pid
// file).
type StartNotifier interface {
	Started() <-chan PidFile
}

var (
	// ErrLost means the shepherd ended without writing a Result: the job
	// was lost in flight and may be re-queued (what was left of it has been
	// killed).
	ErrLost = errors.New("launch: shepherd gone without a result, job lost in flight")
	// ErrBusy means a live shepherd already holds the pid file.
	ErrBusy = errors.New("launch: pid file held by a live shepherd")
)

// Local runs jobs on this machine through a shepherd process.
type Local struct {
	// Exe is the binary that acts as shepherd; "" means DefaultShepherd
	// (msched-shepherd next to this executable, else this executable).
	Exe string
	// Args select the shepherd sub-command of Exe; nil means ["shepherd"].
	// Ignored when Exe is "".
	Args []string
}

// Start implements Launcher. The shepherd is started in a new session
// (Setsid), outside the caller's process group, so that neither a signal
// meant for the daemon nor its death reaches the job.
func (l Local) Start(ctx context.Context, spec Spec) (Handle, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	spec, err := spec.normalize()
	if err != nil {
		return nil, err
	}
	exe, args := l.Exe, l.Args
	if exe == "" {
		if exe, args, _, err = DefaultShepherd(); err != nil {
			return nil, err
		}
	} else if args == nil {
		args = []string{"shepherd"}
	}
	// Lock before the fork: from this instant until the shepherd exits,
	// the lock says "a shepherd may be running" (see Adopt).
	lock, err := lockPidFile(spec.PidPath)
	if err != nil {
		return nil, err
	}
	defer lock.Close() // the shepherd keeps its own copy
	// An earlier attempt's result would be taken for this one's.
	for _, p := range []string{spec.ResultPath, spec.ResultPath + errLogSuffix} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("launch: %w", err)
		}
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	defer readyW.Close() // the shepherd keeps its own copy
	spec.ReadyFD = 4     // ExtraFiles[1]
	data, err := json.Marshal(spec)
	if err != nil {
		readyR.Close()
		return nil, fmt.Errorf("launch: %w", err)
	}
	stdin, err := specReader(data)
	if err != nil {
		readyR.Close()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:        exe,
		Args:        append([]string{exe}, args...),
		Stdin:       stdin,
		ExtraFiles:  []*os.File{lock, readyW}, // descriptors 3 and 4 in the shepherd
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = cmd.Start()
	if f, ok := stdin.(*os.File); ok {
		f.Close()
	}
	if err != nil {
		readyR.Close()
		return nil, fmt.Errorf("launch: starting shepherd: %w", err)
	}
	h := &localHandle{spec: spec, cmd: cmd, done: make(chan struct{}), ready: make(chan PidFile, 1)}
	go func() {
		h.waitErr = cmd.Wait() // reaps the shepherd even if nobody Waits
		close(h.done)
	}()
	go func() {
		// One line once the job's process group exists; EOF if it never
		// does (or the shepherd dies). Bounded by the shepherd's life.
		defer readyR.Close()
		defer close(h.ready)
		var rec PidFile
		if err := json.NewDecoder(readyR).Decode(&rec); err == nil {
			h.ready <- rec
		}
	}()
	return h, nil
}

// Started is closed when the shepherd has started the job, after
// delivering its PidFile record (with the job's process group), or
// without one if the job never started or the shepherd died first.
func (h *localHandle) Started() <-chan PidFile { return h.ready }

// specReader hands the spec over through a pipe filled before the fork, so
// that the shepherd gets all of it even if the daemon dies right after the
// fork, and no goroutine is needed to feed it. 4 KiB is what a pipe holds
// even when the user's pipe buffer quota is exhausted; a larger spec is fed
// by os/exec's copying goroutine.
func specReader(data []byte) (io.Reader, error) {
	if len(data) > 4096 {
		return bytes.NewReader(data), nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	_, err = w.Write(data)
	w.Close()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("launch: %w", err)
	}
	return r, nil
}

// localHandle is the Handle of a shepherd that this process started; the
// shepherd is our child, so we learn of its end from wait(2), not by polling.
type localHandle struct {
	spec      Spec
	cmd       *exec.Cmd
	done      chan struct{}
	ready     chan PidFile // Started
	waitErr   error
	cancelled atomic.Bool

	once sync.Once
	res  Result
	err  error
}

func (h *localHandle) Pid() int { return h.cmd.Process.Pid }

func (h *localHandle) Cancel() error {
	h.cancelled.Store(true)
	// os.Process signals through a pidfd: it cannot hit a reused pid.
	err := h.cmd.Process.Signal(syscall.SIGTERM)
	if err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("launch: cancel %s: %w", h.spec.JID, err)
	}
	return nil
}

func (h *localHandle) Wait(ctx context.Context) (Result, error) {
	select {
	case <-h.done:
	case <-ctx.Done():
		return Result{}, fmt.Errorf("launch: %w", ctx.Err())
	}
	h.once.Do(func() { h.res, h.err = h.outcome() })
	return h.res, h.err
}

// outcome reads the Result of a shepherd that has exited.
func (h *localHandle) outcome() (Result, error) {
	res, ok, err := readResult(h.spec.ResultPath)
	if ok || err != nil {
		return res, err
	}
	// A shepherd killed by our SIGTERM without a result was killed before
	// it installed its handler, which it does before starting the job: the
	// job never ran, and that is what a cancel before the start means.
	if ws, ok := h.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && h.cancelled.Load() &&
		ws.Signaled() && ws.Signal() == syscall.SIGTERM {
		res = Result{EndedAt: time.Now(), ExitStatus: -1, Reason: "cancelled"}
		data, _ := json.MarshalIndent(res, "", "  ")
		if err := atomicfile.Write("", filepath.Dir(h.spec.ResultPath), filepath.Base(h.spec.ResultPath), append(data, '\n')); err != nil {
			return res, fmt.Errorf("launch: %w", err)
		}
		return res, nil
	}
	if rec, err := ReadPidFile(h.spec.PidPath); err == nil {
		killOrphans(rec)
	}
	detail := h.waitErr
	if b, err := os.ReadFile(h.spec.ResultPath + errLogSuffix); err == nil {
		detail = fmt.Errorf("%v: %s", h.waitErr, bytes.TrimSpace(b))
	}
	if h.cmd.ProcessState.ExitCode() == ExitUnrecorded {
		// The job ran and ended; only its outcome is unknown. It is not
		// lost: another attempt would run it twice.
		return Result{EndedAt: time.Now(), ExitStatus: -1,
			Reason: fmt.Sprintf("ended, but its shepherd could not record how (%v)", detail)}, nil
	}
	return Result{}, fmt.Errorf("%w: %s: shepherd: %v", ErrLost, h.spec.JID, detail)
}

// readResult reads a result file; ok is false if there is none yet.
func readResult(path string) (res Result, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return res, false, nil
	}
	if err != nil {
		return res, false, fmt.Errorf("launch: %w", err)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return res, false, fmt.Errorf("launch: result %s: %w", path, err)
	}
	return res, true, nil
}
