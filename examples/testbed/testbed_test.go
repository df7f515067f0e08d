package testbed

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"msched/hoststat"
	"msched/models"
)

// TestBed_SSHSlurmUpAgainDown starts a bed and uses it for real: ssh logs
// in as a user made by AddUser with the bed's key and with the user's own,
// the user's Slurm jobs run on both clusters, a second up.sh starts
// nothing, and down.sh leaves no process of the bed behind.
func TestBed_SSHSlurmUpAgainDown(t *testing.T) {
	begin := time.Now()
	b := Start(t)
	t.Logf("up.sh took %v", time.Since(begin).Round(time.Millisecond))
	checkHostsFile(t, b)

	u := b.AddUser(t, "alice")
	if again := b.AddUser(t, "alice"); again != u {
		t.Errorf("AddUser again = %+v, want %+v", again, u)
	}

	t.Run("SSH", func(t *testing.T) {
		// login runs ssh with opts as root (as nil) or as a user, who then
		// has only ~/.ssh: its own key and known_hosts.
		login := func(t *testing.T, as *User, addr, user string, opts ...string) {
			argv := []string{"/usr/bin/ssh", "-F", "/dev/null", "-p", strconv.Itoa(b.SSHPort), "-o", "BatchMode=yes"}
			argv = append(argv, opts...)
			argv = append(argv, user+"@"+addr, "echo $SSH_CONNECTION; id -un")
			out := run(t, as, nil, argv...)
			lines := strings.Split(out, "\n")
			if len(lines) != 2 {
				t.Fatalf("ssh %s@%s printed %q, want $SSH_CONNECTION and the user", user, addr, out)
			}
			// $SSH_CONNECTION: client address and port, server address and port.
			if f := strings.Fields(lines[0]); len(f) != 4 || f[2] != addr || f[3] != strconv.Itoa(b.SSHPort) {
				t.Errorf("ssh %s@%s: SSH_CONNECTION=%q, want the server at %s %d", user, addr, lines[0], addr, b.SSHPort)
			}
			if lines[1] != user {
				t.Errorf("ssh %s@%s: id -un = %q", user, addr, lines[1])
			}
		}
		bedKey := []string{"-i", filepath.Join(b.Dir, "ssh", "id_ed25519"),
			"-o", "UserKnownHostsFile=" + filepath.Join(b.Dir, "ssh", "known_hosts")}
		t.Run("BedKeyAsUser", func(t *testing.T) { login(t, nil, "127.0.0.3", u.Name, bedKey...) })
		t.Run("BedKeyAsRoot", func(t *testing.T) { login(t, nil, "127.0.0.2", "root", bedKey...) })
		t.Run("OwnKey", func(t *testing.T) { login(t, &u, "127.0.0.3", u.Name) })
	})

	t.Run("Slurm", func(t *testing.T) {
		for _, c := range []string{"c1", "c2"} {
			t.Run(c, func(t *testing.T) {
				t.Parallel()
				conf := b.SlurmConf[c]
				out := filepath.Join(u.Home, c+"-%j.out")
				id, _, _ := strings.Cut(run(t, &u, []string{"SLURM_CONF=" + conf},
					"/usr/bin/sbatch", "--parsable", "--chdir", u.Home, "-o", out, "--wrap", "id -un; echo $SLURM_JOB_ID"), ";")
				state, exit := waitJob(t, conf, id, time.Minute)
				if state != "COMPLETED" || exit != "0:0" {
					t.Fatalf("job %s on %s: JobState=%s ExitCode=%s", id, c, state, exit)
				}
				got, err := os.ReadFile(strings.ReplaceAll(out, "%j", id))
				if err != nil {
					t.Fatal(err)
				}
				if want := u.Name + "\n" + id + "\n"; string(got) != want {
					t.Errorf("job %s on %s wrote %q, want %q", id, c, got, want)
				}
			})
		}
	})

	pids := daemonPids(t, b)
	t.Run("UpAgainIsNoOp", func(t *testing.T) {
		if out, err := b.up(); err != nil {
			t.Fatalf("up.sh again: %v\n%s", err, out)
		}
		again := daemonPids(t, b)
		for f, pid := range pids {
			if again[f] != pid {
				t.Errorf("%s: pid %d after up.sh again, was %d", f, again[f], pid)
			}
		}
	})

	t.Run("DownStopsAll", func(t *testing.T) { downStopsAll(t, b, u, pids) })

	// The ceiling is generous for a loaded CI machine; the test usually
	// takes a few seconds.
	took := time.Since(begin)
	t.Logf("the test took %v", took.Round(time.Millisecond))
	if took > 90*time.Second {
		t.Errorf("the test took %v, want well under 2 minutes", took)
	}
}

// downStopsAll runs down.sh while a command runs in an ssh connection and
// a job in Slurm, and checks that the daemons (pids), their processes, the
// job's and the connection's are gone after it.
func downStopsAll(t *testing.T, b *Bed, u User, pids map[string]int) {
	// What down.sh must stop besides the daemons: a command running
	// in an ssh connection and a running Slurm job.
	ssh := exec.Command("/usr/bin/setpriv", "--reuid", strconv.Itoa(u.UID), "--regid", strconv.Itoa(u.GID), "--init-groups", "--",
		"/usr/bin/ssh", "-F", "/dev/null", "-p", strconv.Itoa(b.SSHPort), "-o", "BatchMode=yes", u.Name+"@127.0.0.4", "sleep 300")
	ssh.Dir = u.Home
	if err := ssh.Start(); err != nil {
		t.Fatal(err)
	}
	sshDone := make(chan error, 1)
	go func() { sshDone <- ssh.Wait() }()
	defer ssh.Process.Kill()
	conf := b.SlurmConf["c2"]
	id, _, _ := strings.Cut(run(t, &u, []string{"SLURM_CONF=" + conf},
		"/usr/bin/sbatch", "--parsable", "--chdir", u.Home, "-o", "/dev/null", "--wrap", "sleep 300"), ";")
	var jobPids []int
	for deadline := time.Now().Add(30 * time.Second); len(jobPids) == 0; {
		jobPids = listPids(conf, "c2n1", id)
		if time.Now().After(deadline) {
			t.Fatalf("job %s on c2 runs no process after 30 s", id)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var watch []int
	for deadline := time.Now().Add(10 * time.Second); ; {
		watch = watch[:0]
		sleeping := false
		for _, pid := range pids {
			for _, d := range descendants(pid) {
				watch = append(watch, d)
				comm, _ := os.ReadFile("/proc/" + strconv.Itoa(d) + "/comm")
				sleeping = sleeping || string(comm) == "sleep\n"
			}
		}
		if sleeping {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sleep under sshd after 10 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, pid := range pids {
		watch = append(watch, pid)
	}
	watch = append(watch, jobPids...)

	if out, err := b.down(); err != nil {
		t.Fatalf("down.sh: %v\n%s", err, out)
	} else {
		t.Logf("down.sh: %s", out)
	}
	// A cancelled job's last processes may take a moment to exit after
	// Slurm reports it ended.
	for deadline := time.Now().Add(10 * time.Second); ; {
		var left []int
		for _, pid := range watch {
			if alive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pids %v still run 10 s after down.sh", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case <-sshDone:
	case <-time.After(10 * time.Second):
		t.Errorf("ssh still connected 10 s after down.sh")
	}
	// Nor anything else that runs with the bed's files.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmd, _ := os.ReadFile(p)
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if bytes.Contains(cmd, []byte(b.Dir)) && alive(pid) {
			t.Errorf("pid %d still runs after down.sh: %s", pid, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
		}
	}
}

// checkHostsFile checks the bed's hosts file as msched reads it: six hosts,
// each of an architecture of the hardware database, two speeds among them.
func checkHostsFile(t *testing.T, b *Bed) {
	t.Helper()
	hosts, err := hoststat.LoadHosts(b.HostsFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != 6 {
		t.Fatalf("%s: %d hosts, want 6", b.HostsFile, len(hosts))
	}
	hw := models.DefaultHardware()
	speeds := map[float64]bool{}
	for _, h := range hosts {
		a, err := hw.Lookup(h.Arch)
		if err != nil {
			t.Errorf("%s: host %s: %v", b.HostsFile, h.Name, err)
		}
		speeds[a.Speed] = true
		addr, err := h.Addr()
		if err != nil {
			t.Errorf("%s: host %s: %v", b.HostsFile, h.Name, err)
		}
		if addr.Kind == hoststat.KindSlurm && addr.SlurmConf != b.SlurmConf[h.Cluster] {
			t.Errorf("%s: host %s: slurm.conf %s, want %s", b.HostsFile, h.Name, addr.SlurmConf, b.SlurmConf[h.Cluster])
		}
		if addr.Kind == hoststat.KindSSH && addr.Port != b.SSHPort {
			t.Errorf("%s: host %s: port %d, want %d", b.HostsFile, h.Name, addr.Port, b.SSHPort)
		}
	}
	if len(speeds) != 2 {
		t.Errorf("%s: speeds %v, want two", b.HostsFile, speeds)
	}
}

// run runs argv, as root or as user as, with env added, and returns its
// standard output, trimmed. It fails t if the command fails.
func run(t *testing.T, as *User, env []string, argv ...string) string {
	t.Helper()
	out, err := output(as, env, argv...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// output runs argv as run does and returns its output or an error that
// holds its standard error.
func output(as *User, env []string, argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if as != nil {
		argv = append([]string{"/usr/bin/setpriv", "--reuid", strconv.Itoa(as.UID), "--regid", strconv.Itoa(as.GID), "--init-groups", "--"}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	if as != nil {
		cmd.Env = append(cmd.Env, "HOME="+as.Home, "USER="+as.Name, "LOGNAME="+as.Name)
		cmd.Dir = as.Home
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %v\n%s%s", strings.Join(argv, " "), err, out, stderr.Bytes())
	}
	return strings.TrimSpace(string(out)), nil
}

// waitJob polls scontrol show job until the job has ended, and returns its
// JobState and ExitCode.
func waitJob(t *testing.T, conf, id string, within time.Duration) (state, exit string) {
	t.Helper()
	ended := map[string]bool{"COMPLETED": true, "FAILED": true, "CANCELLED": true, "TIMEOUT": true,
		"NODE_FAIL": true, "OUT_OF_MEMORY": true, "BOOT_FAIL": true, "DEADLINE": true, "PREEMPTED": true}
	deadline := time.Now().Add(within)
	for {
		fields := map[string]string{}
		for _, f := range strings.Fields(run(t, nil, []string{"SLURM_CONF=" + conf}, "/usr/bin/scontrol", "show", "job", "-o", id)) {
			if k, v, ok := strings.Cut(f, "="); ok {
				fields[k] = v
			}
		}
		state, exit = fields["JobState"], fields["ExitCode"]
		if ended[state] {
			return state, exit
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s (%s): JobState=%s after %v", id, conf, state, within)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// listPids returns the pids of job id's processes on node (scontrol
// listpids asks the slurmd of the node SLURMD_NODENAME names), none
// before the job runs.
func listPids(conf, node, id string) []int {
	var pids []int
	out, _ := output(nil, []string{"SLURM_CONF=" + conf, "SLURMD_NODENAME=" + node}, "/usr/bin/scontrol", "listpids", id)
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && f[1] == id {
			if pid, err := strconv.Atoi(f[0]); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// descendants returns the pids of the processes below pid.
func descendants(pid int) []int {
	var all []int
	files, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, w := range strings.Fields(string(data)) {
			if k, err := strconv.Atoi(w); err == nil {
				all = append(all, k)
				all = append(all, descendants(k)...)
			}
		}
	}
	return all
}

// daemonPids reads the bed's pid files; each must name a live process
// started with the bed's files.
func daemonPids(t *testing.T, b *Bed) map[string]int {
	t.Helper()
	pids := map[string]int{}
	for _, f := range []string{"munge/munged.pid", "ssh/sshd.pid",
		"c1/slurmctld.pid", "c1/slurmd.pid", "c2/slurmctld.pid", "c2/slurmd.pid"} {
		data, err := os.ReadFile(filepath.Join(b.Dir, f))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if !alive(pid) || !bytes.Contains(cmd, []byte(b.Dir)) {
			t.Fatalf("%s: pid %d is not the bed's daemon (cmdline %q)", f, pid, cmd)
		}
		pids[f] = pid
	}
	return pids
}

// alive reports whether pid is a process that has not exited (a zombie has).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
