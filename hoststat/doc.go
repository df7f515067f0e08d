// Package hoststat knows the hosts msched schedules on and how busy they
// are: the hosts file (which hosts exist, their architecture and cluster),
// this machine's CPUs as hosts when there is no hosts file, the statistics
// the stats daemon samples (uptime, load average, user idle time, CPUs), and
// a store that keeps the recent samples of every host across restarts.
//
// Statistics are read from /proc and from utmp the way uptime(1) and w(1)
// read them. Every parser takes an io.Reader or a path, so tests run on
// fixtures and the package has no cgo.
package hoststat
