package launch

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"msched/internal/envname"
)

// SSHConfig is how msched reaches its ssh hosts, from its configuration.
// The key is msched's own (root's, unreadable by users) and must be
// authorized for the users on the remote hosts; the job then runs there as
// its user.
type SSHConfig struct {
	Binary         string   // the OpenSSH client; "" means "ssh" on the PATH
	IdentityFile   string   // msched's private key (-i); "" leaves ssh's defaults
	KnownHostsFile string   // the hosts' keys; with it, an unknown or changed key is refused
	Options        []string // further ssh arguments, after msched's (e.g. -o ConnectTimeout=10)
}

// Spec gives the SSH of a job (or of a host's sample) with these
// destinations: BatchMode (never a prompt), with a known-hosts file
// StrictHostKeyChecking and that file only, with an identity file that key
// only, then c.Options.
func (c SSHConfig) Spec(dest []SSHDest) *SSH {
	opts := []string{"-o", "BatchMode=yes"}
	if c.KnownHostsFile != "" {
		opts = append(opts, "-o", "StrictHostKeyChecking=yes",
			"-o", "UserKnownHostsFile="+sshConfigWord(c.KnownHostsFile))
	}
	if c.IdentityFile != "" {
		opts = append(opts, "-i", sshConfigWord(c.IdentityFile), "-o", "IdentitiesOnly=yes")
	}
	opts = append(opts, c.Options...)
	return &SSH{Binary: c.Binary, Options: opts, Dest: dest}
}

// sshConfigWord protects a file name as ssh reads it in an option: %
// introduces a token (%d, %u…), and whitespace separates several files
// unless quoted.
func sshConfigWord(path string) string {
	path = strings.ReplaceAll(path, "%", "%%")
	if strings.ContainsAny(path, " \t\"'\\") {
		path = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(path) + `"`
	}
	return path
}

// Command is the argv that runs remote, a command line for the login shell
// of user, on d: the ssh binary, the options, -p port, -l user, then "--"
// (so that no later word is taken for an option), the host and remote.
// user "" leaves ssh's default (d.User is not consulted: the caller
// chooses). remote "" runs no command.
func (s *SSH) Command(d SSHDest, user, remote string) []string {
	bin := s.Binary
	if bin == "" {
		bin = "ssh"
	}
	argv := append([]string{bin}, s.Options...)
	if d.Port != 0 {
		argv = append(argv, "-p", strconv.Itoa(d.Port))
	}
	if user != "" {
		argv = append(argv, "-l", user)
	}
	argv = append(argv, "--", d.Host)
	if remote != "" {
		argv = append(argv, remote)
	}
	return argv
}

// checkSSHWord refuses a host or user name that is empty, could be read as
// an option, or holds characters no such name has (Command already puts
// them where ssh cannot take them for options; this gives a clear error).
func checkSSHWord(what, w string) error {
	if w == "" || w[0] == '-' || strings.ContainsAny(w, "@ \t\r\n'\"\\`$;&|<>()") || strings.ContainsFunc(w, isControl) {
		return fmt.Errorf("ssh: invalid %s %q", what, w)
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// shQuote quotes s as one word for a POSIX shell: inside single quotes
// every character stands for itself; a single quote ends the quoted part,
// is written escaped (\') and a new quoted part begins.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// The remote side of an ssh job. The remote login shell of the user runs
//
//	exec /bin/sh -c WRAPPER msched JOBSCRIPT TOKEN DIR GRACE HOSTLINE… -- ENV… -- MODE TOKEN ARGV…
//
// every word single-quoted (shQuote), so the login shell (any POSIX shell)
// passes them to sh unchanged, and no user data is ever part of a script.
//
// The wrapper speaks to the shepherd by marker lines on its stderr, which
// ssh carries together with the job's own stderr; the shepherd takes them
// out and copies the rest to the job's stderr file. A marker is
// "\nmsched:TOKEN:EVENT\n", where TOKEN is random for each launch, so no
// output can match one by chance (the leading newline keeps a marker apart
// from a last line of the job that lacks one; the shepherd removes it with
// the marker). The events:
//
//	ready          the wrapper runs: ssh connected and logged in
//	fail MESSAGE   the job could not be started (workdir, command not found…)
//	start PID      the job runs, as the leader of its own session and group PID
//	end STATUS     the job's leader ended with this wait status (sh's $?)
//
// Without "ready", ssh's failure (exit status 255) is a failure to reach the
// host; after it, a status comes only from "end", so a job that exits 255
// is told apart from ssh failing.
//
// The shepherd keeps the wrapper's stdin, a pipe through ssh: a line TERM
// or KILL there sends that signal to the job's process group; end of file
// (the shepherd died, and with it ssh by Pdeathsig, or the connection was
// lost) makes the wrapper send SIGTERM, then SIGKILL GRACE seconds later,
// so no job runs on unsupervised. The job itself gets /dev/null as stdin.
// When the job's leader ends, the rest of its group is killed, as for a
// local job, and so is every process of the user that carries the job's
// MSCHED_HOSTFILE (a name mktemp made for this run) in its environment
// (/proc/PID/environ, read with grep -z), up to 10 rounds: what left the
// group (setsid, a daemon's double fork) with the environment the job gave
// it. Then the host file is removed. (A process that cleared or overwrote
// its environment, as setproctitle does, escapes, and so does everything on
// a host without /proc or a grep with -z: the wrapper cannot own the job's
// descendants as a local shepherd does.)
//
// Once the job runs, the wrapper's own stderr is /dev/null (dash prints
// there the death of a background job by a signal it reaps, e.g. "User
// defined signal 1"); its markers go to a copy of the channel, descriptor 5,
// which the job does not get. SIGPIPE is ignored only then, after the job
// was started with the default action: a wrapper whose connection is gone
// must still kill the job's group and remove the host file.
//
// The job's process starts as sh running JOBSCRIPT: it exports ENV (the
// entries up to "--"; positional parameters only, so no entry can change
// the script's own variables), MSCHED_HOSTFILE, checks that the command
// exists and executes it (MODE mpi: mpirun with --hostfile inserted).
//
// sh's $? gives 128+N both for a job killed by signal N and for one that
// exits with status 128+N itself; a status from 129 to 192 (signals 1–64)
// is reported as the signal, as shells do.
const sshWrapper = `j=$1 t=$2 d=$3 g=$4
shift 4
exec 5>&2
m() { printf '\nmsched:%s:%s\n' "$t" "$*" >&5; }
m ready
S=$(command -v setsid) || { m fail "setsid: not found on the PATH"; exit 0; }
f=$(mktemp "${TMPDIR:-/tmp}/msched.XXXXXX") || { m fail "mktemp: cannot create the host file"; exit 0; }
exec 4>"$f"
while [ "$1" != -- ]; do printf '%s\n' "$1" >&4; shift; done
shift
exec 4>&-
if [ -n "$d" ] && ! cd "$d" 2>/dev/null; then rm -f "$f"; m fail "workdir $d: no such directory, or no permission"; exit 0; fi
exec 3<&0
"$S" /bin/sh -c "$j" "$f" "$@" </dev/null 3<&- 5>&- &
p=$!
exec 2>/dev/null
trap '' PIPE
m start "$p"
(
	while read -r c; do
		case $c in TERM|KILL) kill -"$c" "-$p" || kill -"$c" "$p" ;; esac
	done
	kill -TERM "-$p" || kill -TERM "$p"
	sleep "$g"
	kill -KILL "-$p"
) <&3 >/dev/null 5>&- &
w=$!
exec 3<&-
wait "$p"
s=$?
kill -KILL "-$p"
i=0
while [ $i -lt 10 ]; do
	l=$(grep -lxzF -e "MSCHED_HOSTFILE=$f" /proc/[0-9]*/environ)
	[ -n "$l" ] || break
	for e in $l; do e=${e#/proc/}; kill -KILL "${e%/environ}"; done
	i=$((i+1))
	sleep 0.1 || sleep 1
done
kill "$w"
rm -f "$f"
m end "$s"
`

// sshJobScript is JOBSCRIPT above: $0 is the host file, then ENV… --
// MODE TOKEN ARGV….
const sshJobScript = `while [ "$1" != -- ]; do export "$1"; shift; done
shift
MSCHED_HOSTFILE=$0
export MSCHED_HOSTFILE
case $3 in
*/*) [ -f "$3" ] && [ -x "$3" ] || { printf '\nmsched:%s:fail %s\n' "$2" "not an executable file: $3" >&2; exit 127; } ;;
*) command -v "$3" >/dev/null || { printf '\nmsched:%s:fail %s\n' "$2" "command not found: $3" >&2; exit 127; } ;;
esac
if [ "$1" = mpi ]; then
	shift 2
	a=$1
	shift
	exec "$a" --hostfile "$0" "$@"
fi
shift 2
exec "$@"
`

// remoteJob is what the wrapper needs to start one job.
type remoteJob struct {
	token     string
	dir       string
	grace     time.Duration
	hostLines []string // the host file's lines
	env       []string // KEY=value
	mpi       bool     // argv is mpirun's: insert --hostfile
	argv      []string
}

// commandLine is the remote command: see sshWrapper.
func (r remoteJob) commandLine() (string, error) {
	words := []string{r.token, r.dir, strconv.Itoa(graceSeconds(r.grace))}
	words = append(words, r.hostLines...)
	words = append(words, "--")
	words = append(words, r.env...)
	mode := "run"
	if r.mpi {
		mode = "mpi"
	}
	words = append(words, "--", mode, r.token)
	words = append(words, r.argv...)
	var b strings.Builder
	b.WriteString("exec /bin/sh -c " + shQuote(sshWrapper) + " msched " + shQuote(sshJobScript))
	for _, w := range words {
		if strings.ContainsRune(w, 0) {
			return "", fmt.Errorf("ssh: argument %q holds a NUL byte", w)
		}
		b.WriteString(" " + shQuote(w))
	}
	return b.String(), nil
}

// graceSeconds is the kill grace in whole seconds for the remote sleep(1)
// (POSIX sleep takes no fraction), rounded up, at least 1.
func graceSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// checkEnvEntry refuses an Env entry the remote shell cannot export.
func checkEnvEntry(e string) error {
	k, _, ok := strings.Cut(e, "=")
	if !ok || !envname.Valid(k) {
		return fmt.Errorf("env entry %q: want NAME=value with a portable name (letters, digits, _)", e)
	}
	return nil
}

// newToken is the random part of a launch's markers (crypto/rand.Read
// never fails: it crashes the program instead).
func newToken() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

var errNoSSHUser = errors.New("ssh: no user to log in as (neither the destination nor the job's identity names one)")
