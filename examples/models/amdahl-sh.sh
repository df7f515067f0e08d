#!/bin/sh
# amdahl-sh.sh: a performance model written as a program, in POSIX sh and
# awk, that speaks msched's session protocol (see models/protocol.go) on its
# stdin and stdout, as PACE's models did for the Warwick MS system. msched
# keeps it running and drives it (the "external" kind: amdahl-sh.yaml). Try
# it by hand:
#
#	$ ./amdahl-sh.sh                      or   msched model serve amdahl-sh
#	list
#	C_com 0.25
#	T1 8
#	f 0
#	.
#	set f 0.1
#	ok
#	hrduse SunUltra1:hardware/CPU_LOAD=0 SunUltra1:hardware/CPU_LOAD=1
#	ok
#	eval
#	9.3
#	quit
#
# The model is Amdahl's law with a communication term, on i hosts:
#
#	t = T1·(f + (1−f)/i) / s_min + C_com·i
#
# T1 is the run time on one idle speed-1 host, f its serial fraction, C_com
# the communication cost per host (all seconds but f); s_min is the slowest
# effective host speed, speed(arch)/(1 + load). With f = 0 and T1 = C_cpu it
# is the MS paper's Eq. 2 (msched's warwick kind). Like a PACE model it
# carries its own hardware models: the speeds below are those of msched's
# models/hardware.yaml.
#
# If AMDAHL_SH_TRACE names a file, every eval appends one line to it (a
# debugging aid; msched's tests count evaluations with it).
#
# sh reads the requests (its read builtin never reads past a newline, so the
# program is interactive on a pipe); awk checks numbers and does the
# arithmetic, one short run per request that needs it.

set -f # request words are never globbed

calc='
function isnum(s) { return s ~ /^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$/ }

# smin sets i to the number of hosts and returns the slowest effective speed,
# or prints an error and returns -1.
function smin(   n, k, w, a, l, c, s, m) {
	n = split(hosts, w, " ")
	if (n == 0) { print "error: no hosts"; return -1 }
	for (k = 1; k <= n; k++) {
		a = w[k]; l = 0
		if ((c = index(a, ":")) > 0) {
			l = substr(a, c + 1); a = substr(a, 1, c - 1)
			sub(/^hardware\/CPU_LOAD=/, "", l)
			if (!isnum(l) || l + 0 < 0) { print "error: host " w[k] ": load must be a number >= 0"; return -1 }
		}
		if (!(a in speed)) { print "error: unknown architecture \"" a "\""; return -1 }
		s = speed[a] / (1 + l)
		if (k == 1 || s < m) m = s
	}
	i = n
	return m
}

BEGIN {
	speed["generic"] = 1;     speed["SunSPARC10"] = 0.35; speed["SunUltra1"] = 1
	speed["SunUltra5"] = 1.6; speed["SunUltra10"] = 2;    speed["x86_64"] = 25
	speed["aarch64"] = 20

	if (op == "set") {
		if (!isnum(value)) { print "error: set " name ": \"" value "\" is not a number"; exit }
		v = value + 0
		if (name == "T1" && !(v > 0)) { print "error: T1 = " value ", want > 0"; exit }
		if (name == "f" && (v < 0 || v > 1)) { print "error: f = " value ", want 0 <= f <= 1"; exit }
		if (name == "C_com" && v < 0) { print "error: C_com = " value ", want >= 0"; exit }
		print "ok"
	} else if (op == "hrduse") {
		if (smin() >= 0) print "ok"
	} else if (op == "eval") {
		s = smin()
		if (s >= 0) printf "%.15g\n", T1 * (f + (1 - f) / i) / s + C_com * i
	}
}'

T1=8 f=0 C_com=0.25 hosts=

while IFS= read -r line || [ -n "$line" ]; do
	set -- $line
	[ $# -eq 0 ] && continue
	req=$1
	shift
	case $req in
	list)
		if [ $# -ne 0 ]; then echo "error: usage: list"; continue; fi
		printf 'C_com %s\nT1 %s\nf %s\n.\n' "$C_com" "$T1" "$f"
		;;
	set)
		if [ $# -ne 2 ]; then echo "error: usage: set NAME VALUE"; continue; fi
		case $1 in
		T1 | f | C_com) ;;
		*) echo "error: unknown parameter \"$1\" (parameters: C_com T1 f)"; continue ;;
		esac
		out=$(awk -v op=set -v name="$1" -v value="$2" "$calc")
		if [ "$out" != ok ]; then echo "$out"; continue; fi
		case $1 in
		T1) T1=$2 ;;
		f) f=$2 ;;
		C_com) C_com=$2 ;;
		esac
		echo ok
		;;
	hrduse)
		out=$(awk -v op=hrduse -v hosts="$*" "$calc")
		if [ "$out" = ok ]; then hosts=$*; fi
		echo "$out"
		;;
	eval)
		if [ $# -ne 0 ]; then echo "error: usage: eval"; continue; fi
		if [ -z "$hosts" ]; then echo "error: no hosts: send hrduse first"; continue; fi
		if [ -n "${AMDAHL_SH_TRACE:-}" ]; then
			echo "eval T1=$T1 f=$f C_com=$C_com $hosts" >>"$AMDAHL_SH_TRACE"
		fi
		awk -v op=eval -v T1="$T1" -v f="$f" -v C_com="$C_com" -v hosts="$hosts" "$calc"
		;;
	quit)
		exit 0
		;;
	*)
		echo "error: unknown request \"$req\" (requests: list, set, hrduse, eval, quit)"
		;;
	esac
done
