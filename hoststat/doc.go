// Package hoststat knows the hosts msched schedules on, how busy they are
// and whether they answer: the hosts file (which hosts exist, their
// architecture, cluster and address), this machine's CPUs as hosts when
// there is no hosts file, the statistics the stats daemon samples (uptime,
// load average, user idle time, CPUs), a store that keeps the recent samples
// of every host across restarts, and the record of which hosts are down
// (HealthDir).
//
// Statistics are read from /proc and from utmp the way uptime(1) and w(1)
// read them; from an ssh host, from the output of RemoteCommand (/proc and
// who -u, as MS used rup and finger); from a Slurm cluster, from scontrol.
// Every parser takes an io.Reader or a path, so tests run on fixtures and
// the package has no cgo. Running the commands is the stats daemon's part.
package hoststat
