package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"msched/atomicfile"
)

// Exit statuses of the shepherd process (ShepherdMain). The run daemon
// tells a job that never ran (ExitNoResult: another attempt may start it)
// from one that ran and ended (ExitUnrecorded: running it again would run
// it twice) by them; Local's Handle does.
const (
	ExitResult     = 0 // the Result is written, whatever the job did
	ExitNoResult   = 1 // no Result, and the job never ran
	ExitBadSpec    = 2 // the spec on stdin is unreadable; nothing ran
	ExitUnrecorded = 3 // the job ran (or may have) and ended, but no Result could be written
)

// ShepherdMain is the whole body of the hidden sub-command (`msched
// shepherd`): it reads the Spec as JSON from stdin and runs Shepherd, and
// returns the process exit status (ExitResult…). Call it before any other
// set-up in main: the shepherd is on every job's start path, so it should
// pay for nothing it does not use.
//
// With the single argument --protocol it prints Protocol instead, so that
// a daemon can check that a shepherd binary matches its own build.
func ShepherdMain() int {
	if len(os.Args) > 1 && os.Args[len(os.Args)-1] == protocolFlag {
		fmt.Println(Protocol())
		return ExitResult
	}
	spec, err := ReadSpec(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return ExitBadSpec
	}
	// This process is the job's shepherd and nothing else: it may own
	// every process a local job starts (contain.go). Without it (a kernel
	// older than 3.4), what leaves the job's process group is found by
	// its environment only if the shepherd dies. An ssh or Slurm job's
	// children here are ssh's and Slurm's commands, whose own orphans are
	// not the job's.
	if spec.SSH == nil && spec.Slurm == nil {
		becomeSubreaper()
	}
	if err := Shepherd(context.Background(), spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, ErrUnrecorded) {
			return ExitUnrecorded
		}
		return ExitNoResult
	}
	return ExitResult
}

// ErrUnrecorded is wrapped by Shepherd's error when the job ended but its
// Result could not be written.
var ErrUnrecorded = errors.New("launch: the job ended but its result could not be written")

// Shepherd starts spec's job in the current process's care, waits for it and
// writes its Result to spec.ResultPath. It returns an error only when it
// could not write the Result (wrapping ErrUnrecorded if the job may have
// run); how the job ended is in the Result.
//
// SIGTERM and SIGINT to the shepherd, and cancelling ctx, cancel the job
// (SIGTERM to its process group, SIGKILL after KillGrace). SIGHUP is
// ignored. The pid file lock is taken over from Local.Start (file descriptor
// 3) when it is there, else Shepherd locks PidPath itself, and it is held
// until the Result is on disk.
//
// A full file system (atomicfile.NoSpace) does not lose the job: the
// writes before the start (the pid record, the host file, the output
// files) wait for space, and a cancel ends that wait (the job never
// starts); the Result, once the job has ended, waits for space however long
// it takes, with the lock held, so that the run daemon, even a restarted
// one, sees a live shepherd and never a lost job. A cancel cannot end that
// wait: the job is over, and only its Result is left to save.
func Shepherd(ctx context.Context, spec Spec) error {
	// First, so that a Cancel arriving from now on is a cancel and not the
	// default action of SIGTERM (death without a result).
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	signal.Ignore(syscall.SIGHUP)

	spec, err := spec.normalize()
	if err != nil {
		return err
	}
	ready := readyPipe(spec.ReadyFD)
	defer ready.Close() // no line: the job never started
	lock, err := inheritOrLock(spec.PidPath)
	if err != nil {
		return err
	}
	defer lock.Close() // releases the lock: only after the Result is written

	rec := PidFile{BootID: bootID(), Shepherd: os.Getpid()}
	if rec.ShepherdStart, err = procStartTime(rec.Shepherd); err != nil {
		return fail(spec, fmt.Errorf("launch: own start time: %w", err))
	}
	if err := untilSpace(ctx, sigs, func() error { return writeRecord(lock, rec) }); errors.Is(err, errCancelled) {
		return recordResult(ctx, spec, cancelledResult())
	} else if err != nil {
		return fail(spec, err)
	}
	notified := false
	res := runJob(ctx, spec, sigs, func(job PidFile) {
		job.BootID, job.Shepherd, job.ShepherdStart = rec.BootID, rec.Shepherd, rec.ShepherdStart
		rec = job
		writeRecord(lock, rec) // best effort: Cancel falls back to the shepherd
		if rec.SlurmJob != "" {
			// The Slurm job runs on without us, even across a crash of
			// this machine: its id must be on disk before it is released,
			// so that recovery cancels it rather than run the job again.
			lock.Sync()
			atomicfile.SyncDir(filepath.Dir(spec.PidPath))
		}
		if ready != nil && !notified {
			notified = true
			if line, err := json.Marshal(rec); err == nil {
				ready.Write(append(line, '\n')) // EPIPE if the daemon is gone: fine
			}
			ready.Close()
		}
	})
	return recordResult(ctx, spec, res)
}

// recordResult writes res to spec.ResultPath, waiting for space as long as
// the file system is full (see Shepherd: not even a cancelled ctx ends that
// wait). An error it returns wraps ErrUnrecorded unless res says the job
// never started.
func recordResult(ctx context.Context, spec Spec, res Result) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err == nil {
		data = append(data, '\n')
		err = atomicfile.RetryNoSpace(context.WithoutCancel(ctx), func() error { return resultWriter(spec, data) }, nil)
	}
	if err != nil && !res.StartError {
		err = fmt.Errorf("%w: %w", ErrUnrecorded, err)
	}
	if err != nil {
		return fail(spec, err)
	}
	return nil
}

// resultWriter is writeResult; tests replace it to make it fail.
var resultWriter = writeResult

// errCancelled is untilSpace's error when a cancel ended its wait.
var errCancelled = errors.New("launch: cancelled")

// untilSpace calls write until it succeeds or fails for another reason than
// a full file system (atomicfile.NoSpace), waiting atomicfile.NoSpaceWait
// between tries, and returns its last error; or errCancelled once a cancel
// (SIGTERM or SIGINT to the shepherd, or ctx) comes while it waits. It is
// for the shepherd's writes before the job starts: the job is then never
// started, which is what a cancel before the start means.
func untilSpace(ctx context.Context, sigs <-chan os.Signal, write func() error) error {
	for round := 0; ; round++ {
		err := write()
		if err == nil || !atomicfile.NoSpace(err) {
			return err
		}
		t := time.NewTimer(atomicfile.NoSpaceWait(round))
		select {
		case <-sigs:
			t.Stop()
			return errCancelled
		case <-ctx.Done():
			t.Stop()
			return errCancelled
		case <-t.C:
		}
	}
}

func cancelledResult() Result {
	return Result{EndedAt: time.Now(), ExitStatus: -1, Reason: "cancelled"}
}

// writeResult writes the Result file atomically and durably: through the
// daemon's staging file when there is one (see Spec.ResultStaging), else a
// new temporary.
func writeResult(spec Spec, data []byte) error {
	dir, name := filepath.Split(spec.ResultPath)
	if spec.ResultStaging != "" && filepath.Dir(spec.ResultStaging) == filepath.Clean(dir) {
		if p, err := atomicfile.Reuse(spec.ResultStaging, dir, name); err == nil {
			defer p.Cleanup()
			if _, err := p.Write(data); err == nil {
				if err := p.Commit(); err == nil {
					return nil
				}
			}
			// fall through: a temporary of our own
		}
	}
	if err := atomicfile.Write("", dir, name, data); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	return nil
}

// fail leaves err where the run daemon's operator can find it: the
// shepherd's stderr is /dev/null.
func fail(spec Spec, err error) error {
	os.WriteFile(spec.ResultPath+errLogSuffix, []byte(err.Error()+"\n"), 0o644)
	return err
}

// startedFunc is how a job runner reports that the job exists: job holds
// the job's part of the pid file record (Pgid and JobStart: the process
// group that killOrphans must kill if the shepherd dies; a runner may add
// fields of its own), and the shepherd fills in its own part, rewrites the
// pid file and, the first time, tells the daemon through the ready pipe. A
// runner calls it once the job's local process group exists, and may call
// it again to record more.
type startedFunc func(job PidFile)

// runJob starts the job and supervises it to the end, with the runner of
// its kind: a Slurm job is submitted to its cluster and followed there
// (runSlurm), an ssh job runs through the ssh client (runSSH), anything else
// on this machine (runLocal). Each runner takes the same arguments: started
// is called once the job exists (see startedFunc).
func runJob(ctx context.Context, spec Spec, sigs <-chan os.Signal, started startedFunc) Result {
	select {
	case <-sigs:
		return cancelledResult()
	case <-ctx.Done():
		return cancelledResult()
	default:
	}
	switch {
	case spec.Slurm != nil:
		return runSlurm(ctx, spec, sigs, started)
	case spec.SSH != nil:
		return runSSH(ctx, spec, sigs, started)
	default:
		return runLocal(ctx, spec, sigs, started)
	}
}

// cannotStart is the Result of a job that never ran.
func cannotStart(err error) Result {
	return Result{EndedAt: time.Now(), ExitStatus: -1, StartError: true,
		Reason: "cannot start: " + err.Error()}
}

// setStatus records how the job ended: an exit status, or a signal (sig
// not 0), and why it was stopped ("" if it ended by itself).
func (r *Result) setStatus(status int, sig syscall.Signal, reason string) {
	r.ExitStatus = status
	if sig != 0 {
		r.ExitStatus = -1
		r.Signal = signalName(sig)
		if reason == "" {
			reason = "killed by " + r.Signal
		}
	} else if reason == "" && status != 0 {
		reason = fmt.Sprintf("exit status %d", status)
	}
	r.Reason = reason
}

// supervise waits until done is closed. The walltime, SIGTERM or SIGINT to
// the shepherd and ctx each stop the job: term is called at once, kill
// after KillGrace if done is still open. It returns why the job was
// stopped: "walltime exceeded", "cancelled", or "" if it ended by itself.
func supervise(ctx context.Context, spec Spec, sigs <-chan os.Signal, done <-chan struct{}, term, kill func()) string {
	var walltime, killTimer <-chan time.Time
	if spec.Walltime > 0 {
		t := time.NewTimer(spec.Walltime)
		defer t.Stop()
		walltime = t.C
	}
	reason := ""
	stop := func(why string) {
		if reason == "" {
			reason = why
		}
		if killTimer == nil {
			term()
			killTimer = time.After(spec.KillGrace)
		}
	}
	ctxDone := ctx.Done()
	for {
		select {
		case <-done:
			return reason
		case <-walltime:
			stop("walltime exceeded")
		case <-sigs:
			stop("cancelled")
		case <-ctxDone:
			ctxDone = nil
			stop("cancelled")
		case <-killTimer:
			kill()
		}
	}
}

// readyPipe returns Spec.ReadyFD as a file, made close-on-exec so that the
// job does not inherit it (the daemon's reader would then wait for the
// job's end, not its start); nil when there is none. The descriptor must be
// a pipe: anything else was not handed over by Local.Start and is left alone.
func readyPipe(fd int) *os.File {
	var st syscall.Stat_t
	if fd <= 2 || syscall.Fstat(fd, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return nil
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "ready")
}

// inheritOrLock returns the locked pid file: file descriptor 3 when it is
// that file (handed over by Local.Start, already locked), else PidPath
// opened and locked here. Descriptor 3 is made close-on-exec so the job does
// not inherit the lock: a job's orphans must not look like a live shepherd.
func inheritOrLock(path string) (*os.File, error) {
	var fdSt, pathSt syscall.Stat_t
	if syscall.Fstat(3, &fdSt) == nil && syscall.Stat(path, &pathSt) == nil &&
		fdSt.Dev == pathSt.Dev && fdSt.Ino == pathSt.Ino {
		syscall.CloseOnExec(3)
		return os.NewFile(3, path), nil
	}
	return lockPidFile(path)
}

// lockPidFile creates (or truncates) the pid file and takes its exclusive
// lock, failing with ErrBusy if a live shepherd holds it.
func lockPidFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	if err := atomicfile.TryLock(f, 0); err != nil {
		f.Close()
		if err == syscall.EWOULDBLOCK {
			return nil, fmt.Errorf("%w: %s", ErrBusy, path)
		}
		return nil, fmt.Errorf("launch: locking %s: %w", path, err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("launch: %w", err)
	}
	return f, nil
}

// writeRecord writes rec over the pid file in place (a rename would replace
// the locked inode). It is not fsynced: a pid means nothing after a reboot.
// A reader may catch it half-written and retries (ReadPidFile reports
// errIncomplete).
func writeRecord(f *os.File, rec PidFile) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	data = append(data, '\n')
	if _, err := f.WriteAt(data, 0); err != nil {
		return fmt.Errorf("launch: writing pid file: %w", err)
	}
	return f.Truncate(int64(len(data)))
}
