package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// sshLinger bounds how long ssh may stay after the job's end marker: a
// process the job left outside its process group (a daemon it started)
// keeps the session's output open, and ssh with it. A variable for tests.
var sshLinger = 5 * time.Second

// drainWait bounds the wait for the end of ssh's stderr once ssh and its
// process group are gone.
const drainWait = 5 * time.Second

// runSSH runs the job on the first of Spec.SSH.Dest through the ssh client,
// the shepherd's child, as the shepherd's user (its identity file is not
// the job user's to read), logging in as the destination's user or
// Identity.User. The remote side is sshWrapper: see there for the
// protocol. The local process group given to started is ssh's, so that
// killOrphans ends ssh if the shepherd dies, and the remote wrapper then
// ends the job.
func runSSH(ctx context.Context, spec Spec, sigs <-chan os.Signal, started startedFunc) Result {
	plan, err := planSSH(spec)
	if err != nil {
		return cannotStart(err)
	}
	sshPath, err := lookPath(plan.argv[0], DefaultPath)
	if err != nil {
		return cannotStart(fmt.Errorf("ssh client: %w", err))
	}
	var stdout, stderr *os.File
	err = asUser(spec.Identity, func() error {
		var err error
		stdout, stderr, err = openOutputs(spec.Stdout, spec.Stderr)
		return err
	})
	if err != nil {
		return cannotStart(err)
	}
	closeOutputs := func() {
		stdout.Close()
		if stderr != stdout {
			stderr.Close()
		}
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		closeOutputs()
		return cannotStart(err)
	}
	defer ctlW.Close() // end of file for the wrapper: it kills what is left
	errR, errW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		closeOutputs()
		return cannotStart(err)
	}
	cmd := &exec.Cmd{
		Path: sshPath, Args: plan.argv, Env: sshEnv(os.Environ()),
		Stdin: ctlR, Stderr: errW,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	if stdout != nil {
		cmd.Stdout = stdout
	}
	err = cmd.Start()
	ctlR.Close()
	errW.Close()
	if stdout != stderr {
		stdout.Close() // ssh has it; stderr is written here, by the filter
	}
	if err != nil {
		errR.Close()
		if stderr != nil {
			stderr.Close()
		}
		return cannotStart(fmt.Errorf("ssh client: %w", err))
	}
	pgid := cmd.Process.Pid
	start, _ := procStartTime(pgid)
	started(PidFile{Pgid: pgid, JobStart: start})

	r := &sshRun{pgid: pgid, ctl: ctlW, out: io.Discard}
	if stderr != nil {
		r.out = stderr
	}
	filtered := make(chan struct{})
	go func() {
		defer close(filtered)
		splitMarkers(errR, []byte("\nmsched:"+plan.job.token+":"), r.text, r.event)
	}()
	exited := make(chan struct{})
	go func() {
		waitExitNoReap(pgid)
		close(exited)
	}()
	reason := supervise(ctx, spec, sigs, exited, r.term, r.kill)
	r.reap() // kills what is left of ssh's group; no timer signals it after
	select {
	case <-filtered:
	case <-time.After(drainWait):
		errR.Close() // a process outside ssh's group holds its stderr
		select {
		case <-filtered:
		case <-time.After(drainWait):
			// The filter is stuck in a write to the job's stderr file (a
			// terminal nobody reads): the rest of the output is lost, the
			// Result is not.
		}
	}
	errR.Close()
	cmd.Wait()
	if stderr != nil {
		stderr.Close()
	}
	return r.result(plan, reason, cmd.ProcessState.ExitCode())
}

// sshPlan is an ssh job ready to run.
type sshPlan struct {
	argv  []string // ssh's
	job   remoteJob
	dest  SSHDest
	user  string
	host  string // the Spec.Hosts entry of dest ("" if none)
	label string // host and destination, for messages
}

// unreachable names the host for Result.Unreachable: its Spec.Hosts entry,
// else its address.
func (p sshPlan) unreachable() string {
	if p.host != "" {
		return p.host
	}
	return p.dest.Host
}

// planSSH checks an ssh job and builds its ssh command line.
func planSSH(spec Spec) (sshPlan, error) {
	var p sshPlan
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return p, errors.New("empty argv")
	}
	if err := checkIdentity(spec.Identity); err != nil {
		return p, err
	}
	if len(spec.SSH.Dest) == 0 {
		return p, errors.New("ssh: no destination")
	}
	if len(spec.Hosts) != 0 && len(spec.Hosts) != len(spec.SSH.Dest) {
		return p, fmt.Errorf("ssh: %d destinations for %d hosts", len(spec.SSH.Dest), len(spec.Hosts))
	}
	p.dest = spec.SSH.Dest[0]
	p.user = p.dest.User
	if p.user == "" && spec.Identity != nil {
		p.user = spec.Identity.User
	}
	if p.user == "" {
		return p, errNoSSHUser
	}
	for _, d := range spec.SSH.Dest {
		if err := checkSSHWord("host", d.Host); err != nil {
			return p, err
		}
		if d.Port < 0 || d.Port > 65535 {
			return p, fmt.Errorf("ssh: invalid port %d", d.Port)
		}
	}
	if err := checkSSHWord("user", p.user); err != nil {
		return p, err
	}
	p.label = p.user + "@" + p.dest.Host
	if p.dest.Port != 0 {
		p.label += " port " + strconv.Itoa(p.dest.Port)
	}
	if len(spec.Hosts) > 0 {
		p.host = spec.Hosts[0]
		if p.host != p.dest.Host {
			p.label = p.host + " (" + p.label + ")"
		}
	}
	for _, o := range []struct{ what, path string }{{"stdout", spec.Stdout}, {"stderr", spec.Stderr}} {
		if o.path != "" && !filepath.IsAbs(o.path) {
			return p, fmt.Errorf("%s %s: a relative path needs an absolute workdir (the job runs on %s)", o.what, o.path, p.label)
		}
	}
	env := append([]string(nil), spec.Env...)
	for _, e := range spec.Env {
		if err := checkEnvEntry(e); err != nil {
			return p, err
		}
	}
	// MSCHED_HOSTFILE is the wrapper's: the file it makes on the host.
	env = append(env, spec.mschedEnv("")...)
	p.job = remoteJob{token: newToken(), dir: spec.Dir, grace: spec.KillGrace, env: env, argv: spec.Argv}
	if strings.HasPrefix(p.job.dir, "-") {
		p.job.dir = "./" + p.job.dir // not an option of cd
	}
	if spec.MPI != nil {
		var err error
		if p.job.argv, p.job.hostLines, err = remoteMPI(spec, p.user); err != nil {
			return p, err
		}
		p.job.mpi = true
	} else {
		for _, d := range spec.SSH.Dest {
			p.job.hostLines = append(p.job.hostLines, d.Host)
		}
	}
	for i := range p.job.hostLines {
		p.job.hostLines[i] += spec.hostNote(i)
	}
	remote, err := p.job.commandLine()
	if err != nil {
		return p, err
	}
	p.argv = spec.SSH.Command(p.dest, p.user, remote)
	return p, nil
}

// sshEnv is the ssh client's environment: enough to find its own
// configuration, and nothing that ssh's SendEnv (Debian's default sends
// LANG and LC_*) could carry to the job.
func sshEnv(self []string) []string {
	env := []string{"PATH=" + DefaultPath}
	for _, k := range []string{"HOME", "USER", "LOGNAME"} {
		if v, ok := lookupEnv(self, k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// sshRun is what the shepherd knows of a running ssh job; the stderr filter
// updates it, the supervisor reads it.
type sshRun struct {
	pgid int
	ctl  *os.File  // the wrapper's stdin
	out  io.Writer // the job's stderr

	mu        sync.Mutex
	reaped    bool // ssh's group is gone or about to be reaped: signal it no more
	ready     bool
	startedAt time.Time
	failure   string
	ended     bool
	status    int
	early     []byte // stderr before ready: ssh's own messages, the login's
	tail      []byte // the last of stderr, for messages
	linger    *time.Timer
	abandon   *time.Timer
}

// tailMax bounds what sshRun keeps of stderr for messages.
const tailMax = 4096

// text is the filter's sink for everything on stderr that is not a marker.
// Before "ready", stderr is ssh's and the login's: it is held back, to
// reach the job's stderr only if the wrapper runs (else it is a message
// about the connection, for the Reason). The job's stderr is written
// without mu held: a write may block (a terminal nobody reads), and the
// supervisor needs mu to stop the job.
func (r *sshRun) text(b []byte) {
	r.mu.Lock()
	r.tail = keepLast(append(r.tail, b...), tailMax)
	ready := r.ready
	if !ready {
		r.early = keepLast(append(r.early, b...), tailMax)
	}
	r.mu.Unlock()
	if ready {
		r.out.Write(b)
	}
}

// event handles a marker line.
func (r *sshRun) event(ev string) {
	r.mu.Lock()
	var early []byte
	defer func() {
		r.mu.Unlock()
		if len(early) > 0 {
			r.out.Write(early) // as in text, without mu
		}
	}()
	kind, arg, _ := strings.Cut(ev, " ")
	switch kind {
	case "ready":
		r.ready = true
		early, r.early = r.early, nil
	case "start":
		r.startedAt = time.Now()
	case "fail":
		r.failure = arg
	case "end":
		if n, err := strconv.Atoi(arg); err == nil {
			r.ended, r.status = true, n
			r.linger = time.AfterFunc(sshLinger, r.killSSH)
		}
	}
}

// term stops the job: SIGTERM to its remote group through the wrapper, or,
// before the wrapper runs, the end of ssh (a wrapper that starts after all
// reads end of file and kills its job).
func (r *sshRun) term() {
	r.mu.Lock()
	ready := r.ready
	r.mu.Unlock()
	if !ready {
		r.killSSH()
		return
	}
	r.ctl.Write([]byte("TERM\n")) // EPIPE if ssh is gone: nothing to stop
}

// kill sends SIGKILL to the job's remote group, then gives the connection
// another KillGrace before ssh itself is killed (an unresponsive host).
func (r *sshRun) kill() {
	r.ctl.Write([]byte("KILL\n"))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.abandon == nil {
		r.abandon = time.AfterFunc(abandonAfter, r.killSSH)
	}
}

// abandonAfter is how long after SIGKILL was sent the shepherd waits for the
// wrapper's end marker before it kills ssh (the wrapper, seeing end of
// file, kills the job again).
const abandonAfter = 10 * time.Second

// killSSH kills ssh's local process group, unless it has been reaped.
func (r *sshRun) killSSH() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.reaped {
		syscall.Kill(-r.pgid, syscall.SIGKILL)
	}
}

// reap is called once ssh has exited (not yet reaped): whatever is left in
// its group is killed, and no timer signals the group after.
func (r *sshRun) reap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	syscall.Kill(-r.pgid, syscall.SIGKILL)
	r.reaped = true
	for _, t := range []*time.Timer{r.linger, r.abandon} {
		if t != nil {
			t.Stop()
		}
	}
}

// result is the job's Result from what the wrapper said and how ssh ended.
func (r *sshRun) result(p sshPlan, reason string, sshStatus int) Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	msg := lastLines(r.tail)
	if msg == "" {
		msg = fmt.Sprintf("ssh exit status %d", sshStatus)
	}
	res := Result{EndedAt: time.Now(), StartedAt: r.startedAt, ExitStatus: -1}
	switch {
	case r.failure != "":
		return cannotStart(fmt.Errorf("on %s: %s", p.label, r.failure))
	case r.ended:
		status, sig := decodeShellStatus(r.status)
		res.setStatus(status, sig, reason)
	case r.startedAt.IsZero() && reason != "":
		// Stopped before the job started: before the wrapper ran, or after
		// it said ready and before it said start (the wrapper then ends
		// with ssh, and the job with it).
		res.Reason = reason
	case !r.ready && sshStatus == 255:
		res = cannotStart(fmt.Errorf("ssh to %s: %s", p.label, msg))
		if !bytes.Contains(r.tail, []byte("Permission denied (")) {
			res.Unreachable = p.unreachable()
		}
	case !r.ready:
		return cannotStart(fmt.Errorf("the login on %s did not run the job (ssh exit status %d): %s", p.label, sshStatus, msg))
	case r.startedAt.IsZero():
		return cannotStart(fmt.Errorf("the job wrapper on %s ended before it started the job: %s", p.label, msg))
	case reason != "":
		res.Reason = reason // stopped; the end marker was lost with ssh
	default:
		res.Reason = fmt.Sprintf("lost the connection to %s while the job ran: %s", p.label, msg)
		if sshStatus == 255 {
			res.Unreachable = p.unreachable()
		}
	}
	return res
}

// decodeShellStatus reads sh's $? after wait: 128+N for a job killed by
// signal N (1 to 64, SIGRTMAX on Linux), else the exit status. A job that
// exits with 129 to 192 by itself reads as a signal: sh reports both alike.
func decodeShellStatus(s int) (int, syscall.Signal) {
	if s > 128 && s <= 128+64 {
		return -1, syscall.Signal(s - 128)
	}
	return s, 0
}

// lastLines is the end of what ssh printed, trimmed, for a Reason: its last
// two non-empty lines.
func lastLines(b []byte) string {
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines[max(0, len(lines)-2):], "; ")
}

func keepLast(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return append(b[:0], b[len(b)-n:]...)
}

// splitMarkers copies r to text, except the lines that start with marker
// (wherever they appear in the stream), whose remainder, without the
// newline, goes to event. A partial marker at the end of a read is held
// back until the next one decides; a marker line longer than maxMarker is
// not one.
func splitMarkers(r io.Reader, marker []byte, text func([]byte), event func(string)) error {
	const maxMarker = 4096
	buf := make([]byte, 0, 64<<10)
	chunk := make([]byte, 32<<10)
	for {
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		for {
			i := bytes.Index(buf, marker)
			if i < 0 {
				// Keep back what may begin a marker.
				keep := partialSuffix(buf, marker)
				if len(buf) > keep {
					text(buf[:len(buf)-keep])
					buf = append(buf[:0], buf[len(buf)-keep:]...)
				}
				break
			}
			if i > 0 {
				text(buf[:i])
				buf = append(buf[:0], buf[i:]...)
			}
			j := bytes.IndexByte(buf[len(marker):], '\n')
			if j < 0 {
				if len(buf) > maxMarker {
					text(buf[:len(marker)])
					buf = append(buf[:0], buf[len(marker):]...)
					continue
				}
				break // the rest of the line is still coming
			}
			event(string(buf[len(marker) : len(marker)+j]))
			buf = append(buf[:0], buf[len(marker)+j+1:]...)
		}
		if err != nil {
			if len(buf) > 0 {
				text(buf)
			}
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// partialSuffix is the length of the longest end of b that is a proper
// beginning of marker.
func partialSuffix(b, marker []byte) int {
	for k := min(len(marker)-1, len(b)); k > 0; k-- {
		if bytes.HasSuffix(b, marker[:k]) {
			return k
		}
	}
	return 0
}
