package launch

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// The shepherd is root when jobs run as their submitters, and it touches
// files on a job's behalf: it opens the job's output files and checks its
// working directory and program. Each of these must succeed only if the
// user could do it, or a job file saying `stdout: /etc/passwd` would have
// root append to it. The shepherd does them with the user's file-system
// identity (asUser).
//
// How: a goroutine locks itself to a fresh OS thread and sets that thread's
// fsuid, fsgid and supplementary groups with raw system calls. On Linux
// credentials belong to a thread; the C library makes setuid(2) and
// friends process-wide by broadcasting them, and so does Go's syscall
// package since Go 1.16 (AllThreadsSyscall), but a raw SYS_SETFSUID,
// SYS_SETFSGID or SYS_SETGROUPS changes only the calling thread. The
// kernel checks file access against the fsuid and fsgid, and a thread whose
// fsuid leaves 0 loses CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
// and the other file capabilities (capabilities(7)); this is what knfsd and
// Samba do. The goroutine never calls runtime.UnlockOSThread, so the Go
// runtime ends the thread with it and no other goroutine ever runs with
// those credentials, and the runtime clones a new thread from a locked one
// only through its template thread, so they cannot spread either. Nothing
// is forked from that thread: the job is started from the shepherd's
// ordinary threads, with SysProcAttr.Credential.
//
// The alternative, a short-lived helper process running as the user that
// opens the files and passes the descriptors back over a unix socket
// (SCM_RIGHTS), would cost a fork and exec on every job's start path, where
// the shepherd is careful to pay for nothing it does not use, and more code
// to get right; the thread costs one clone.

// otherUser reports whether a job of id runs as another user than the
// shepherd's.
func otherUser(id *Identity) bool { return id != nil && id.UID != os.Geteuid() }

// checkIdentity refuses what the shepherd cannot do: become another user
// without being root.
func checkIdentity(id *Identity) error {
	if otherUser(id) && os.Geteuid() != 0 {
		return fmt.Errorf("the shepherd runs as uid %d, not root, and cannot run a job as %s (uid %d)",
			os.Geteuid(), id.User, id.UID)
	}
	return nil
}

// credential is what the job's process runs as: nil for the shepherd's own
// user, else id's uid, gid and groups (os/exec applies them in the child,
// setgroups, setgid then setuid, before the chdir to the working directory
// and the exec, which therefore happen as the user).
func credential(id *Identity) *syscall.Credential {
	if !otherUser(id) {
		return nil
	}
	c := &syscall.Credential{Uid: uint32(id.UID), Gid: uint32(id.GID)}
	for _, g := range id.Groups {
		c.Groups = append(c.Groups, uint32(g))
	}
	return c // no groups: setgroups(0), so none of root's remain
}

// asUser calls fn with id's file-system identity (see above); for the
// shepherd's own user, or nil, it just calls fn. Goroutines that fn starts
// do not inherit the identity: fn must do its file work itself.
func asUser(id *Identity, fn func() error) error {
	if !otherUser(id) {
		return fn()
	}
	if err := checkIdentity(id); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
		if err := setThreadFSIdentity(id); err != nil {
			done <- err
			return
		}
		defer func() {
			if v := recover(); v != nil {
				done <- fmt.Errorf("launch: as %s: panic: %v", id.User, v)
			}
		}()
		done <- fn()
	}()
	return <-done
}

// setThreadFSIdentity gives the calling thread id's groups, fsgid and fsuid.
// The thread must be locked and never returned to the runtime.
func setThreadFSIdentity(id *Identity) error {
	// gid_t is 32 bits for SYS_SETGROUPS on the 64-bit Linux ports msched
	// runs on (on 386 and arm that would be SYS_SETGROUPS32).
	gids := make([]uint32, len(id.Groups))
	for i, g := range id.Groups {
		gids[i] = uint32(g)
	}
	var p unsafe.Pointer
	if len(gids) > 0 {
		p = unsafe.Pointer(&gids[0])
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, uintptr(len(gids)), uintptr(p), 0); e != 0 {
		return fmt.Errorf("launch: setgroups for %s: %w", id.User, e)
	}
	// setfsgid and setfsuid return the previous value and report no error;
	// calling them again with an invalid id (-1) reads the current one.
	const query = uintptr(^uint32(0))
	syscall.RawSyscall(syscall.SYS_SETFSGID, uintptr(id.GID), 0, 0)
	if g, _, _ := syscall.RawSyscall(syscall.SYS_SETFSGID, query, 0, 0); int(g) != id.GID {
		return fmt.Errorf("launch: setfsgid %d for %s failed", id.GID, id.User)
	}
	syscall.RawSyscall(syscall.SYS_SETFSUID, uintptr(id.UID), 0, 0)
	if u, _, _ := syscall.RawSyscall(syscall.SYS_SETFSUID, query, 0, 0); int(u) != id.UID {
		return fmt.Errorf("launch: setfsuid %d for %s failed", id.UID, id.User)
	}
	return nil
}

// openOutputs opens the job's output files for appending (see Spec.Stdout);
// "" gives nil (os/exec then connects /dev/null). One path for both shares
// one file. Call it as the user (asUser).
func openOutputs(stdoutPath, stderrPath string) (stdout, stderr *os.File, err error) {
	if stdout, err = openOutput("stdout", stdoutPath); err != nil {
		return nil, nil, err
	}
	if stderrPath == stdoutPath {
		return stdout, stdout, nil
	}
	if stderr, err = openOutput("stderr", stderrPath); err != nil {
		if stdout != nil {
			stdout.Close()
		}
		return nil, nil, err
	}
	return stdout, stderr, nil
}

// openOutput opens one output file: never through a symbolic link in the
// last component (O_NOFOLLOW), never blocking (O_NONBLOCK: a FIFO without a
// reader fails at once with ENXIO instead of hanging the shepherd), and
// only a regular file or a character device is accepted, checked on the
// descriptor opened (fstat), not on the name. The descriptor is made
// blocking again for the job.
func openOutput(what, path string) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	const flags = syscall.O_WRONLY | syscall.O_CREAT | syscall.O_APPEND |
		syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, flags, 0o644)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		var st syscall.Stat_t
		if (err == syscall.ELOOP || err == syscall.ENXIO) && syscall.Lstat(path, &st) == nil {
			if kind := fileKind(st.Mode); kind != "" {
				return nil, fmt.Errorf("%s %s: is %s, not a file", what, path, kind)
			}
		}
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	if kind := fileKind(st.Mode); kind != "" {
		syscall.Close(fd)
		return nil, fmt.Errorf("%s %s: is %s, not a file", what, path, kind)
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// fileKind names a file type that is not acceptable as an output file; ""
// for a regular file or a character device.
func fileKind(mode uint32) string {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFREG, syscall.S_IFCHR:
		return ""
	case syscall.S_IFLNK:
		return "a symbolic link (not followed)"
	case syscall.S_IFIFO:
		return "a named pipe"
	case syscall.S_IFSOCK:
		return "a socket"
	case syscall.S_IFDIR:
		return "a directory"
	case syscall.S_IFBLK:
		return "a block device"
	}
	return "of an unknown type"
}

// checkWorkdir checks that dir is a directory the caller may change into:
// resolving dir/. needs search permission on dir itself, as chdir does. Call
// it as the user (asUser). The child's own chdir, as the user, is what
// counts; this check only gives its failure a clear message (a failed chdir
// comes back from os/exec as the exec's error).
func checkWorkdir(dir string) error {
	var st syscall.Stat_t
	err := syscall.Stat(dir+"/.", &st)
	if errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("workdir %s: not a directory", dir)
	}
	if err != nil {
		return fmt.Errorf("workdir %s: %w", dir, err)
	}
	return nil
}
