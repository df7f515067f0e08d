package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Containing a local job without cgroups.
//
// A job's processes may leave its process group on purpose (setsid,
// setpgid, a daemon's double fork), and the kill of the group at the job's
// end then misses them: they would run on, on hosts msched believes free.
// They stay descendants of the shepherd, though, and a shepherd started by
// ShepherdMain is a child subreaper (prctl PR_SET_CHILD_SUBREAPER): an
// orphan among its descendants is handed to it, not to init. So once the
// job's leader has ended and been reaped, every child the shepherd still has
// is something the job left behind, and runLocal kills them all
// (killChildren) before the Result is written: a job is reported ended only
// when nothing of it runs (or, after 20 s of SIGKILLs, with the survivors
// named in the result's error log). While the job runs, its orphans that exit are
// reaped as they go (waitLeader); a job that forks many would otherwise fill
// the pid table with the shepherd's zombies.
//
// When the shepherd itself is killed, Adopt finds what had left the job's
// process group by an entry of its environment (PidFile.EnvMark), and a
// remote job's wrapper, which has no hold on the job's descendants, does
// the same at every end (sshWrapper). What still escapes: anything the job
// has started outside its own descent (at, cron, a systemd user unit, ssh
// back to this host), and, in those two cases, a process that changed its
// environment.

// becomeSubreaper makes this process the child subreaper of its
// descendants. Only a process that is one job's shepherd and nothing else
// may be one, because the job's end kills every child it has: not a test
// binary that runs Shepherd beside servers of its own.
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("launch: PR_SET_CHILD_SUBREAPER: %w", err)
	}
	return nil
}

// isSubreaper reports whether this process is a child subreaper
// (becomeSubreaper).
func isSubreaper() bool {
	var v int32
	err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&v)), 0, 0, 0)
	return err == nil && v != 0
}

// waitLeader blocks until the job's leader has exited, and leaves it a
// zombie (see waitExitNoReap). With reapOthers (a subreaper whose only
// other children are the job's orphans) it reaps every other child that
// exits meanwhile.
func waitLeader(leader int, reapOthers bool) error {
	if !reapOthers {
		return waitExitNoReap(leader)
	}
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		pid := siginfoPid(&info)
		if pid == leader {
			return nil
		}
		if pid <= 0 {
			// Not a pid this code can read (wait4(0) would reap any
			// child, the leader too): leave the others to the end.
			return waitExitNoReap(leader)
		}
		if !reap(pid) {
			// waitid saw it exit, yet it cannot be reaped: do not spin
			// on it.
			return waitExitNoReap(leader)
		}
	}
}

// siginfoPid is si_pid of a siginfo_t filled in by waitid: the first field
// of the union that follows three ints, aligned to a pointer.
func siginfoPid(info *unix.Siginfo) int {
	const word = unsafe.Sizeof(uintptr(0))
	const off = (3*4 + word - 1) &^ (word - 1)
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), off)))
}

// reap collects pid's exit status if it has exited, and reports whether it
// had.
func reap(pid int) bool {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		return err == nil && got == pid
	}
}

// killChildren sends SIGKILL to every child of this process and reaps it,
// round after round: a process that dies hands its own children to this
// one, the subreaper. It gives up after 50 rounds (about 20 s) and names
// the processes that survive.
func killChildren() error {
	var left []int
	for round := 0; round < 50; round++ {
		var err error
		if left, err = children(left[:0]); err != nil {
			return err
		}
		if len(left) == 0 {
			if !hasChildren() {
				return nil
			}
			// A child of a thread that is ending, handed to another: in
			// no list for an instant.
			sleepBackoff(round)
			continue
		}
		dead := 0
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL) // nothing, to a zombie
			if reap(pid) {
				dead++
			}
		}
		if dead < len(left) {
			sleepBackoff(round)
		}
	}
	if len(left) == 0 {
		return fmt.Errorf("launch: a child that the job left behind is listed nowhere in /proc after 50 rounds")
	}
	return fmt.Errorf("launch: processes %v that the job left behind survive SIGKILL", left)
}

// hasChildren reports whether this process has a child, running or not
// yet reaped: the kernel's answer for the whole process, whichever thread
// the child belongs to (waitid without waiting, nor reaping).
func hasChildren() bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err != unix.ECHILD
		}
	}
}

// children appends this process's children to pids: from each thread's
// /proc children list, which a kernel built without CONFIG_PROC_CHILDREN
// lacks, and then from a scan of every process's parent (on the development
// machine the lists took 0.05 ms, the scan of 65 processes 0.76 ms).
func children(pids []int) ([]int, error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return pids, fmt.Errorf("launch: %w", err)
	}
	for i, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		if i == 0 && errors.Is(err, fs.ErrNotExist) {
			return childrenByScan(pids)
		}
		for _, f := range strings.Fields(string(b)) { // a thread that just ended has none
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}

// childrenByScan is children from a scan of every process.
func childrenByScan(pids []int) ([]int, error) {
	self := os.Getpid()
	err := eachProc(func(pid int, st procStat) {
		if st.ppid == self {
			pids = append(pids, pid)
		}
	})
	return pids, err
}
