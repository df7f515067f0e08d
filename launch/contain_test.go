package launch

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A process that leaves the job's process group is still gone when the
// job is reported ended, whether the job ended by itself or was cancelled.
func TestLocal_EscapedProcessesKilledAtEnd(t *testing.T) {
	// Each script starts a process that writes its pid to "esc" and sleeps
	// on, outside the job's process group, then waits for the file.
	const waitEsc = `
while [ ! -s esc ]; do sleep 0.01; done`
	for _, tc := range []struct {
		name, script string
		cancel       bool
	}{
		// Its own session, a child of the leader until the leader ends.
		{"setsid", `setsid sh -c 'echo $$ > esc.new; mv esc.new esc; exec sleep 1000' &` + waitEsc, false},
		// Orphaned at once (a daemon's double fork): the shepherd's child
		// while the job still runs.
		{"double fork", `(setsid sh -c 'echo $$ > esc.new; mv esc.new esc; exec sleep 1000' &)` + waitEsc, false},
		// A process in a session of its own whose parent lives on: found
		// only once its parent has been killed.
		{"grandchild", `setsid sh -c 'sleep 1000 & echo $! > esc.new; mv esc.new esc; wait' &` + waitEsc, false},
		{"cancelled", `setsid sh -c 'echo $$ > esc.new; mv esc.new esc; exec sleep 1000' &` + waitEsc + `; echo > ready; sleep 1000`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := newSpec(t, "sh", "-c", tc.script)
			h, err := testLocal(t).Start(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			esc := readPid(t, filepath.Join(spec.Dir, "esc"))
			t.Cleanup(func() { syscall.Kill(esc, syscall.SIGKILL) })
			if tc.cancel {
				eventually(t, "job ready", func() bool {
					_, err := os.Stat(filepath.Join(spec.Dir, "ready"))
					return err == nil
				})
				if err := h.Cancel(); err != nil {
					t.Fatal(err)
				}
			}
			res := wait(t, h)
			if tc.cancel && res.Reason != "cancelled" || !tc.cancel && !res.OK() {
				t.Fatalf("got %+v", res)
			}
			if !gone(esc) {
				t.Errorf("process %d, which left the job's process group, still runs after the job's end", esc)
			}
		})
	}
}

// The job's orphans become its shepherd's children, and those that exit
// while the job runs are reaped by it: they do not pile up as zombies.
func TestLocal_OrphansReapedWhileJobRuns(t *testing.T) {
	dir := t.TempDir()
	gate := newGate(t, dir)
	spec := newSpec(t, gated(gate, "true")...)
	// 100 orphans that exit at once, one that lives on, then the gate.
	spec.Argv[2] = `i=0; while [ $i -lt 100 ]; do (true &); i=$((i+1)); done; (sleep 1000 & echo $! > orphan); ` + spec.Argv[2]
	h, err := testLocal(t).Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	shepherd := h.Pid()
	orphan := readPid(t, filepath.Join(spec.Dir, "orphan"))
	t.Cleanup(func() { syscall.Kill(orphan, syscall.SIGKILL) })
	eventually(t, "the orphan a child of the shepherd", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(orphan) + "/stat")
		st, perr := parseStat(b)
		return err == nil && perr == nil && st.ppid == shepherd
	})
	syscall.Kill(orphan, syscall.SIGKILL)
	eventually(t, "the orphan reaped, and no zombie children of the shepherd", func() bool {
		if _, err := os.Stat("/proc/" + strconv.Itoa(orphan)); err == nil {
			return false
		}
		zombies := 0
		eachProc(func(pid int, st procStat) {
			if st.ppid == shepherd && st.state == 'Z' {
				zombies++
			}
		})
		return zombies == 0
	})
	openGate(t, gate)
	if res := wait(t, h); !res.OK() {
		t.Fatalf("got %+v", res)
	}
}

func TestSiginfoPid(t *testing.T) {
	// A child that exits at once, seen through waitid as waitLeader sees
	// it (P_PID here: the test binary has other children).
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Wait()
	var info unix.Siginfo
	for {
		err = unix.Waitid(unix.P_PID, p.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := siginfoPid(&info); got != p.Pid {
		t.Fatalf("si_pid %d, want %d", got, p.Pid)
	}
}

// Both ways of listing children find a child of the test binary.
func TestChildren(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for name, list := range map[string]func([]int) ([]int, error){"children": children, "childrenByScan": childrenByScan} {
		pids, err := list(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(pids, cmd.Process.Pid) {
			t.Errorf("%s: %v lacks the child %d", name, pids, cmd.Process.Pid)
		}
	}
}

// killOrphans acts on a pid file's EnvMark only when it is a host file's
// entry, as runLocal writes it: a record must not aim root's SIGKILL at
// every process that has some common variable.
func TestKillOrphans_OnlyAHostfileMark(t *testing.T) {
	for _, tc := range []struct {
		mark   string
		killed bool
	}{
		{"PATH=/usr/bin:/bin", false},
		{"MSCHED_HOSTFILE=relative", false},
		{"MSCHED_HOSTFILE=/spool/db/run/J1.hosts", true},
	} {
		t.Run(tc.mark, func(t *testing.T) {
			cmd := exec.Command("sleep", "30")
			cmd.Env = []string{tc.mark}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			defer func() { cmd.Process.Kill(); <-done }()
			start, err := procStartTime(cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			// The leader's pid is the child's, which leads no group: only
			// the mark can reach it.
			rec := PidFile{BootID: bootID(), Pgid: cmd.Process.Pid, JobStart: start, EnvMark: tc.mark}
			if err := killOrphans(rec); err != nil {
				t.Fatal(err)
			}
			// killOrphans returns once no process it aims at is alive, and
			// it sends nothing to one it does not aim at.
			if g := gone(cmd.Process.Pid); g != tc.killed {
				t.Errorf("a process with %s: gone %v after killOrphans, want %v", tc.mark, g, tc.killed)
			}
		})
	}
}
