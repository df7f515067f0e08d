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
//     aim signals, and are checked before every signal.
//   - ResultPath: the Result, written once (tmp, fsync, rename, fsync of the
//     directory), so that it exists exactly when the outcome is durable.
//   - the host file (Spec.HostfilePath): one host per line, for the job.
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
//     time and boot id), so the daemon may re-queue the job without ever
//     running two copies of it.
//
// The job's leader also gets SIGKILL when its shepherd dies (Pdeathsig), and
// when the leader exits the shepherd kills the rest of its process group, so
// hosts are free when a job is reported finished. Processes that leave the
// job's process group on purpose (setsid, setpgid) escape both; containing
// them needs cgroups, which msched does not use yet.
//
// # Limits
//
// flock(2) is reliable on local file systems; the spool must not be on NFS.
// Only the Local launcher exists; ssh and mpirun launchers will start their
// remote side from the same shepherd.
package launch
