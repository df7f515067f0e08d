package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultKillGrace is how long a job has between SIGTERM and SIGKILL when
// its walltime runs out or it is cancelled: long enough for a program to
// flush and checkpoint, short enough that the hosts come back promptly.
const DefaultKillGrace = 10 * time.Second

// DefaultPath is a job's PATH when Spec.Path is "": the system's programs,
// as login(1) gives an ordinary user, and nothing of whoever started the
// daemon.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// Spec is everything the shepherd needs to start one job. It travels to the
// shepherd as JSON on its stdin.
//
// The job's environment is a clean one, never inherited from the shepherd:
//
//   - PATH: Path, or DefaultPath;
//   - HOME, USER, LOGNAME and SHELL from Identity (without an Identity:
//     the shepherd's own variables of those names, where it has them);
//   - then Env, whose entries replace any of the above;
//   - then MSCHED_JID, MSCHED_HOSTS (Hosts, comma-separated),
//     MSCHED_NHOSTS, for a co-allocated job MSCHED_COMPONENTS and
//     MSCHED_CLUSTERS (see Components), for an array member
//     MSCHED_ARRAY_JOB_ID and MSCHED_ARRAY_INDEX (see ArrayJob), and
//     MSCHED_HOSTFILE (the host file's path), which Env cannot override.
//
// A job run through ssh (SSH set) gets, instead of the first two, the
// remote login's environment as sshd makes it (HOME, PATH, SHELL,
// SSH_CONNECTION…); Env and MSCHED_* are laid over it the same way, and
// MSCHED_HOSTFILE names a host file on the remote host, which holds the
// destinations' addresses (SSH.Dest, one per line; MPI: "HOST slots=R"),
// the names a program there can reach the hosts by; MSCHED_HOSTS keeps the
// names of Hosts.
type Spec struct {
	JID  string   `json:"jid"`
	Argv []string `json:"argv"` // executed directly, never through a shell
	// Dir is the working directory; "" means the shepherd's (for an ssh
	// job: the remote login's, the user's home there). For an ssh job it
	// is a directory on the remote host and is passed as it is.
	Dir string `json:"dir"`
	// Env holds "KEY=value" entries (the job file's env: map) laid over the
	// clean environment described above; a later entry wins. A PATH here
	// is the one used to find Argv[0].
	Env []string `json:"env,omitempty"`
	// Path is the job's PATH; "" means DefaultPath. Not used for an ssh
	// job, which has the remote login's PATH (unless Env sets one).
	Path  string   `json:"path,omitempty"`
	Hosts []string `json:"hosts"`
	// Components, for a co-allocated job, splits Hosts into its components,
	// in order: the first Components[0].Hosts hosts are component 1, in
	// cluster Components[0].Cluster, and so on. The job gets
	// MSCHED_COMPONENTS (the sizes) and MSCHED_CLUSTERS (each component's
	// cluster), comma-separated, and each line of its host file ends with
	// " # cluster=C component=K" (K from 1; a comment to mpirun).
	Components []Component `json:"components,omitempty"`
	// ArrayJob and ArrayIndex, for a member of a job array, are the
	// array's JID and the member's index: the job gets them as
	// MSCHED_ARRAY_JOB_ID and MSCHED_ARRAY_INDEX. ArrayJob "": not an
	// array member.
	ArrayJob   string `json:"array_job,omitempty"`
	ArrayIndex int    `json:"array_index,omitempty"`
	// Identity is the user the job runs as; nil: the shepherd's own user.
	// A local job's process gets its uid, gid and groups (the shepherd must
	// be root for another uid); the job's output files are opened with its
	// permissions; an ssh job logs in as Identity.User unless its
	// destination names a user.
	Identity *Identity `json:"identity,omitempty"`
	// SSH, when set, runs the job on remote hosts through the ssh client:
	// Argv on the first of SSH.Dest (or mpirun there, with MPI set).
	SSH *SSH `json:"ssh,omitempty"`
	// MPI, when set, runs Argv under mpirun over every host of the job.
	MPI *MPI `json:"mpi,omitempty"`
	// Slurm, when set, submits the job to a Slurm cluster with sbatch.
	Slurm *Slurm `json:"slurm,omitempty"`
	// Stdout and Stderr are created (mode 0644) or appended to, on this
	// machine, with the permissions of Identity: the shepherd opens them as
	// that user would, never following a symbolic link in the last
	// component, and refuses anything but a regular file or a character
	// device (such as /dev/null). Relative paths are relative to Dir, as a
	// shell redirection in the working directory would be (for an ssh job
	// only when Dir is absolute: a shared file system). "" discards the
	// stream. The same path for both shares one file descriptor, like 2>&1.
	// An ssh job's output travels through ssh into these local files.
	Stdout string `json:"stdout,omitempty"`
	Stderr string `json:"stderr,omitempty"`
	// Walltime limits the job's run time; 0 means no limit.
	Walltime time.Duration `json:"walltime,omitempty"`
	// KillGrace is the time between SIGTERM and SIGKILL; 0 means
	// DefaultKillGrace.
	KillGrace time.Duration `json:"kill_grace,omitempty"`

	ResultPath string `json:"result_path"`
	PidPath    string `json:"pid_path"`
	// HostfilePath is where the host file is written; "" means
	// <dir of ResultPath>/<JID>.hosts.
	HostfilePath string `json:"hostfile_path,omitempty"`
	// ResultStaging, when set, names an existing file (placed by the
	// daemon from its recycled files) that the shepherd fills with the
	// Result, fsyncs and renames to ResultPath, instead of creating a
	// temporary: a file created is an inode allocated, costly on ext4
	// without a journal. Without it, or if it is gone, a temporary is made.
	ResultStaging string `json:"result_staging,omitempty"`
	// ReadyFD, when not 0, is a descriptor (a pipe from Local.Start) on
	// which the shepherd writes its PidFile record as one JSON line once the
	// job's process group exists, then closes it; it closes it without a
	// line if the job never starts. The daemon learns the job's process
	// group at once instead of polling the pid file.
	ReadyFD int `json:"ready_fd,omitempty"`
}

// Component is one component of a co-allocated job: Hosts hosts of Cluster.
type Component struct {
	Cluster string `json:"cluster"`
	Hosts   int    `json:"hosts"`
}

// hostNote is what the host file's line of host i adds for a co-allocated
// job: its cluster and component, as a comment ("" otherwise).
func (s Spec) hostNote(i int) string {
	for k, c := range s.Components {
		if i < c.Hosts {
			return fmt.Sprintf(" # cluster=%s component=%d", c.Cluster, k+1)
		}
		i -= c.Hosts
	}
	return ""
}

// hostLines is the host file of a job on this machine: its hosts, one per
// line, each with its hostNote.
func (s Spec) hostLines() []string {
	lines := make([]string, len(s.Hosts))
	for i, h := range s.Hosts {
		lines[i] = h + s.hostNote(i)
	}
	return lines
}

// Identity is a user from the password database, as a job runs as it.
type Identity struct {
	User   string `json:"user"`
	UID    int    `json:"uid"`
	GID    int    `json:"gid"`
	Groups []int  `json:"groups,omitempty"` // supplementary groups
	Home   string `json:"home"`
	Shell  string `json:"shell"`
}

// SSH is how a job reaches its remote hosts.
type SSH struct {
	// Binary is the OpenSSH client; "" means "ssh" on the PATH.
	Binary string `json:"binary,omitempty"`
	// Options go before the destination on every ssh command line
	// (BatchMode, identity file, known-hosts file, the configuration's
	// extra options).
	Options []string `json:"options,omitempty"`
	// Dest holds one destination per host of the job, in Spec.Hosts order.
	Dest []SSHDest `json:"dest"`
}

// SSHDest is one ssh destination: ssh://[user@]host[:port]. User "" means
// the job's user (Identity.User).
type SSHDest struct {
	Host string `json:"host"`
	Port int    `json:"port,omitempty"`
	User string `json:"user,omitempty"`
}

// MPI is an Open MPI launch over the job's hosts.
type MPI struct {
	// Mpirun is the mpirun program; "" means "mpirun" on the PATH.
	Mpirun       string `json:"mpirun,omitempty"`
	RanksPerHost int    `json:"ranks_per_host,omitempty"` // 0 means 1
	// Agent is mpirun's remote shell (plm_rsh_agent), e.g. "ssh -p 2222
	// -o BatchMode=yes"; "" leaves Open MPI's default.
	Agent string `json:"agent,omitempty"`
}

// Slurm is a submission to a Slurm cluster.
type Slurm struct {
	Conf      string `json:"conf"`                // SLURM_CONF of the cluster
	Partition string `json:"partition,omitempty"` // "" the cluster's default
	Nodes     int    `json:"nodes"`               // sbatch --nodes
	JobName   string `json:"job_name,omitempty"`
	// BinDir holds sbatch, squeue, scontrol and scancel; "" means the PATH.
	BinDir string `json:"bin_dir,omitempty"`
}

// Files lists the files a launch of s may create (pid file, result file,
// host file and the shepherd's error log), so that the run daemon can remove
// them once it has recorded the outcome. Call it on a Spec that has
// ResultPath set.
func (s Spec) Files() []string {
	fs := []string{s.PidPath, s.ResultPath, s.hostfile(), s.ResultPath + errLogSuffix}
	if s.ResultStaging != "" {
		fs = append(fs, s.ResultStaging)
	}
	return fs
}

// errLogSuffix names the file where a shepherd that cannot write its result
// leaves its last words; it has nowhere else to say them (its stderr is
// /dev/null so that a dead daemon's pipe cannot kill it with SIGPIPE).
const errLogSuffix = ".shepherd-error"

func (s Spec) hostfile() string {
	if s.HostfilePath != "" {
		return s.HostfilePath
	}
	return filepath.Join(filepath.Dir(s.ResultPath), s.JID+".hosts")
}

// normalize checks what the shepherd cannot report through a result file
// (where to write it) and makes the paths absolute, so the Spec means the same
// thing in the shepherd whatever its working directory. Problems with the job
// itself (empty argv, missing workdir) are not errors here: the shepherd
// reports them as a start_error Result, which the run daemon handles like
// any other failed start.
func (s Spec) normalize() (Spec, error) {
	if s.JID == "" || strings.ContainsAny(s.JID, "/\x00") {
		return s, fmt.Errorf("launch: invalid JID %q", s.JID)
	}
	if s.ResultPath == "" || s.PidPath == "" {
		return s, errors.New("launch: spec needs ResultPath and PidPath")
	}
	paths := []*string{&s.ResultPath, &s.PidPath, &s.HostfilePath, &s.ResultStaging}
	if s.SSH == nil {
		paths = append(paths, &s.Dir) // an ssh job's Dir is on the remote host
	}
	var err error
	for _, p := range paths {
		if *p == "" {
			continue
		}
		if *p, err = filepath.Abs(*p); err != nil {
			return s, fmt.Errorf("launch: %w", err)
		}
	}
	s.HostfilePath = s.hostfile()
	for _, p := range []*string{&s.Stdout, &s.Stderr} {
		if *p != "" && !filepath.IsAbs(*p) && filepath.IsAbs(s.Dir) {
			*p = filepath.Join(s.Dir, *p)
		}
	}
	if s.KillGrace <= 0 {
		s.KillGrace = DefaultKillGrace
	}
	return s, nil
}

// jobEnv is a local job's environment (see Spec): PATH, the user's HOME,
// USER, LOGNAME and SHELL, Env, then MSCHED_*. self is the shepherd's own
// environment, used only without an Identity. os/exec keeps the last of
// duplicate keys, so Env overrides what comes before it, and nothing
// overrides MSCHED_*.
func (s Spec) jobEnv(self []string) []string {
	path := s.Path
	if path == "" {
		path = DefaultPath
	}
	env := make([]string, 0, 5+len(s.Env)+4)
	env = append(env, "PATH="+path)
	if id := s.Identity; id != nil {
		shell := id.Shell
		if shell == "" {
			shell = defaultShell
		}
		env = append(env, "HOME="+id.Home, "USER="+id.User, "LOGNAME="+id.User, "SHELL="+shell)
	} else {
		for _, k := range []string{"HOME", "USER", "LOGNAME", "SHELL"} {
			if v, ok := lookupEnv(self, k); ok {
				env = append(env, k+"="+v)
			}
		}
	}
	env = append(env, s.Env...)
	return append(env, s.mschedEnv(s.HostfilePath)...)
}

// mschedEnv is msched's own variables, with the host file at hostfile
// ("": none, the remote wrapper sets it).
func (s Spec) mschedEnv(hostfile string) []string {
	env := []string{
		"MSCHED_JID=" + s.JID,
		"MSCHED_HOSTS=" + strings.Join(s.Hosts, ","),
		"MSCHED_NHOSTS=" + strconv.Itoa(len(s.Hosts)),
	}
	if len(s.Components) > 0 {
		sizes, clusters := make([]string, len(s.Components)), make([]string, len(s.Components))
		for k, c := range s.Components {
			sizes[k], clusters[k] = strconv.Itoa(c.Hosts), c.Cluster
		}
		env = append(env, "MSCHED_COMPONENTS="+strings.Join(sizes, ","), "MSCHED_CLUSTERS="+strings.Join(clusters, ","))
	}
	if s.ArrayJob != "" {
		env = append(env, "MSCHED_ARRAY_JOB_ID="+s.ArrayJob, "MSCHED_ARRAY_INDEX="+strconv.Itoa(s.ArrayIndex))
	}
	if hostfile != "" {
		env = append(env, envMarkKey+"="+hostfile)
	}
	return env
}

// envMark is the entry of a job's environment env that no other job's has,
// by which its processes are found (PidFile.EnvMark): its host file's path,
// under the spool and named by the JID. "" if env has none.
func envMark(env []string) string {
	if v, ok := lookupEnv(env, envMarkKey); ok && v != "" {
		return envMarkKey + "=" + v
	}
	return ""
}

// envMarkKey is the variable of envMark, MSCHED_HOSTFILE.
const envMarkKey = "MSCHED_HOSTFILE"

// lookupEnv finds key in env, the last entry winning as in os/exec.
func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// ReadSpec decodes a Spec from JSON, rejecting unknown fields so that a
// shepherd from an older binary does not silently ignore a setting.
func ReadSpec(r io.Reader) (Spec, error) {
	var s Spec
	d := json.NewDecoder(r)
	d.DisallowUnknownFields()
	if err := d.Decode(&s); err != nil {
		return s, fmt.Errorf("launch: reading spec: %w", err)
	}
	return s, nil
}

// Result is how a job ended, as written by its shepherd.
type Result struct {
	StartedAt time.Time `json:"started_at,omitzero"` // zero if the job never started
	EndedAt   time.Time `json:"ended_at"`
	// ExitStatus is the job's exit code; -1 if it was killed by a signal or
	// never started.
	ExitStatus int `json:"exit_status"`
	// Signal names the signal that killed the job, e.g. "SIGKILL".
	Signal string `json:"signal,omitempty"`
	// Reason says why the job ended, when exiting by itself with status 0
	// is not the whole story: "walltime exceeded", "cancelled",
	// "exit status 3", "killed by SIGSEGV", "cannot start: …".
	Reason string `json:"reason,omitempty"`
	// StartError is true when the job never ran (bad argv, missing workdir,
	// permission, unopenable output file, remote host unreachable); the run
	// daemon re-queues such a job with an attempt count.
	StartError bool `json:"start_error,omitempty"`
	// Permanent, with StartError, says that no attempt could start the job:
	// its program is not there or cannot be executed (ENOENT, ENOTDIR,
	// ENOEXEC, EACCES on the executable, or not found in the job's PATH), or
	// its argument list and environment are too large for exec (E2BIG). The
	// run daemon ends such a job at once instead of re-queuing it. Only a
	// local job's start errors are judged so: another host of an ssh job,
	// or an mpirun installed later, may yet succeed.
	Permanent bool `json:"permanent,omitempty"`
	// Unreachable names the Spec.Hosts entry that ssh could not reach (it
	// could not connect or authenticate), so that the run daemon marks that
	// host down. With StartError the job never started; without it the
	// connection was lost while the job ran (its remote side kills the job
	// when it notices).
	Unreachable string `json:"unreachable,omitempty"`
}

// OK reports whether the job ran to completion by itself with exit status 0.
func (r Result) OK() bool {
	return !r.StartError && r.ExitStatus == 0 && r.Signal == "" && r.Reason == ""
}
