#!/usr/bin/env bash
# up.sh DIR: start msched's testbed under DIR, on loopback only, from
# Debian's packages (openssh-server, slurm-wlm, munge); run as root.
#
#   - one sshd on 127.0.0.2-5, port $TESTBED_SSH_PORT (2222): four "hosts";
#   - one munged of its own, as the munge user, socket DIR/munge/munge.socket;
#   - two single-node Slurm clusters c1 and c2 (a slurmctld and a slurmd
#     each), ports $TESTBED_SLURM_PORT_BASE (17817) to base+3;
#   - DIR/hosts.yaml and DIR/msched.yaml for `msched up`.
#
# Running it again leaves every daemon that is alive alone and rewrites no
# file that exists (keys, configurations). down.sh DIR stops what it started.
# See README.md beside it.
set -euo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

[[ $# -eq 1 ]] || tb_die "usage: up.sh DIR"
[[ $EUID -eq 0 ]] || tb_die "up.sh runs as root (it starts sshd and Slurm's daemons, and munged as the munge user)"
missing=()
for p in /usr/sbin/sshd /usr/bin/ssh-keygen /usr/sbin/munged /usr/sbin/mungekey /usr/bin/munge \
	/usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/scontrol /usr/bin/sinfo /usr/bin/setpriv; do
	[[ -x $p ]] || missing+=("$p")
done
((${#missing[@]} == 0)) || tb_die "missing ${missing[*]}: apt-get install openssh-server openssh-client slurm-wlm munge"
id munge >/dev/null 2>&1 || tb_die "no user munge (the munge package creates it)"

mkdir -p -- "$1"
DIR=$(cd -- "$1" && pwd -P)
# sshd_config and slurm.conf do not quote paths.
[[ $DIR =~ ^/[A-Za-z0-9._/-]+$ ]] || tb_die "DIR $DIR: only letters, digits and . _ - / please"
# slurmd makes unix sockets DIR/cN/slurmd/<node>_<job>.<step> (up to 37
# more bytes) and a unix socket path has at most 107.
((${#DIR} <= 64)) || tb_die "DIR $DIR is longer than 64 characters: slurmd's sockets under it would be too long"
# o+x: every user reaches the munge socket and the slurm.confs;
# not group/world writable: sshd's StrictModes and munged check that.
chmod 0755 "$DIR"
p=$DIR
while [[ $p != / ]]; do
	p=$(dirname "$p")
	(($(stat -c '0%a' "$p") & 1)) ||
		echo "testbed: warning: $p is not o+x: only root can use munge and Slurm under $DIR" >&2
done

# sshd's StrictModes refuses an authorized_keys file when it or a directory
# above it is group or world writable, or not owned by root (or the user
# logging in). Under /tmp (mode 1777) that is always so: then StrictModes
# is off, which also stops it checking users' ~/.ssh, harmless here since
# sshd listens on loopback only.
strict=yes
p=$DIR
while :; do
	read -r uid mode < <(stat -c '%u 0%a' "$p")
	if [[ $uid != 0 ]] || ((mode & 022)); then
		strict=no
		break
	fi
	[[ $p != / ]] || break
	p=$(dirname "$p")
done

# conf_value FILE KEY: KEY's value in FILE (sshd "Key value", slurm "Key=value").
conf_value() {
	[[ -f $1 ]] || return 0
	awk -v k="$2" '$1 == k { print $2; exit } index($0, k "=") == 1 { sub(/^[^=]*=/, ""); print; exit }' "$1"
}

# port NAME ENVVAR DEFAULT FILE KEY: the port DIR was set up with, else
# $ENVVAR, else DEFAULT; an ENVVAR that differs from DIR's is an error.
port() {
	local was want=${!2:-} v
	was=$(conf_value "$4" "$5")
	if [[ -n $was ]]; then
		[[ -z $want || $want == "$was" ]] ||
			tb_die "$DIR was set up with $1 $was, not \$$2=$want: run down.sh $DIR and remove $DIR to change it"
		v=$was
	else
		v=${want:-$3}
	fi
	if ! [[ $v =~ ^[1-9][0-9]*$ ]] || ((v > 65535 - 3)); then
		tb_die "$1 $v: want 1 to 65532"
	fi
	echo "$v"
}
ssh_port=$(port "ssh port" TESTBED_SSH_PORT 2222 "$DIR/ssh/sshd_config" Port)
slurm_base=$(port "Slurm port base" TESTBED_SLURM_PORT_BASE 17817 "$DIR/c1/slurm.conf" SlurmctldPort)
addrs=(127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5)

# new_file PATH MODE [OWNER]: write stdin to PATH unless PATH exists
# (through a temporary file, so that an interrupted run leaves no half file).
new_file() {
	if [[ -e $1 ]]; then
		cat >/dev/null
		return 0
	fi
	cat >"$1.new"
	chmod "$2" "$1.new"
	chown "${3:-root:root}" "$1.new"
	mv -f "$1.new" "$1"
}

# keygen PATH COMMENT: an ed25519 key pair PATH, PATH.pub unless PATH exists.
keygen() {
	[[ -e $1 ]] && return 0
	rm -f "$1.new" "$1.new.pub"
	ssh-keygen -q -t ed25519 -N '' -C "$2" -f "$1.new"
	mv -f "$1.new.pub" "$1.pub"
	mv -f "$1.new" "$1"
}

started=()
kept=()

# ensure NAME COMMAND…: unless daemon NAME (see tb_daemons) is alive, run
# COMMAND, which starts it in the background, and wait for its pid file.
ensure() {
	local name=$1 pidfile prog marker log pid i size
	shift
	read -r _ pidfile prog marker log < <(tb_daemons | awk -v n="$name" '$1 == n')
	if pid=$(tb_pid "$pidfile" "$prog" "$marker"); then
		kept+=("$name (pid $pid)")
		return 0
	fi
	rm -f "$pidfile"
	touch "$log"
	size=$(stat -c %s "$log")
	"$@" </dev/null >>"$log" 2>&1 || tb_die "$name did not start (exit $?): see $log:
$(tail -n 20 "$log")"
	for ((i = 0; i < 150; i++)); do
		if pid=$(tb_pid "$pidfile" "$prog" "$marker"); then
			started+=("$name (pid $pid)")
			return 0
		fi
		# Slurm's daemons detach before they bind their ports: their log
		# is their only word that they failed.
		grep -Eq 'fatal:|Unable to bind' < <(tail -c +$((size + 1)) "$log") && break
		sleep 0.1
	done
	tb_die "$name did not start (no live pid in $pidfile): see $log:
$(tail -n 20 "$log")"
}

# --- munge: one munged, as the munge user, for both clusters ---------------
mkdir -p "$DIR/munge"
chown munge:munge "$DIR/munge"
chmod 0755 "$DIR/munge"
if [[ ! -e $DIR/munge/munge.key ]]; then
	rm -f "$DIR/munge/munge.key.new"
	setpriv --reuid=munge --regid=munge --clear-groups mungekey --create --keyfile="$DIR/munge/munge.key.new"
	mv -f "$DIR/munge/munge.key.new" "$DIR/munge/munge.key"
fi
for f in munged.log munged.seed; do
	[[ -e $DIR/munge/$f ]] || install -o munge -g munge -m 0600 /dev/null "$DIR/munge/$f"
done
ensure munged setpriv --reuid=munge --regid=munge --clear-groups /usr/sbin/munged \
	--socket "$DIR/munge/munge.socket" --key-file "$DIR/munge/munge.key" \
	--pid-file "$DIR/munge/munged.pid" --log-file "$DIR/munge/munged.log" \
	--seed-file "$DIR/munge/munged.seed"
munge -S "$DIR/munge/munge.socket" -n | unmunge -S "$DIR/munge/munge.socket" >/dev/null ||
	tb_die "munged does not answer on $DIR/munge/munge.socket: see $DIR/munge/munged.log"

# --- ssh: one sshd on four loopback addresses -------------------------------
mkdir -p "$DIR/ssh" /run/sshd # /run/sshd: sshd's privilege separation directory
chmod 0755 "$DIR/ssh"
keygen "$DIR/ssh/ssh_host_ed25519_key" "msched testbed host key"
keygen "$DIR/ssh/id_ed25519" "msched testbed key"
chown root:root "$DIR/ssh/id_ed25519"
chmod 0600 "$DIR/ssh/id_ed25519"
new_file "$DIR/ssh/authorized_keys" 0644 <"$DIR/ssh/id_ed25519.pub"
hostkey=$(cut -d' ' -f1,2 "$DIR/ssh/ssh_host_ed25519_key.pub")
for a in "${addrs[@]}"; do
	# ssh looks a host up as [address]:port, or as address on port 22.
	if ((ssh_port == 22)); then
		echo "$a $hostkey"
	else
		echo "[$a]:$ssh_port $hostkey"
	fi
done | new_file "$DIR/ssh/known_hosts" 0644
{
	cat <<EOF
# sshd of msched's testbed under $DIR (written by up.sh).
Port $ssh_port
$(printf 'ListenAddress %s\n' "${addrs[@]}")
HostKey $DIR/ssh/ssh_host_ed25519_key
PidFile $DIR/ssh/sshd.pid
# The testbed key logs in as any user; users' own keys work too.
AuthorizedKeysFile .ssh/authorized_keys $DIR/ssh/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitUserEnvironment no
X11Forwarding no
PrintMotd no
EOF
	if [[ $strict == no ]]; then
		echo "# $DIR or a directory above it is group/world writable or not root's (/tmp is 1777):"
		echo "# StrictModes would refuse $DIR/ssh/authorized_keys."
	fi
	echo "StrictModes $strict"
} | new_file "$DIR/ssh/sshd_config" 0644
touch "$DIR/ssh/sshd.log"
/usr/sbin/sshd -t -f "$DIR/ssh/sshd_config" 2>>"$DIR/ssh/sshd.log" ||
	tb_die "sshd rejects $DIR/ssh/sshd_config: see $DIR/ssh/sshd.log:
$(tail -n 5 "$DIR/ssh/sshd.log")"
# sshd re-executes itself for each connection: it needs its absolute path.
ensure sshd /usr/sbin/sshd -f "$DIR/ssh/sshd_config" -E "$DIR/ssh/sshd.log"

# --- Slurm: clusters c1 and c2, one node each --------------------------------
i=0
for c in c1 c2; do
	ctld_port=$((slurm_base + 2 * i))
	slurmd_port=$((slurm_base + 2 * i + 1))
	i=$((i + 1))
	mkdir -p "$DIR/$c/state" "$DIR/$c/slurmd"
	chmod 0755 "$DIR/$c"
	new_file "$DIR/$c/slurm.conf" 0644 <<EOF
# Slurm cluster $c of msched's testbed under $DIR (written by up.sh).
# Use it with SLURM_CONF=$DIR/$c/slurm.conf.
ClusterName=$c
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
# Bind to 127.0.0.1 (the node's and controller's address), not to every address.
CommunicationParameters=NoInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/$c/state
SlurmdSpoolDir=$DIR/$c/slurmd
SlurmctldPidFile=$DIR/$c/slurmctld.pid
SlurmdPidFile=$DIR/$c/slurmd.pid
SlurmctldLogFile=$DIR/$c/slurmctld.log
SlurmdLogFile=$DIR/$c/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups, systemd or accounting daemon: it runs in containers.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# Trust the node's CPUs=2 below even on a machine with fewer (both clusters
# claim the same CPUs anyway).
SlurmdParameters=config_overrides
ReturnToService=2
SlurmctldTimeout=10
SlurmdTimeout=30
MessageTimeout=10
KillWait=5
InactiveLimit=0
# Finished jobs stay visible to scontrol show job for 300 s.
MinJobAge=300
NodeName=${c}n1 NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=${c}n1 Default=YES MaxTime=INFINITE State=UP
EOF
	ensure "$c-slurmctld" /usr/sbin/slurmctld -f "$DIR/$c/slurm.conf"
	# -N: the node's name, so that two slurmds run on one machine.
	ensure "$c-slurmd" /usr/sbin/slurmd -f "$DIR/$c/slurm.conf" -N "${c}n1"
done

# wait_node C: wait until cluster C's node is up (idle, or busy with jobs),
# resuming it if the controller holds it down or drained.
wait_node() {
	local c=$1 node=${1}n1 st='' last=-10 deadline=$((SECONDS + 60))
	export SLURM_CONF=$DIR/$c/slurm.conf
	while :; do
		st=$(timeout 10 sinfo -h -N -n "$node" -o %t 2>/dev/null | head -n 1) || st=
		case $st in
		idle | mix | alloc | comp | resv | plnd) return 0 ;;
		down | drain | drng | fail | failg)
			if ((SECONDS - last >= 5)); then
				timeout 10 scontrol update nodename="$node" state=resume 2>/dev/null || true
				last=$SECONDS
			fi
			;;
		esac
		((SECONDS < deadline)) || tb_die "node $node of $c is '${st:-not known}' after 60 s: see $DIR/$c/slurmd.log and $DIR/$c/slurmctld.log
slurmctld.log ends:
$(tail -n 15 "$DIR/$c/slurmctld.log" 2>&1)
slurmd.log ends:
$(tail -n 15 "$DIR/$c/slurmd.log" 2>&1)
listening:
$(ss -ltnp 2>/dev/null | grep -E ":($slurm_base|$((slurm_base + 1))|$((slurm_base + 2))|$((slurm_base + 3))) " || true)"
		sleep 0.5
	done
}
wait_node c1
wait_node c2
unset SLURM_CONF

# --- msched's files ----------------------------------------------------------
new_file "$DIR/hosts.yaml" 0644 <<EOF
# msched hosts of the testbed under $DIR (written by up.sh). All are this
# machine: ws1-ws4 through one sshd on four loopback addresses, c1n1 and
# c2n1 through two Slurm clusters. The architectures are from msched's
# hardware database: ws3 and ws4 pretend to be twice as fast (SunUltra10,
# speed 2) as the others (generic, speed 1, what the example models assume).
- {name: ws1, arch: generic, cluster: ws, address: "ssh://127.0.0.2:$ssh_port"}
- {name: ws2, arch: generic, cluster: ws, address: "ssh://127.0.0.3:$ssh_port"}
- {name: ws3, arch: SunUltra10, cluster: ws, address: "ssh://127.0.0.4:$ssh_port"}
- {name: ws4, arch: SunUltra10, cluster: ws, address: "ssh://127.0.0.5:$ssh_port"}
- {name: c1n1, arch: generic, cluster: c1, address: "slurm://$DIR/c1/slurm.conf"}
- {name: c2n1, arch: generic, cluster: c2, address: "slurm://$DIR/c2/slurm.conf"}
EOF
# mpirun's remote shell between the hosts, as the job's user with the
# user's own key. The four hosts are one machine here, where the Open MPI
# daemons of one job would share, and remove under each other, one session
# directory in /tmp (a job failed at once now and then): each host gets
# its own TMPDIR there, /tmp/msched-mpi-<address>-<uid>.
new_file "$DIR/ssh/mpi-agent" 0755 <<EOF
#!/bin/sh
# mpirun's remote shell on the testbed under $DIR (written by up.sh).
h=\$1
shift
exec ssh -p $ssh_port -o BatchMode=yes -o UserKnownHostsFile=$DIR/ssh/known_hosts "\$h" "d=/tmp/msched-mpi-\$h-\\\$(id -u) && mkdir -p \\\$d && TMPDIR=\\\$d && export TMPDIR &&" "\$@"
EOF

new_file "$DIR/msched.yaml" 0644 <<EOF
# msched configuration for the testbed under $DIR (written by up.sh).
spool: $DIR/spool
ssh:
  identity_file: $DIR/ssh/id_ed25519
  known_hosts_file: $DIR/ssh/known_hosts
  options: ["-o", "ConnectTimeout=5"]
mpi:
  ssh_agent: "$DIR/ssh/mpi-agent"
EOF

# --- what runs ----------------------------------------------------------------
echo "testbed under $DIR:"
((${#started[@]} == 0)) || printf '  started %s\n' "${started[@]}"
((${#kept[@]} == 0)) || printf '  already running %s\n' "${kept[@]}"
echo "  ssh: ${addrs[*]} port $ssh_port (key $DIR/ssh/id_ed25519, known hosts $DIR/ssh/known_hosts)"
echo "  slurm: c1 SLURM_CONF=$DIR/c1/slurm.conf (ports $slurm_base, $((slurm_base + 1))), c2 SLURM_CONF=$DIR/c2/slurm.conf (ports $((slurm_base + 2)), $((slurm_base + 3)))"
echo "  munge: $DIR/munge/munge.socket"
echo "use it:"
echo "  msched up --hosts $DIR/hosts.yaml --config $DIR/msched.yaml"
echo "stop it:"
echo "  $here/down.sh $DIR"
