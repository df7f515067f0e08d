# shellcheck shell=bash
# lib.sh: what up.sh and down.sh share (sourced by them, not run): the list
# of the testbed's daemons and how to tell that one of them is alive.
#
# A daemon is alive when its pid file names a live process whose command
# line is the one up.sh started it with (the program and a path under DIR),
# so a stale pid file whose pid the kernel gave to another process is not
# taken for the daemon, and down.sh never signals that other process.

tb_die() {
	echo "testbed: $*" >&2
	exit 1
}

# tb_daemons prints the testbed's daemons under $DIR in starting order, one
# per line: NAME PIDFILE PROGRAM MARKER LOG. MARKER is an argument only that
# daemon's command line holds; LOG is where it writes why it failed.
# up.sh refuses a DIR with blanks, so the fields split on spaces.
tb_daemons() {
	echo "munged $DIR/munge/munged.pid /usr/sbin/munged $DIR/munge/munge.socket $DIR/munge/munged.log"
	echo "sshd $DIR/ssh/sshd.pid /usr/sbin/sshd $DIR/ssh/sshd_config $DIR/ssh/sshd.log"
	local c
	for c in c1 c2; do
		echo "$c-slurmctld $DIR/$c/slurmctld.pid /usr/sbin/slurmctld $DIR/$c/slurm.conf $DIR/$c/slurmctld.log"
		echo "$c-slurmd $DIR/$c/slurmd.pid /usr/sbin/slurmd $DIR/$c/slurm.conf $DIR/$c/slurmd.log"
	done
}

# tb_pid PIDFILE PROGRAM MARKER prints the pid in PIDFILE if that process
# is alive (not a zombie) and was started as PROGRAM with MARKER among its
# arguments; it fails otherwise. sshd rewrites its title to
# "sshd: /usr/sbin/sshd -f … [listener] …", hence the match on words.
tb_pid() {
	local pid cmd
	[[ -r $1 ]] || return 1
	pid=$(cat -- "$1" 2>/dev/null) || return 1
	pid=${pid//[[:space:]]/}
	[[ $pid =~ ^[1-9][0-9]*$ ]] || return 1
	tb_alive "$pid" || return 1
	cmd=" $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) " || return 1
	[[ $cmd == *" $2 "* && $cmd == *" $3 "* ]] || return 1
	echo "$pid"
}

# tb_alive PID succeeds while PID is a process that has not exited (a
# zombie has exited: its parent has not reaped it yet).
tb_alive() {
	local stat
	# cat, not $(<…): under set -e bash exits when $(<…) cannot open the file.
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[[ ${stat%% *} != Z ]]
}
