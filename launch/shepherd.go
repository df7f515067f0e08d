package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"msched/atomicfile"
)

// ShepherdMain is the whole body of the hidden sub-command (`msched
// shepherd`): it reads the Spec as JSON from stdin and runs Shepherd. It
// returns the process exit status: 0 once a Result is written, whatever the
// job did; 1 when no Result could be written; 2 for an unreadable spec. Call
// it before any other set-up in main: the shepherd is on every job's start
// path, so it should pay for nothing it does not use.
//
// With the single argument --protocol it prints Protocol instead, so that
// a daemon can check that a shepherd binary matches its own build.
func ShepherdMain() int {
	if len(os.Args) > 1 && os.Args[len(os.Args)-1] == protocolFlag {
		fmt.Println(Protocol())
		return 0
	}
	spec, err := ReadSpec(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := Shepherd(context.Background(), spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// Shepherd starts spec's job in the current process's care, waits for it and
// writes its Result to spec.ResultPath. It returns an error only when it
// could not write the Result; how the job ended is in the Result.
//
// SIGTERM and SIGINT to the shepherd, and cancelling ctx, cancel the job
// (SIGTERM to its process group, SIGKILL after KillGrace). SIGHUP is
// ignored. The pid file lock is taken over from Local.Start (file descriptor
// 3) when it is there, else Shepherd locks PidPath itself, and it is held
// until the Result is on disk.
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
	if err := writeRecord(lock, rec); err != nil {
		return fail(spec, err)
	}
	res := runJob(ctx, spec, sigs, func(pgid int, start uint64) {
		rec.Pgid, rec.JobStart = pgid, start
		writeRecord(lock, rec) // best effort: Cancel falls back to the shepherd
		if ready != nil {
			if line, err := json.Marshal(rec); err == nil {
				ready.Write(append(line, '\n')) // EPIPE if the daemon is gone: fine
			}
			ready.Close()
		}
	})
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fail(spec, fmt.Errorf("launch: %w", err))
	}
	if err := writeResult(spec, append(data, '\n')); err != nil {
		return fail(spec, err)
	}
	return nil
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
	return writeFileAtomic(spec.ResultPath, data)
}

// fail leaves err where the run daemon's operator can find it: the
// shepherd's stderr is /dev/null.
func fail(spec Spec, err error) error {
	os.WriteFile(spec.ResultPath+errLogSuffix, []byte(err.Error()+"\n"), 0o644)
	return err
}

// runJob starts the job and supervises it to the end. started is called once
// the job's process group exists.
func runJob(ctx context.Context, spec Spec, sigs <-chan os.Signal, started func(pgid int, start uint64)) Result {
	cannot := func(err error) Result {
		return Result{EndedAt: time.Now(), ExitStatus: -1, StartError: true,
			Reason: "cannot start: " + err.Error()}
	}
	select {
	case <-sigs:
		return Result{EndedAt: time.Now(), ExitStatus: -1, Reason: "cancelled"}
	case <-ctx.Done():
		return Result{EndedAt: time.Now(), ExitStatus: -1, Reason: "cancelled"}
	default:
	}
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return cannot(errors.New("empty argv"))
	}
	if spec.Dir != "" {
		fi, err := os.Stat(spec.Dir)
		if err != nil {
			return cannot(fmt.Errorf("workdir: %w", err))
		}
		if !fi.IsDir() {
			return cannot(fmt.Errorf("workdir %s: not a directory", spec.Dir))
		}
	}
	if err := os.WriteFile(spec.HostfilePath, []byte(hostfileText(spec.Hosts)), 0o644); err != nil {
		return cannot(fmt.Errorf("host file: %w", err))
	}
	env := spec.jobEnv(os.Environ())
	path, err := lookPath(spec.Argv[0], lastValue(env, "PATH"))
	if err != nil {
		return cannot(err)
	}
	stdout, stderr, err := openOutputs(spec.Stdout, spec.Stderr)
	if err != nil {
		return cannot(err)
	}
	cmd := &exec.Cmd{
		Path: path, Args: spec.Argv, Dir: spec.Dir, Env: env,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid: true,
			// If the shepherd dies, its job must not run on unsupervised:
			// a restarted daemon would see it as lost and run it again.
			Pdeathsig: syscall.SIGKILL,
		},
	}
	// Assign only non-nil files: a nil *os.File in the io.Writer would not
	// be nil, and os/exec would try to copy to it.
	if stdout != nil {
		cmd.Stdout = stdout
	}
	if stderr != nil {
		cmd.Stderr = stderr
	}
	err = cmd.Start()
	stdout.Close()
	if stderr != stdout {
		stderr.Close()
	}
	if err != nil {
		return cannot(err)
	}
	res := Result{StartedAt: time.Now()}
	pgid := cmd.Process.Pid
	start, _ := procStartTime(pgid)
	started(pgid, start)

	exited := make(chan struct{})
	go func() {
		waitExitNoReap(pgid)
		close(exited)
	}()
	var walltime, kill <-chan time.Time
	if spec.Walltime > 0 {
		t := time.NewTimer(spec.Walltime)
		defer t.Stop()
		walltime = t.C
	}
	reason := ""
	terminate := func(why string) {
		if reason == "" {
			reason = why
		}
		if kill == nil {
			syscall.Kill(-pgid, syscall.SIGTERM)
			kill = time.After(spec.KillGrace)
		}
	}
	ctxDone := ctx.Done()
wait:
	for {
		select {
		case <-exited:
			break wait
		case <-walltime:
			terminate("walltime exceeded")
		case <-sigs:
			terminate("cancelled")
		case <-ctxDone:
			ctxDone = nil
			terminate("cancelled")
		case <-kill:
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
	// The leader has exited but is not yet reaped, so the group id is still
	// ours: whatever the job left behind in its group goes with it.
	syscall.Kill(-pgid, syscall.SIGKILL)
	cmd.Wait()
	res.EndedAt = time.Now()
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		res.ExitStatus = -1
		res.Signal = signalName(ws.Signal())
		if reason == "" {
			reason = "killed by " + res.Signal
		}
	default:
		res.ExitStatus = ws.ExitStatus()
		if reason == "" && res.ExitStatus != 0 {
			reason = fmt.Sprintf("exit status %d", res.ExitStatus)
		}
	}
	res.Reason = reason
	return res
}

func hostfileText(hosts []string) string {
	if len(hosts) == 0 {
		return ""
	}
	return strings.Join(hosts, "\n") + "\n"
}

// lookPath finds name in the job's PATH (which may differ from the
// shepherd's). Names with a slash are used as they are; os/exec resolves a
// relative one against the working directory. Relative PATH entries are
// skipped, for the reason os/exec refuses them (ErrDot): a job must not run
// whatever happens to lie in its working directory under a command's name.
func lookPath(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

func lastValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// openOutputs opens the job's output files for appending; "" gives nil
// (os/exec then connects /dev/null). One path for both shares one file.
func openOutputs(stdoutPath, stderrPath string) (stdout, stderr *os.File, err error) {
	open := func(p string) (*os.File, error) {
		if p == "" {
			return nil, nil
		}
		return os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	}
	if stdout, err = open(stdoutPath); err != nil {
		return nil, nil, err
	}
	if stderrPath == stdoutPath {
		return stdout, stdout, nil
	}
	if stderr, err = open(stderrPath); err != nil {
		stdout.Close()
		return nil, nil, err
	}
	return stdout, stderr, nil
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
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
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
