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

// Spec is everything the shepherd needs to start one job. It travels to the
// shepherd as JSON on its stdin.
type Spec struct {
	JID  string   `json:"jid"`
	Argv []string `json:"argv"` // executed directly, never through a shell
	Dir  string   `json:"dir"`  // working directory; "" = the shepherd's
	// Env holds "KEY=value" additions to the environment the shepherd
	// inherited; a later entry wins. MSCHED_JID, MSCHED_HOSTS, MSCHED_NHOSTS
	// and MSCHED_HOSTFILE are set last and cannot be overridden. A PATH here
	// is the one used to find Argv[0].
	Env   []string `json:"env,omitempty"`
	Hosts []string `json:"hosts"`
	// Identity is the user the job runs as; nil: the shepherd's own user.
	Identity *Identity `json:"identity,omitempty"`
	// SSH, when set, runs the job on remote hosts through the ssh client:
	// Argv on the first of SSH.Dest (or mpirun there, with MPI set).
	SSH *SSH `json:"ssh,omitempty"`
	// MPI, when set, runs Argv under mpirun over every host of the job.
	MPI *MPI `json:"mpi,omitempty"`
	// Slurm, when set, submits the job to a Slurm cluster with sbatch.
	Slurm *Slurm `json:"slurm,omitempty"`
	// Stdout and Stderr are created or appended to; relative paths are
	// relative to Dir, as a shell redirection in the working directory
	// would be. "" discards the stream. The same path for both shares one
	// file descriptor, like 2>&1.
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
	var err error
	for _, p := range []*string{&s.ResultPath, &s.PidPath, &s.HostfilePath, &s.ResultStaging, &s.Dir} {
		if *p == "" {
			continue
		}
		if *p, err = filepath.Abs(*p); err != nil {
			return s, fmt.Errorf("launch: %w", err)
		}
	}
	s.HostfilePath = s.hostfile()
	for _, p := range []*string{&s.Stdout, &s.Stderr} {
		if *p != "" && !filepath.IsAbs(*p) && s.Dir != "" {
			*p = filepath.Join(s.Dir, *p)
		}
	}
	if s.KillGrace <= 0 {
		s.KillGrace = DefaultKillGrace
	}
	return s, nil
}

// jobEnv is the job's environment: the shepherd's own, the Spec's additions,
// then the MSCHED_* variables. os/exec keeps the last of duplicate keys.
func (s Spec) jobEnv(base []string) []string {
	env := make([]string, 0, len(base)+len(s.Env)+4)
	env = append(env, base...)
	env = append(env, s.Env...)
	return append(env,
		"MSCHED_JID="+s.JID,
		"MSCHED_HOSTS="+strings.Join(s.Hosts, ","),
		"MSCHED_NHOSTS="+strconv.Itoa(len(s.Hosts)),
		"MSCHED_HOSTFILE="+s.HostfilePath,
	)
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
	// permission, unopenable output file); the run daemon re-queues such a
	// job with an attempt count.
	StartError bool `json:"start_error,omitempty"`
}

// OK reports whether the job ran to completion by itself with exit status 0.
func (r Result) OK() bool {
	return !r.StartError && r.ExitStatus == 0 && r.Signal == "" && r.Reason == ""
}
