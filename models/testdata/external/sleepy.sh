#!/bin/sh
# sleepy.sh: a test model program speaking the session protocol, whose eval
# misbehaves on demand. Parameters:
#   s    seconds to sleep (in a child process, sleep(1)) before answering eval;
#        a large s is a hung model; -1 waits instead for the file named by
#        $SLEEPY_GATE to exist (checking every 50 ms, 600 times at most)
#   tag  the answer of eval; it has no value until set ("-" in list), and eval
#        without it is an error
# If $SLEEPY_CRASH names an existing file, the next eval removes it and the
# program exits with status 3 without answering: a model that crashes once.
set -f
s=0 tag=
while IFS= read -r line || [ -n "$line" ]; do
	set -- $line
	case ${1:-} in
	"") ;;
	list)
		printf 's %s\ntag %s\n.\n' "$s" "${tag:--}"
		;;
	set)
		case $2 in
		s) s=$3; echo ok ;;
		tag) tag=$3; echo ok ;;
		*) echo "error: unknown parameter \"$2\"" ;;
		esac
		;;
	hrduse)
		echo ok
		;;
	eval)
		if [ -n "${SLEEPY_CRASH:-}" ] && [ -e "$SLEEPY_CRASH" ]; then
			rm -f "$SLEEPY_CRASH"
			echo "sleepy: crashing as asked" >&2
			exit 3
		fi
		if [ -z "$tag" ]; then echo "error: tag has no value"; continue; fi
		if [ "$s" = -1 ]; then
			i=0
			while [ ! -e "${SLEEPY_GATE:-}" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
		else
			sleep "$s"
		fi
		echo "$tag"
		;;
	quit)
		exit 0
		;;
	*)
		echo "error: unknown request \"$1\""
		;;
	esac
done
