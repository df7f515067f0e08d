package hoststat

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// RemoteCommand is what the stats daemon runs on an ssh host to sample it,
// as MS did with rup and finger: the uptime and load averages from /proc,
// the CPUs the host has, and who is logged in with how long each has been
// idle (who -u, POSIX). It is one string because ssh passes the remote
// command to the login user's shell, whatever that shell is: env and sh -c
// make the rest POSIX sh in the C locale. The first line printed is
// remoteMarker, so that anything a login script prints before it is
// passed over. ParseRemote reads the output.
const RemoteCommand = `env LC_ALL=C sh -c 'echo ` + remoteMarker + `; cat /proc/uptime /proc/loadavg && { nproc 2>/dev/null || getconf _NPROCESSORS_ONLN; } && who -u'`

const remoteMarker = "msched-stats-1"

// ParseRemote reads the output of RemoteCommand: after the marker line,
// /proc/uptime, /proc/loadavg, the CPU count and who -u's lines. The
// sample's Time is left for the caller, who knows when it was taken.
func ParseRemote(r io.Reader) (Stats, error) {
	var s Stats
	sc := bufio.NewScanner(r)
	found := false
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == remoteMarker {
			found = true
			break
		}
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	if !found {
		return s, fmt.Errorf("no %q line: not the stats command's output", remoteMarker)
	}
	line := func(what string) (string, error) {
		if !sc.Scan() {
			if err := sc.Err(); err != nil {
				return "", err
			}
			return "", fmt.Errorf("%s: missing", what)
		}
		return sc.Text(), nil
	}
	up, err := line("uptime")
	if err == nil {
		s.Uptime, err = ParseUptime(strings.NewReader(up))
	}
	if err != nil {
		return s, fmt.Errorf("remote %w", err)
	}
	la, err := line("loadavg")
	if err != nil {
		return s, fmt.Errorf("remote %w", err)
	}
	load, err := ParseLoadavg(strings.NewReader(la))
	if err != nil {
		return s, fmt.Errorf("remote loadavg: %w", err)
	}
	s.Load1, s.Load5, s.Load15 = load[0], load[1], load[2]
	n, err := line("CPU count")
	if err != nil {
		return s, fmt.Errorf("remote %w", err)
	}
	if s.NCPU, err = strconv.Atoi(strings.TrimSpace(n)); err != nil || s.NCPU < 1 {
		return s, fmt.Errorf("remote CPU count %q", n)
	}
	var rest strings.Builder
	for sc.Scan() {
		rest.WriteString(sc.Text())
		rest.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	s.Idle = ParseWhoIdle(strings.NewReader(rest.String()))
	return s, nil
}

// whoClock is the login time's clock in a who line ("01:02"), after which
// who -u prints the idle time.
var whoClock = regexp.MustCompile(`^\d{1,2}:\d\d$`)

// ParseWhoIdle reads who -u's lines and returns the seconds since the most
// recent input of any logged-in user (the least idle terminal), or NoUser
// when no line gives an idle time. who -u prints NAME LINE, the login time
// (two or three fields, by locale, ending in HH:MM), then the idle time:
// "." (input in the last minute: 0 here), "HH:MM", or "old" (more than a
// day: a day here). A "?" (no terminal, an X display) or a line of another
// shape is passed over, as UserIdle passes over such logins locally.
func ParseWhoIdle(r io.Reader) float64 {
	idle := -1.0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		k := 2
		for k < len(f) && !whoClock.MatchString(f[k]) {
			k++
		}
		if k+1 >= len(f) {
			continue
		}
		var sec float64
		switch v := f[k+1]; {
		case v == ".":
			sec = 0
		case v == "old":
			sec = 24 * 3600
		case whoClock.MatchString(v):
			h, m, _ := strings.Cut(v, ":")
			hh, _ := strconv.Atoi(h)
			mm, _ := strconv.Atoi(m)
			sec = float64(hh*3600 + mm*60)
		default:
			continue
		}
		if idle < 0 || sec < idle {
			idle = sec
		}
	}
	if idle < 0 {
		return NoUser
	}
	return idle
}
