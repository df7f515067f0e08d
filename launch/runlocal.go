package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// runLocal runs the job on this machine as Spec.Identity: Argv, or mpirun
// with Argv over the job's hosts (all of them this machine) with MPI set.
func runLocal(ctx context.Context, spec Spec, sigs <-chan os.Signal, started startedFunc) Result {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		res := cannotStart(errors.New("empty argv"))
		res.Permanent = true
		return res
	}
	if err := checkIdentity(spec.Identity); err != nil {
		return cannotStart(err)
	}
	argv := spec.Argv
	if spec.MPI != nil {
		var err error
		if argv, err = localMPIArgv(spec); err != nil {
			return cannotStart(err)
		}
	}
	// These writes wait for space on a full file system (untilSpace): a
	// start error would cost the job an attempt, and a few of them its run.
	err := untilSpace(ctx, sigs, func() error { return writeHostfile(spec.HostfilePath, spec.hostLines()) })
	if errors.Is(err, errCancelled) {
		return cancelledResult()
	} else if err != nil {
		return cannotStart(fmt.Errorf("host file: %w", err))
	}
	env := spec.jobEnv(os.Environ())
	jobPath, _ := lookupEnv(env, "PATH")
	var (
		path           string
		stdout, stderr *os.File
	)
	// The checks and opens the user could not do must fail: as the user.
	err = untilSpace(ctx, sigs, func() error {
		return asUser(spec.Identity, func() error {
			if spec.Dir != "" {
				if err := checkWorkdir(spec.Dir); err != nil {
					return err
				}
			}
			var err error
			if path, err = lookPath(argv[0], jobPath); err != nil {
				return &execError{err}
			}
			stdout, stderr, err = openOutputs(spec.Stdout, spec.Stderr)
			return err
		})
	})
	if errors.Is(err, errCancelled) {
		return cancelledResult()
	} else if err != nil {
		return cannotStartFor(err, spec.MPI == nil)
	}
	cmd := &exec.Cmd{
		Path: path, Args: argv, Dir: spec.Dir, Env: env,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:    true,
			Credential: credential(spec.Identity),
			// If the shepherd dies, its job must not run on unsupervised:
			// a restarted daemon would see it as lost and run it again.
			// (os/exec sets it after the credentials change, which would
			// otherwise clear it.)
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
		// The working directory was checked above as the user: what exec
		// says now is about the program (or argv's size).
		return cannotStartFor(&execError{err}, spec.MPI == nil)
	}
	res := Result{StartedAt: time.Now()}
	pgid := cmd.Process.Pid
	start, _ := procStartTime(pgid)
	started(PidFile{Pgid: pgid, JobStart: start, EnvMark: envMark(env)})

	// A shepherd that is a subreaper owns every process the job starts,
	// wherever it moves (contain.go).
	contain := isSubreaper()
	exited := make(chan struct{})
	go func() {
		waitLeader(pgid, contain)
		close(exited)
	}()
	reason := supervise(ctx, spec, sigs, exited,
		func() { syscall.Kill(-pgid, syscall.SIGTERM) },
		func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	// The leader has exited but is not yet reaped, so the group id is still
	// ours: whatever the job left behind in its group goes with it.
	syscall.Kill(-pgid, syscall.SIGKILL)
	cmd.Wait()
	res.EndedAt = time.Now()
	if contain {
		// What left the group goes too, before the job is reported ended;
		// a process that survives SIGKILL for 20 s is named in the
		// result's error log, and the job is reported ended all the same.
		if err := killChildren(); err != nil {
			fail(spec, err)
		}
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		res.setStatus(-1, ws.Signal(), reason)
	} else {
		res.setStatus(ws.ExitStatus(), 0, reason)
	}
	return res
}

// writeHostfile writes the job's host file, readable by the job's user: a
// file the daemon placed there (Spec.HostfilePath, from its recycled files)
// keeps its mode when rewritten, so the mode is set too.
func writeHostfile(path string, lines []string) error {
	if err := os.WriteFile(path, []byte(hostfileText(lines)), 0o644); err != nil {
		return err
	}
	return os.Chmod(path, 0o644)
}

func hostfileText(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
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

// execError marks an error about the job's program itself (finding it,
// executing it), as opposed to its working directory or output files.
type execError struct{ err error }

func (e *execError) Error() string { return e.err.Error() }
func (e *execError) Unwrap() error { return e.err }

// cannotStartFor is cannotStart, with Permanent set when err says that no
// attempt could start the job (see Result.Permanent): an execError of the
// job's own program (own: not mpirun) that is not found, not executable or
// given too large an argument list.
func cannotStartFor(err error, own bool) Result {
	res := cannotStart(err)
	var ee *execError
	if own && errors.As(err, &ee) {
		for _, never := range []error{exec.ErrNotFound, syscall.ENOENT, syscall.ENOTDIR, syscall.ENOEXEC, syscall.EACCES, syscall.E2BIG} {
			if errors.Is(err, never) {
				res.Permanent = true
			}
		}
	}
	return res
}
