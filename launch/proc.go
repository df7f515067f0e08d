package launch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// PidFile is the record a shepherd writes into its pid file. Start times are
// in clock ticks since boot (field 22 of /proc/<pid>/stat); together with the
// boot id they identify a process, where a pid alone may have been reused.
type PidFile struct {
	BootID        string `json:"boot_id"`
	Shepherd      int    `json:"shepherd_pid"`
	ShepherdStart uint64 `json:"shepherd_start"`
	// Pgid is the job's process group (its leader's pid); 0 until the job
	// has started.
	Pgid     int    `json:"job_pgid,omitempty"`
	JobStart uint64 `json:"job_start,omitempty"`
	// EnvMark is an entry of a local job's environment that no other
	// job's has (MSCHED_HOSTFILE, a path under the spool named by the
	// JID): if the shepherd dies, the job's processes that left its
	// process group are found by it (killOrphans).
	EnvMark string `json:"env_mark,omitempty"`
	// SlurmJob is the Slurm job id of a Slurm job (Spec.Slurm), with its
	// cluster's SLURM_CONF; such a job has no local process group.
	SlurmJob  string `json:"slurm_job,omitempty"`
	SlurmConf string `json:"slurm_conf,omitempty"`
	SlurmBin  string `json:"slurm_bin,omitempty"` // Slurm.BinDir
	// SlurmUID and SlurmJID are whose the Slurm job is: the uid it was
	// submitted as and the msched JID of its comment. Slurm must still say
	// so before the job is cancelled by this id (killSlurm).
	SlurmUID int    `json:"slurm_uid,omitempty"`
	SlurmJID string `json:"slurm_jid,omitempty"`
}

// ReadPidFile reads a pid file. A file that exists but is empty or not yet
// whole (the shepherd is writing it) gives an error wrapping errIncomplete.
func ReadPidFile(path string) (PidFile, error) {
	var p PidFile
	data, err := os.ReadFile(path)
	if err != nil {
		return p, fmt.Errorf("launch: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return p, fmt.Errorf("launch: pid file %s: %w", path, errIncomplete)
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return p, fmt.Errorf("launch: pid file %s: %w (%v)", path, errIncomplete, err)
	}
	return p, nil
}

var errIncomplete = errors.New("incomplete")

// procStartTime returns the start time of pid in clock ticks since boot.
func procStartTime(pid int) (uint64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	st, err := parseStat(data)
	return st.start, err
}

// procStat is what msched reads of a /proc/<pid>/stat line.
type procStat struct {
	state byte   // field 3: 'R', 'S', 'Z'…
	ppid  int    // field 4
	pgrp  int    // field 5
	start uint64 // field 22: starttime, in clock ticks since boot
}

// parseStat extracts the fields of procStat from a /proc/<pid>/stat line.
// The command name (field 2) is in parentheses and may itself contain spaces
// and parentheses, so fields are counted from the last ')'.
func parseStat(stat []byte) (procStat, error) {
	var st procStat
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return st, errors.New("launch: malformed /proc stat")
	}
	// After ')' come fields 3 (state) onwards: field n is f[n-3].
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return st, errors.New("launch: short /proc stat")
	}
	var err error
	st.state = f[0][0]
	if st.ppid, err = strconv.Atoi(f[1]); err != nil {
		return st, err
	}
	if st.pgrp, err = strconv.Atoi(f[2]); err != nil {
		return st, err
	}
	st.start, err = strconv.ParseUint(f[19], 10, 64)
	return st, err
}

// bootID identifies the current boot, so that start times recorded before a
// reboot are never compared with processes after it.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// sameProcess reports whether pid is (still) the process that had start
// time start in boot boot. A zombie counts: it is not reused until reaped.
func sameProcess(pid int, start uint64, boot string) bool {
	if pid <= 0 || start == 0 || boot != bootID() {
		return false
	}
	t, err := procStartTime(pid)
	return err == nil && t == start
}

// killOrphans sends SIGKILL to every process left in the job's process
// group, repeating until none is left (a dying member may fork) or a bound of
// rounds is reached. It is used when the shepherd is gone, the only time a
// job's processes can be left without a supervisor.
//
// The group id is the leader's pid, so it must not be trusted blindly: if a
// process with that pid exists and is not our leader (start time differs),
// the id has been reused and the group is not signalled. If the leader is
// gone, the kernel does not hand its pid out again while members of its
// group live, so the members found are ours; members are found by scanning
// /proc and must have started no earlier than the leader. (The remaining
// blind spot: our
// group emptied, then a new process got the same pid, made its own group and
// exited leaving children, all between two scans. It needs a full pid
// wraparound in that window.)
//
// A local job's record also holds its EnvMark: the processes that left the
// group, which the dead shepherd no longer holds as their subreaper
// (contain.go), are found by that entry of their environment, again among
// those no older than the leader. So two copies do not run when the job is
// started again, unless a process changed its environment too. Only a mark
// of the form runLocal writes (MSCHED_HOSTFILE=/…) is used. The mark is the
// job's, not the attempt's: a record must not be acted on once a later
// attempt has started (the run daemon re-queues only after this returns).
//
// A Slurm job has no local process group: what is left of it is the Slurm
// job, which is cancelled, and waited for, instead, once Slurm says that
// the id still names the job recorded (killSlurm). A record without its
// owner (from a shepherd older than that check) is not acted on.
func killOrphans(p PidFile) error {
	if p.SlurmJob != "" {
		if p.SlurmJID == "" {
			return fmt.Errorf("launch: pid file names Slurm job %s but not whose it is: not cancelled", p.SlurmJob)
		}
		return killSlurm(&Slurm{Conf: p.SlurmConf, BinDir: p.SlurmBin}, p.SlurmJob, slurmOwner{UID: p.SlurmUID, JID: p.SlurmJID})
	}
	if p.Pgid <= 1 || p.JobStart == 0 || p.BootID != bootID() {
		return nil
	}
	group := p.Pgid
	if t, err := procStartTime(p.Pgid); err == nil && t != p.JobStart {
		group = 0 // the pid was reused: not our group
	}
	mark := p.EnvMark
	if !strings.HasPrefix(mark, envMarkKey+"=/") {
		mark = "" // not a mark runLocal writes: a pid file must not aim root's kill at anything else
	}
	if group == 0 && mark == "" {
		return nil
	}
	for round := 0; round < 50; round++ {
		pids, err := jobProcesses(group, mark, p.JobStart)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		sleepBackoff(round)
	}
	return fmt.Errorf("launch: the job's processes (process group %d, %s) survive SIGKILL", p.Pgid, p.EnvMark)
}

// jobProcesses lists the live (non-zombie) processes that started no
// earlier than minStart and are in process group pgid (if not 0) or carry
// envMark in the environment they started with (if not ""): a job's
// processes, also those that left its group (setsid) but kept its
// environment. Only root reads every process's environment.
func jobProcesses(pgid int, envMark string, minStart uint64) ([]int, error) {
	var pids []int
	var mark []byte
	if envMark != "" {
		mark = []byte(envMark)
	}
	err := eachProc(func(pid int, st procStat) {
		if st.start < minStart || st.state == 'Z' { // a zombie waits for its parent; killing it does nothing
			return
		}
		if pgid != 0 && st.pgrp == pgid || mark != nil && hasEnv(pid, func(e []byte) bool { return bytes.Equal(e, mark) }) {
			pids = append(pids, pid)
		}
	})
	return pids, err
}

// JobsRunningFrom lists the live (non-zombie) processes of the jobs whose
// host files lie in dir (the run daemon's directory of one spool), by the
// MSCHED_HOSTFILE in their environment: the chaos suite's check that no
// process of a job outlives its report.
func JobsRunningFrom(dir string) ([]int, error) {
	abs, err := filepath.Abs(dir) // as normalize makes Spec.HostfilePath
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	prefix := []byte(envMarkKey + "=" + abs + "/")
	var pids []int
	err = eachProc(func(pid int, st procStat) {
		if st.state != 'Z' && hasEnv(pid, func(e []byte) bool { return bytes.HasPrefix(e, prefix) }) {
			pids = append(pids, pid)
		}
	})
	return pids, err
}

// hasEnv reports whether an entry (KEY=value) of pid's environment
// matches.
func hasEnv(pid int, match func(entry []byte) bool) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for e := range bytes.SplitSeq(b, []byte{0}) {
		if match(e) {
			return true
		}
	}
	return false
}

// eachProc calls fn with every process's pid and stat, as /proc lists them
// now; a process that exits meanwhile is left out.
func eachProc(fn func(pid int, st procStat)) error {
	d, err := os.Open("/proc")
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		if st, err := parseStat(stat); err == nil {
			fn(pid, st)
		}
	}
	return nil
}

// waitExitNoReap blocks until pid has exited but leaves it a zombie, so its
// pid (and so its process group id) cannot be reused while the shepherd
// cleans up the group. os.Process.Wait reaps it afterwards.
func waitExitNoReap(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err
		}
	}
}

// signalNames maps the Linux signals a job is likely to die of to their
// names; syscall.Signal.String gives descriptions ("killed"), not names.
var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	syscall.SIGSTKFLT: "SIGSTKFLT", syscall.SIGCHLD: "SIGCHLD", syscall.SIGCONT: "SIGCONT",
	syscall.SIGSTOP: "SIGSTOP", syscall.SIGTSTP: "SIGTSTP", syscall.SIGTTIN: "SIGTTIN",
	syscall.SIGTTOU: "SIGTTOU", syscall.SIGURG: "SIGURG", syscall.SIGXCPU: "SIGXCPU",
	syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGVTALRM: "SIGVTALRM", syscall.SIGPROF: "SIGPROF",
	syscall.SIGWINCH: "SIGWINCH", syscall.SIGIO: "SIGIO", syscall.SIGPWR: "SIGPWR",
	syscall.SIGSYS: "SIGSYS",
}

func signalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return "SIG" + strconv.Itoa(int(s))
}
