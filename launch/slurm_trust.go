package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"msched/internal/envname"

	"golang.org/x/sys/unix"
)

// What the shepherd, as root, may believe of a Slurm job id.
//
// sbatch must run as the job's user: munge vouches for the uid of the
// process that submits, and that uid is whose job Slurm runs. A process of
// the user's is the user's to control (an env: with LD_PRELOAD, or simply
// ptrace), so what sbatch prints is the user's word. Two defences: the
// first shuts the easy way in, the second does not rely on sbatch at all.
//
//   - sbatch gets an environment of the shepherd's choosing (sbatchEnv),
//     never the job's; the job's environment reaches the job through
//     sbatch --export-file, read from a memory file (slurmEnvFile), which
//     Slurm puts where sbatch's own environment used to go, so the job
//     sees what it did when sbatch ran with the job's environment;
//   - before root releases, follows or cancels a job by id, scontrol (run by
//     the shepherd) must say that the job is the submitter's and msched's
//     (checkSlurmJob): its UserId is the uid it was submitted as, and its
//     comment is the one sbatchArgs gives ("msched JID"). The pid file
//     records both, so that Adopt checks again before it cancels; a pid
//     file without them (an older shepherd's) names a job that is not
//     cancelled at all, and Adopt says so.

// sbatchEnvFD is the descriptor sbatch reads the job's environment from
// (--export-file=3): the first of exec.Cmd's ExtraFiles.
const sbatchEnvFD = 3

// sbatch submits spec's job, held, and returns what sbatch printed.
func sbatch(ctx context.Context, spec Spec) ([]byte, error) {
	envFile, err := slurmEnvFile(slurmJobEnv(spec))
	if err != nil {
		return nil, err
	}
	defer envFile.Close()
	ctx, cancel := context.WithTimeout(ctx, slurmCmdTimeout)
	defer cancel()
	args := append(sbatchArgs(spec), "--export-file="+strconv.Itoa(sbatchEnvFD))
	cmd := slurmCommand(ctx, spec.Slurm, credential(spec.Identity), sbatchEnv(spec), "sbatch", args...)
	cmd.Stdin = strings.NewReader(slurmScript(spec))
	cmd.ExtraFiles = []*os.File{envFile}
	return commandOutput(cmd, "sbatch")
}

// slurmEnvFile is env as sbatch --export-file reads it (NAME=value entries,
// each ended by a NUL byte) in a memory file, read from its start: nothing
// on a file system that another process could replace or read, nor one that
// may be full. sbatch gets it as an inherited descriptor.
func slurmEnvFile(env []string) (*os.File, error) {
	var b strings.Builder
	for _, e := range env {
		if strings.IndexByte(e, 0) >= 0 {
			return nil, fmt.Errorf("environment entry %q holds a NUL byte", firstLine([]byte(e)))
		}
		b.WriteString(e)
		b.WriteByte(0)
	}
	fd, err := unix.MemfdCreate("msched-job-env", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "msched-job-env")
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return nil, fmt.Errorf("job environment: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("job environment: %w", err)
	}
	return f, nil
}

// slurmRestore writes the batch script's lines that export each entry of
// env the job would not otherwise have: sbatch drops a few names from an
// --export-file (DISPLAY among them) that it passed on from its own
// environment. A variable the job has is left as it is, since Slurm set it
// (HOSTNAME, ENVIRONMENT, SLURM_*) or carried it, as it did before the
// job's environment came from a file. Names a shell cannot export (the job
// file allows none) are left to the file.
func slurmRestore(b *strings.Builder, env []string) {
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		if envname.Valid(k) {
			fmt.Fprintf(b, "[ -n \"${%s+x}\" ] || export %s\n", k, shQuote(e))
		}
	}
}

// slurmOwner is whose a Slurm job must be for the shepherd to act on its
// id: submitted as UID, with msched's comment for JID.
type slurmOwner struct {
	UID int
	JID string
}

// slurmOwner is whose spec's Slurm job is: its Identity's, or, without one,
// the shepherd's own user's (sbatch then runs as the shepherd).
func (s Spec) slurmOwner() slurmOwner {
	uid := os.Geteuid()
	if s.Identity != nil {
		uid = s.Identity.UID
	}
	return slurmOwner{UID: uid, JID: s.JID}
}

// slurmComment is the comment (sbatch --comment) of msched's job jid.
func slurmComment(jid string) string { return "msched " + jid }

// reSlurmJobID is a plain Slurm job id, as sbatch --parsable prints one:
// no sign, no leading zero, no array index or heterogeneous offset.
var reSlurmJobID = regexp.MustCompile(`^[1-9][0-9]{0,9}$`)

// reUserID is the value of one UserId=name(uid) of `scontrol show job -o`,
// at the start of the text after "UserId="; the name is "(null)" for a uid
// the controller cannot name.
var reUserID = regexp.MustCompile(`^\S*?\((\d+)\)(?:\s|$)`)

// errNotThisJob is wrapped by checkSlurmJob's error when Slurm's answer
// shows another job than the one expected.
var errNotThisJob = errors.New("not this job")

// checkSlurmJob asks Slurm (scontrol show job, run by the shepherd) whether
// id is owner's job. Its error carries scontrol's (invalidJobID: no such
// job) or wraps errNotThisJob.
func checkSlurmJob(ctx context.Context, s *Slurm, id string, owner slurmOwner) error {
	if !reSlurmJobID.MatchString(id) {
		return fmt.Errorf("%w: %q is not a Slurm job id", errNotThisJob, id)
	}
	out, err := slurmOutput(ctx, s, nil, nil, "", "scontrol", "show", "job", "-o", id)
	if err != nil {
		return err
	}
	return owner.check(id, out)
}

// check reads `scontrol show job -o id`: one line of KEY=value words whose
// values may hold spaces (JobName, WorkDir, Comment…), set by whoever
// submitted the job. So the line must start with this very job's id
// (JobId=ID JobName=…: an array or heterogeneous job, which msched never
// submits, has one line per part and more keys first); every word that reads
// as a UserId must name owner's uid (a name of another user's job, set to
// look like a UserId of ours, then contradicts the real one); and the
// comment must be msched's for owner's JID.
func (o slurmOwner) check(id string, out []byte) error {
	text := strings.TrimSpace(string(out))
	if strings.Contains(text, "\n") {
		return fmt.Errorf("%w: Slurm shows more than one job for id %s", errNotThisJob, id)
	}
	if !strings.HasPrefix(text, "JobId="+id+" JobName=") {
		// Not quoted: the line holds names others chose.
		return fmt.Errorf("%w: Slurm shows another job than %s", errNotThisJob, id)
	}
	// Every " UserId=" and every " Comment=" is read, each where it starts
	// (a pattern over the whole line could consume the space before the
	// next one and miss it): all must be owner's.
	users := strings.Split(text, " UserId=")[1:]
	if len(users) == 0 {
		return fmt.Errorf("%w: Slurm shows no owner for job %s", errNotThisJob, id)
	}
	for _, u := range users {
		m := reUserID.FindStringSubmatch(u)
		if m == nil {
			return fmt.Errorf("%w: Slurm job %s has an owner that does not read as name(uid)", errNotThisJob, id)
		}
		if uid, err := strconv.Atoi(m[1]); err != nil || uid != o.UID {
			return fmt.Errorf("%w: Slurm job %s belongs to uid %s, not %d", errNotThisJob, id, m[1], o.UID)
		}
	}
	comments := strings.Split(text+" ", " Comment=")[1:]
	for _, c := range comments {
		if !strings.HasPrefix(c, slurmComment(o.JID)+" ") {
			comments = nil
			break
		}
	}
	if len(comments) == 0 {
		return fmt.Errorf("%w: Slurm job %s is not msched's job %s (its comment is not %q)", errNotThisJob, id, o.JID, slurmComment(o.JID))
	}
	return nil
}

// invalidJobID reports whether err is a Slurm client's answer that the job
// id is unknown (never was, or purged after MinJobAge).
func invalidJobID(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Invalid job id")
}
