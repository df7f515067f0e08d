#!/usr/bin/env bash
# down.sh DIR: stop the testbed that up.sh DIR started; run as root.
#
# It cancels the jobs still in the two Slurm clusters (their processes
# would outlive slurmd), then stops by pid, never by name, each daemon whose
# pid file under DIR names a live process started as up.sh started it, with
# every process below sshd (the connections it still serves and their
# commands): TERM, up to 15 s, KILL.
# It removes those pid files and leaves the rest of DIR (keys,
# configurations, logs, Slurm's state) for the next up.sh DIR; rm -rf DIR
# after it to start from nothing.
set -euo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

[[ $# -eq 1 ]] || tb_die "usage: down.sh DIR"
[[ $EUID -eq 0 ]] || tb_die "down.sh runs as root"
[[ -d $1 ]] || tb_die "no testbed at $1"
DIR=$(cd -- "$1" && pwd -P)

# Jobs first, while slurmctld and slurmd can still end them.
for c in c1 c2; do
	tb_pid "$DIR/$c/slurmctld.pid" /usr/sbin/slurmctld "$DIR/$c/slurm.conf" >/dev/null || continue
	export SLURM_CONF=$DIR/$c/slurm.conf
	jobs=$(timeout 10 squeue -h -o %A 2>/dev/null) || jobs=
	if [[ -n $jobs ]]; then
		# shellcheck disable=SC2086 # one job id a word
		timeout 10 scancel $jobs 2>/dev/null || true
		for ((i = 0; i < 30; i++)); do
			[[ -z $(timeout 10 squeue -h -t R,CG,S -o %A 2>/dev/null) ]] && break
			sleep 0.5
		done
		echo "cancelled the jobs of $c: ${jobs//$'\n'/ }"
	fi
	unset SLURM_CONF
done

# descendants PID: the pids of the processes below PID, parents first.
descendants() {
	local k
	# shellcheck disable=SC2013 # one pid a word
	for k in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		echo "$k"
		descendants "$k"
	done
}

pids=()
names=()
files=()
while read -r name pidfile prog marker _; do
	files+=("$pidfile")
	if pid=$(tb_pid "$pidfile" "$prog" "$marker"); then
		pids+=("$pid")
		names+=("$name (pid $pid)")
		# sshd's connections, and what runs in them: they outlive the
		# listener, and a command that does not read or write outlives
		# its connection too.
		if [[ $name == sshd ]]; then
			for k in $(descendants "$pid"); do
				pids+=("$k")
				names+=("sshd session process (pid $k: $(cat "/proc/$k/comm" 2>/dev/null))")
			done
		fi
	else
		[[ ! -e $pidfile ]] || echo "$name was not running (stale $pidfile)"
	fi
done < <(tb_daemons)

# wait_gone TENTHS: wait up to TENTHS tenths of a second until none of
# pids runs; left holds those still running.
wait_gone() {
	local i p
	for ((i = 0; i < $1; i++)); do
		left=()
		for p in "${pids[@]}"; do
			tb_alive "$p" && left+=("$p")
		done
		((${#left[@]} > 0)) || return 0
		sleep 0.1
	done
}

left=()
((${#pids[@]} == 0)) || kill -TERM "${pids[@]}" 2>/dev/null || true
wait_gone 150
if ((${#left[@]} > 0)); then
	echo "still running after 15 s, killing: ${left[*]}"
	kill -KILL "${left[@]}" 2>/dev/null || true
	wait_gone 50
	((${#left[@]} == 0)) || tb_die "could not stop ${left[*]}"
fi
rm -f "${files[@]}"
((${#names[@]} == 0)) || printf 'stopped %s\n' "${names[@]}"
echo "testbed under $DIR stopped; its files stay (rm -rf $DIR to remove them)"
