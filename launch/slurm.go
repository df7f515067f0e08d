package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
)

// A Slurm job (Spec.Slurm) is submitted and followed by its shepherd, which
// stays on this machine like every shepherd:
//
//  1. sbatch --hold, run as the job's user (munge authenticates that uid),
//     with an environment of its own that the shepherd chooses (sbatchEnv:
//     nothing of the job's env:, which could run the user's code inside
//     sbatch) and a batch script that runs Argv; the job's clean
//     environment reaches the job through sbatch --export-file (see
//     slurm_trust.go), and the Env entries Slurm's clients read as their
//     own settings (slurmSetting) are exported by the script instead;
//  2. the id sbatch prints is the user's word, not Slurm's: the shepherd
//     (root) asks scontrol whether that job is the user's and msched's
//     (checkSlurmJob) and, if not, never touches it and the job does not
//     start;
//  3. the Slurm job id is written into the pid file, with whose job it is,
//     and handed to the run daemon through the ready pipe, before the job
//     is released: a restarted daemon finds the id there and follows that
//     job, never submits a second copy; the record is fsynced with its
//     directory, so after a crash of this machine too recovery finds the id
//     (and, the shepherd being gone, cancels the job before re-queueing
//     it);
//  4. scontrol release; then scontrol show job, every slurmPollMin growing
//     to slurmPollMax, until the job is in a final state, whose exit code
//     and signal become the Result.
//
// Cancel is scancel; the walltime is sbatch --time (whole minutes, for
// Slurm's own scheduling) and an scancel at the exact walltime. If the
// shepherd dies, Adopt finds the pid file unlocked and cancels the Slurm job
// (killSlurm, which checks the id again first) before the daemon re-queues
// it, as it kills a local job's leftovers.

// Poll intervals for a Slurm job: a short job is noticed soon, a long one
// costs the controller one query every slurmPollMax.
const (
	slurmPollMin = 200 * time.Millisecond
	slurmPollMax = 5 * time.Second
)

// slurmCmdTimeout bounds one sbatch, scontrol or scancel: Slurm's clients
// retry an unresponsive controller for MessageTimeout (10 s by default)
// before they give up.
const slurmCmdTimeout = 30 * time.Second

// slurmJob is what msched reads of `scontrol show job -o`.
type slurmJob struct {
	State    string // PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, …
	Reason   string
	Exit     int // the batch script's exit status
	Signal   int // the signal that ended it, 0 if none
	NodeList string
}

var (
	reJobState = regexp.MustCompile(`(?:^|\s)JobState=(\S+)`)
	reReason   = regexp.MustCompile(`(?:^|\s)Reason=(\S+)`)
	reExitCode = regexp.MustCompile(`(?:^|\s)ExitCode=(\d+):(\d+)`)
	reNodeList = regexp.MustCompile(`(?:^|\s)NodeList=(\S+)`)
)

// parseSlurmJob parses one line of `scontrol show job -o ID`.
func parseSlurmJob(out []byte) (slurmJob, error) {
	var j slurmJob
	m := reJobState.FindSubmatch(out)
	if m == nil {
		return j, fmt.Errorf("launch: slurm: no JobState in %q", firstLine(out))
	}
	j.State = string(m[1])
	if m := reReason.FindSubmatch(out); m != nil {
		j.Reason = string(m[1])
	}
	if m := reExitCode.FindSubmatch(out); m != nil {
		j.Exit, _ = strconv.Atoi(string(m[1]))
		j.Signal, _ = strconv.Atoi(string(m[2]))
	}
	if m := reNodeList.FindSubmatch(out); m != nil {
		j.NodeList = string(m[1])
	}
	return j, nil
}

// final reports whether Slurm is done with the job.
func (j slurmJob) final() bool {
	switch j.State {
	case "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD",
		"REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD", "SPECIAL_EXIT":
		return false
	}
	return true
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

// slurmScript is the batch script of spec: it restores any variable of the
// job's environment that Slurm did not carry (slurmRestore), writes the host
// file on the node (MSCHED_HOSTFILE), exports the Env entries that sbatch
// must not see (slurmSetting), runs Argv in Dir and exits with its status.
// It does not exec the job, so that the host file is removed afterwards; a
// job killed by a signal therefore ends with the shell's 128+n.
func slurmScript(spec Spec) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	fmt.Fprintf(&b, "# msched job %s\n", spec.JID)
	slurmRestore(&b, slurmJobEnv(spec))
	b.WriteString("MSCHED_HOSTFILE=$(mktemp \"${TMPDIR:-/tmp}/msched-hosts.XXXXXX\") || exit 1\n")
	b.WriteString("export MSCHED_HOSTFILE\n")
	b.WriteString("trap 'rm -f \"$MSCHED_HOSTFILE\"' EXIT\n")
	fmt.Fprintf(&b, "printf '%%s\\n' %s > \"$MSCHED_HOSTFILE\"\n", quoteAll(spec.Hosts))
	for _, e := range spec.Env {
		if k, _, _ := strings.Cut(e, "="); slurmSetting(k) {
			fmt.Fprintf(&b, "export %s\n", shQuote(e))
		}
	}
	if spec.Dir != "" {
		fmt.Fprintf(&b, "cd %s || exit 1\n", shQuote(spec.Dir))
	}
	fmt.Fprintf(&b, "%s </dev/null\n", quoteAll(spec.Argv))
	return b.String()
}

func quoteAll(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = shQuote(w)
	}
	return strings.Join(q, " ")
}

// slurmSetting reports whether Slurm's clients read the variable k as a
// setting of their own: SBATCH_* are sbatch's options (SBATCH_WAIT would
// hold the submission until the held job ends, SBATCH_ARRAY_INX would run
// it many times, SBATCH_PARTITION elsewhere than msched placed it),
// SLURM_* the library's (SLURM_CLUSTERS, SLURM_HOSTFILE…). A job's Env may
// hold them for the job, never for the submission.
func slurmSetting(k string) bool {
	return strings.HasPrefix(k, "SBATCH_") || strings.HasPrefix(k, "SLURM_")
}

// sbatchEnv is sbatch's own environment, chosen here: PATH (Spec.Path,
// from the daemon's configuration, or DefaultPath) and the user's HOME, USER
// and LOGNAME (slurmCommand adds SLURM_CONF). Never the job's Env: sbatch
// runs as the user but the shepherd, as root, acts on the id it prints, and
// an env: with LD_PRELOAD, LD_LIBRARY_PATH, SBATCH_* and the like would let
// the user choose that id. The job's environment travels apart, in
// slurmJobEnv.
func sbatchEnv(spec Spec) []string {
	path := spec.Path
	if path == "" {
		path = DefaultPath
	}
	env := []string{"PATH=" + path}
	if id := spec.Identity; id != nil {
		return append(env, "HOME="+id.Home, "USER="+id.User, "LOGNAME="+id.User)
	}
	self := os.Environ()
	for _, k := range []string{"HOME", "USER", "LOGNAME"} {
		if v, ok := lookupEnv(self, k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// slurmJobEnv is the environment the job gets through sbatch --export-file:
// the job's (see Spec), without the entries that would be Slurm's own
// settings (slurmScript exports those).
func slurmJobEnv(spec Spec) []string {
	var env []string
	for _, e := range spec.jobEnv(os.Environ()) {
		if k, _, _ := strings.Cut(e, "="); !slurmSetting(k) {
			env = append(env, e)
		}
	}
	return env
}

// sbatchArgs are the options of the submission of spec (the script comes
// on stdin). The job is held until its id is recorded (see above).
func sbatchArgs(spec Spec) []string {
	s := spec.Slurm
	nodes := max(s.Nodes, 1)
	name := slurmJobName(s.JobName)
	if name == "" {
		name = spec.JID
	}
	args := []string{"--parsable", "--hold", "--nodes=" + strconv.Itoa(nodes), "--job-name=" + name,
		"--comment=" + slurmComment(spec.JID)}
	if s.Partition != "" {
		args = append(args, "--partition="+s.Partition)
	}
	if spec.Walltime > 0 {
		args = append(args, "--time="+strconv.Itoa(int((spec.Walltime+time.Minute-1)/time.Minute)))
	}
	out, errp := spec.Stdout, spec.Stderr
	if out == "" {
		out = os.DevNull
	}
	if errp == "" {
		errp = os.DevNull
	}
	args = append(args, "--output="+slurmPath(out))
	if errp != out {
		args = append(args, "--error="+slurmPath(errp))
	}
	if spec.Dir != "" {
		args = append(args, "--chdir="+spec.Dir)
	}
	return args
}

// slurmJobName is a job's name as Slurm may show it: `scontrol show job
// -o` prints JobName=… before JobState=… on one line of KEY=value words, so
// a name with a space and a '=' ("x JobState=COMPLETED ExitCode=0:0")
// would be read for the job's state. Spaces, control characters and '='
// become '_'.
func slurmJobName(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '=' || unicode.IsSpace(r) || unicode.IsControl(r) {
			return '_'
		}
		return r
	}, name)
}

// slurmPath escapes the '%' of a path, which sbatch's --output and --error
// read as a pattern (%j: job id); a backslash turns the patterns off.
func slurmPath(p string) string {
	if strings.Contains(p, "%") {
		return `\` + p
	}
	return p
}

// slurmCommand builds one Slurm client command of the cluster conf, run as
// cred (nil: as the shepherd) with env (nil: a PATH only), and SLURM_CONF
// when the configuration names one.
func slurmCommand(ctx context.Context, s *Slurm, cred *syscall.Credential, env []string, name string, args ...string) *exec.Cmd {
	prog := name
	if s.BinDir != "" {
		prog = filepath.Join(s.BinDir, name)
	}
	cmd := exec.CommandContext(ctx, prog, args...)
	if env == nil {
		env = []string{"PATH=" + DefaultPath}
	}
	cmd.Env = append([]string(nil), env...)
	if s.Conf != "" {
		cmd.Env = append(cmd.Env, "SLURM_CONF="+s.Conf)
	}
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	return cmd
}

// slurmOutput runs a Slurm client command with slurmCmdTimeout and returns
// its stdout; an error carries the command's own message.
func slurmOutput(ctx context.Context, s *Slurm, cred *syscall.Credential, env []string, stdin string, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, slurmCmdTimeout)
	defer cancel()
	cmd := slurmCommand(ctx, s, cred, env, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	return commandOutput(cmd, name)
}

// commandOutput runs cmd and returns its stdout; an error carries the
// command's own message (its stderr), prefixed with name.
func commandOutput(cmd *exec.Cmd, name string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return out, fmt.Errorf("%s: %s", name, msg)
	}
	return out, nil
}

// unreachableController reports whether a Slurm client's message means the
// controller did not answer, rather than a refusal of this job.
func unreachableController(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "Unable to contact slurm controller") ||
		strings.Contains(s, "Socket timed out") || strings.Contains(s, "Connection refused") ||
		strings.Contains(s, "Zero Bytes were transmitted") || errors.Is(err, context.DeadlineExceeded) ||
		strings.Contains(s, "signal: killed")
}

// runSlurm submits spec to its Slurm cluster and follows it to the end.
// started is called once with the Slurm job id, before the job is released.
func runSlurm(ctx context.Context, spec Spec, sigs <-chan os.Signal, started startedFunc) Result {
	s := spec.Slurm
	cannot := func(err error) Result {
		r := cannotStart(err)
		if unreachableController(err) && len(spec.Hosts) > 0 {
			r.Unreachable = spec.Hosts[0]
		}
		return r
	}
	// sbatch runs as the user (munge vouches for its uid), with an
	// environment of the shepherd's choosing; the job's travels apart.
	owner := spec.slurmOwner()
	out, err := sbatch(ctx, spec)
	if err != nil {
		return cannot(err)
	}
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";") // "id;cluster" with a federation
	if !reSlurmJobID.MatchString(id) {
		return cannot(fmt.Errorf("sbatch printed %q, not a job id", firstLine(out)))
	}
	// What sbatch printed came from a process of the user's: root acts on
	// that id only once Slurm says it is this job. A job that cannot be
	// checked (the controller did not answer) is left alone, held: it
	// never runs, and the user may scancel it.
	if err := checkSlurmJob(ctx, s, id, owner); err != nil {
		return cannot(fmt.Errorf("sbatch printed Slurm job %s, not released: %w", id, err))
	}
	// Into the pid file (and to the daemon) while the job is held: from
	// here on a restarted daemon knows which Slurm job is this one's.
	started(PidFile{SlurmJob: id, SlurmConf: s.Conf, SlurmBin: s.BinDir, SlurmUID: owner.UID, SlurmJID: owner.JID})
	if _, err := slurmOutput(ctx, s, nil, nil, "", "scontrol", "release", id); err != nil {
		killSlurm(s, id, owner)
		return cannot(fmt.Errorf("releasing Slurm job %s: %w", id, err))
	}
	res := Result{StartedAt: time.Now()}
	var walltime <-chan time.Time
	if spec.Walltime > 0 {
		t := time.NewTimer(spec.Walltime)
		defer t.Stop()
		walltime = t.C
	}
	reason := ""
	cancel := func(why string) {
		if reason == "" {
			reason = why
		}
		if _, err := slurmOutput(context.WithoutCancel(ctx), s, nil, nil, "", "scancel", id); err != nil {
			fmt.Fprintf(os.Stderr, "launch: slurm %s: %v\n", id, err) // polled on; cancelled again next round
			reason = why
		}
	}
	ctxDone := ctx.Done()
	var last slurmJob
	for round := 0; ; round++ {
		t := time.NewTimer(min(slurmPollMin<<min(round, 6), slurmPollMax))
		cancelled := true
		select {
		case <-t.C:
			cancelled = false
		case <-walltime:
			walltime = nil
			cancel("walltime exceeded")
		case <-sigs:
			cancel("cancelled")
		case <-ctxDone:
			ctxDone = nil
			cancel("cancelled")
		}
		t.Stop()
		if cancelled {
			round = -1 // it ends soon: poll from the shortest interval again
		}
		out, err := slurmOutput(context.WithoutCancel(ctx), s, nil, nil, "", "scontrol", "show", "job", "-o", id)
		if err != nil {
			if invalidJobID(err) {
				// Purged (MinJobAge) before we saw its end: only possible
				// if this shepherd was stopped for minutes.
				res.EndedAt, res.ExitStatus = time.Now(), -1
				res.Reason = fmt.Sprintf("Slurm job %s ended unseen (last state %s)", id, last.State)
				return res
			}
			continue // the controller may come back; the job is its
		}
		j, err := parseSlurmJob(out)
		if err != nil {
			continue
		}
		last = j
		if !j.final() {
			continue
		}
		return slurmResult(res, j, id, reason)
	}
}

// slurmResult turns a final Slurm state into a Result.
func slurmResult(res Result, j slurmJob, id, reason string) Result {
	res.EndedAt = time.Now()
	res.ExitStatus = j.Exit
	if j.Signal != 0 {
		res.ExitStatus = -1
		res.Signal = signalName(syscall.Signal(j.Signal))
	}
	switch {
	case reason != "":
	case j.State == "TIMEOUT":
		reason = "walltime exceeded"
	case j.State == "CANCELLED":
		reason = "cancelled in Slurm"
	case j.State != "COMPLETED" && j.State != "FAILED":
		reason = fmt.Sprintf("Slurm job %s ended %s (%s)", id, j.State, j.Reason)
	case res.Signal != "":
		reason = "killed by " + res.Signal
	case res.ExitStatus != 0:
		reason = fmt.Sprintf("exit status %d", res.ExitStatus)
	}
	if reason != "" && res.ExitStatus == 0 && j.State != "COMPLETED" {
		res.ExitStatus = -1
	}
	res.Reason = reason
	return res
}

// killSlurm cancels a Slurm job whose shepherd is gone (or that must not
// run) and waits, bounded, until Slurm says it has ended: the job may be
// re-queued only once no copy of it runs. The id is checked first
// (checkSlurmJob): one that Slurm no longer knows has nothing left to
// cancel; one that names a job not owner's is never cancelled, and is an
// error, so that the daemon neither cancels nor re-queues.
func killSlurm(s *Slurm, id string, owner slurmOwner) error {
	ctx := context.Background()
	err := checkSlurmJob(ctx, s, id, owner)
	if err != nil && !errors.Is(err, errNotThisJob) && invalidJobID(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("launch: Slurm job %s not cancelled: %w", id, err)
	}
	if _, err := slurmOutput(ctx, s, nil, nil, "", "scancel", id); err != nil && !invalidJobID(err) {
		return fmt.Errorf("launch: %w", err)
	}
	deadline := time.Now().Add(slurmKillWait)
	for round := 0; time.Now().Before(deadline); round++ {
		out, err := slurmOutput(ctx, s, nil, nil, "", "scontrol", "show", "job", "-o", id)
		if invalidJobID(err) {
			return nil
		}
		if j, perr := parseSlurmJob(out); err == nil && perr == nil && j.final() {
			return nil
		}
		time.Sleep(min(slurmPollMin<<min(round, 6), slurmPollMax))
	}
	return fmt.Errorf("launch: Slurm job %s still not ended %s after scancel", id, slurmKillWait)
}

// slurmKillWait bounds the wait for a cancelled Slurm job to end: Slurm's
// KillWait (30 s by default) between SIGTERM and SIGKILL, and some slack.
const slurmKillWait = 60 * time.Second
