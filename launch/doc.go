// Package launch starts a job's argv on its hosts and reports how it ended,
// in a way that survives the run daemon being restarted at any instant.
//
// # The shepherd
//
// A job is never a child of the run daemon. Local.Start re-executes the
// msched binary as a small supervisor, the shepherd (the hidden sub-command
// that calls ShepherdMain), and the shepherd starts the job, waits for it and
// writes a Result atomically to Spec.ResultPath. The shepherd is started in a
// new session (Setsid), so a signal to the daemon's process group or the
// daemon's death (even kill -9) does not reach it; cancelling the ctx given to
// Start does not touch it either: the daemon stopping is not a cancel. Only
// Handle.Cancel and the walltime end a job early.
//
// The shepherd is one local supervisor for every kind of job; what it starts
// as its child depends on the Spec:
//
//   - a local job (no SSH): Argv itself, on this machine;
//   - with MPI and no SSH: mpirun over this machine (every host of the job
//     a slot here: --host localhost:N);
//   - with SSH: the OpenSSH client, which runs Argv once, on the first
//     destination, like a Slurm batch script (the job may start more on
//     the other hosts, from MSCHED_HOSTFILE);
//   - with SSH and MPI: the ssh client, which runs mpirun on the first
//     destination over all of them (a host file `HOST slots=R` made there,
//     -np hosts×R, --map-by ppr:R:node, --mca plm_rsh_agent MPI.Agent);
//     mpirun reaches the other hosts with the user's own ssh key, as on any
//     cluster;
//   - with Slurm: no local process; the shepherd submits the job with
//     sbatch as its user, in an environment of the shepherd's own (the
//     job's goes by --export-file), and held until scontrol confirms that
//     the id sbatch printed is this user's job and the id is in the pid
//     file and the ready notice; it follows the job with scontrol, cancels
//     it with scancel, and writes its Result from Slurm's end state and
//     exit code (see slurm.go and slurm_trust.go). If the shepherd dies,
//     Adopt cancels the Slurm job (killOrphans), once scontrol confirms it
//     again, before it reports Gone.
//
// # Users
//
// A job runs as Spec.Identity (LookupIdentity gives it from the password and
// group databases): a local job's process gets the user's uid, gid and
// groups, which needs a root shepherd (a shepherd that is not root reports a
// start error for another user); an ssh job logs in as the user. Its
// environment is a clean one (see Spec), nothing of the daemon's. Before the
// start the shepherd checks the working directory and finds the program,
// and it opens the output files, with the user's file-system identity (see
// asuser.go): a job file cannot make root write /etc/passwd, follow a
// planted symbolic link or hang on a FIFO. Files it creates belong to the
// user, mode 0644. mpirun never runs as root.
//
// # Files
//
// Three files describe one launch (Spec.Files lists them):
//
//   - PidPath: created and flock(2)ed by Start before the fork; the lock is
//     handed to the shepherd as file descriptor 3 and held until it exits.
//     The shepherd writes a PidFile record into it (its pid and the job's
//     process group, each with its start time from /proc/<pid>/stat and the
//     boot id). The lock, not the pid, is what says "a shepherd is alive":
//     it cannot be fooled by pid reuse and it covers the instant between the
//     fork and the first write. The pid and start time are used only to
//     aim signals, and are checked before every signal. For an ssh job the
//     process group is the local ssh client's.
//   - ResultPath: the Result, written once (tmp, fsync, rename, fsync of the
//     directory), so that it exists exactly when the outcome is durable.
//     On a full file system the shepherd waits for space to write it (one
//     try a second at most), holding its lock: the job is seen running,
//     never lost, and is recorded within a second of space coming back. If
//     the Result cannot be written for another reason, the shepherd exits
//     with ExitUnrecorded and Local's Handle reports the job ended with
//     that reason; only an adopted Handle, which cannot see the exit
//     status, then reports it lost.
//   - the host file (Spec.HostfilePath): one host per line, for a local job.
//     An ssh job's host file is made on the remote host (mktemp) and
//     removed there when the job ends.
//
// # Restart
//
// After a restart the run daemon calls Adopt(pidPath, resultPath) for each
// job it had started:
//
//   - the result file exists: Finished, with the Result;
//   - the pid file is locked: Running, with a Handle that polls (20 ms
//     growing to 500 ms) for the result and can Cancel;
//   - neither: Gone. The shepherd died without writing a result (or never
//     started), so the job is lost in flight. Before reporting Gone, Adopt
//     kills whatever is left of the job's process group (checked by start
//     time and boot id), and the job's processes that left it but carry its
//     MSCHED_HOSTFILE, so the daemon may re-queue the job without running
//     two copies of it (unless one of them changed its environment).
//
// The job's leader also gets SIGKILL when its shepherd dies (Pdeathsig), and
// when the leader exits the shepherd kills the rest of its process group, so
// hosts are free when a job is reported finished. Processes that leave the
// job's process group on purpose (setsid, setpgid, a double fork) are still
// the shepherd's, a child subreaper: it kills them too before it writes the
// Result. If the shepherd dies, Adopt kills the group and those of them that
// still carry the job's MSCHED_HOSTFILE in their environment (contain.go
// says what still escapes without cgroups).
//
// # Remote jobs
//
// The remote side of an ssh job is a small POSIX sh wrapper (sshWrapper in
// ssh.go) that the user's login shell runs with every word single-quoted;
// no user data is ever part of a script. The wrapper starts the job in its
// own session and process group (setsid) with /dev/null as stdin and
// reports to the shepherd by marker lines on stderr, which the shepherd
// removes from the job's stderr: ready (ssh connected and logged in), start,
// fail (a start error there: workdir, command not found), end with the
// job's status. So ssh's own failure, exit status 255 before "ready", is told
// apart from a job that exits 255: it gives a start error naming the host,
// with Result.Unreachable set for the run daemon to mark the host down (not
// for a login refused to one user: "Permission denied").
//
// The wrapper's stdin is a pipe held by the shepherd, through ssh:
//
//   - cancel and walltime: the shepherd writes TERM there, and KILL after
//     KillGrace; the wrapper signals the job's remote process group. (If
//     the host does not answer, the shepherd kills ssh 10 s later.)
//   - the shepherd's death (kill -9): its child ssh dies too (Pdeathsig),
//     the wrapper reads end of file and kills the job's group itself
//     (SIGTERM, SIGKILL after the grace), so no remote job runs on
//     unsupervised, and Adopt's Gone path needs nothing remote;
//   - a lost connection: the same, as soon as sshd notices it. A silent
//     network partition is noticed only with keepalives: set
//     ClientAliveInterval in the hosts' sshd_config, and ServerAliveInterval
//     in SSHConfig.Options for the shepherd's side.
//
// The job's stdout and stderr come back through ssh into the output files
// the shepherd opened here, as the user. ssh runs as the shepherd's user
// (root) with msched's identity file (SSHConfig), which users cannot read;
// that key must be authorized for each user on the remote hosts, and its
// options must not include -n or -f (the wrapper's stdin is the job's
// lifeline) nor -t (a terminal would mix the job's stderr into stdout).
//
// What a remote host needs: sshd, a POSIX login shell for the user (sh,
// bash, dash, ksh, zsh; not the csh family), /bin/sh, setsid (util-linux),
// mktemp, sleep and a writable $TMPDIR or /tmp, and, to kill the job's
// processes that left its process group, /proc and a grep with -z (GNU,
// recent BusyBox); for MPI, Open MPI's mpirun
// on the login's PATH on the first host and the same installation on the
// others, and the user's own ssh key authorized on every host (mpirun
// starts its daemons over ssh as the user, with MPI.Agent if set).
//
// # Limits
//
// flock(2) is reliable on local file systems; the spool must not be on NFS.
// A remote job's status comes from sh's wait: a job that itself exits with
// 129 to 192 is reported as killed by the signal status−128, as shells
// report it. Each remote host runs one wrapper per job and nothing else of
// msched's.
package launch
