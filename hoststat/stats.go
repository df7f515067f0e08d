package hoststat

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// NoUser is the Idle value of a host where no user is logged in on a
// terminal: the idle time is then infinite, which JSON cannot carry.
const NoUser = -1

// Stats is one sample of a host, what the stats daemon records every few
// minutes and what the scheduler and the web page read.
type Stats struct {
	Time   time.Time `json:"time"`     // when the sample was taken
	Uptime float64   `json:"uptime_s"` // seconds since boot
	Load1  float64   `json:"load1"`
	Load5  float64   `json:"load5"`
	Load15 float64   `json:"load15"`
	// Idle is the time in seconds since the most recent input of any
	// logged-in user (the least idle terminal), or NoUser (-1) when no user
	// is logged in on a terminal. Use UserIdle rather than comparing.
	Idle float64 `json:"idle_s"`
	NCPU int     `json:"ncpu"`
}

// UserIdle returns the user idle time; ok is false when nobody is logged in
// (the host is idle forever, as far as users are concerned).
func (s Stats) UserIdle() (idle time.Duration, ok bool) {
	if s.Idle < 0 {
		return 0, false
	}
	return time.Duration(s.Idle * float64(time.Second)), true
}

// Source says where Stats come from. The zero value reads this machine;
// tests point it at fixtures.
type Source struct {
	Proc string           // "" = /proc
	Utmp string           // "" = /var/run/utmp; a missing file means no users
	Dev  string           // "" = /dev, where utmp's terminal lines live
	NCPU int              // 0 = runtime.NumCPU()
	Now  func() time.Time // nil = time.Now
}

// Local samples this machine.
func Local() (Stats, error) { return Source{}.Stats() }

// Stats takes one sample.
func (src Source) Stats() (Stats, error) {
	proc, utmp, dev := or(src.Proc, "/proc"), or(src.Utmp, "/var/run/utmp"), or(src.Dev, "/dev")
	now := time.Now
	if src.Now != nil {
		now = src.Now
	}
	s := Stats{Time: now(), NCPU: src.NCPU}
	if s.NCPU <= 0 {
		// The CPUs this process may use, which is what msched can schedule
		// on; it respects affinity and container limits.
		s.NCPU = runtime.NumCPU()
	}
	var err error
	if s.Uptime, err = readWith(filepath.Join(proc, "uptime"), ParseUptime); err != nil {
		return s, err
	}
	load, err := readWith(filepath.Join(proc, "loadavg"), ParseLoadavg)
	if err != nil {
		return s, err
	}
	s.Load1, s.Load5, s.Load15 = load[0], load[1], load[2]
	logins, err := readWith(utmp, ParseUtmp)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return s, err
	}
	s.Idle = UserIdle(logins, dev, s.Time)
	return s, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// readWith opens path and parses it with parse, naming the file in errors.
func readWith[T any](path string, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	f, err := os.Open(path)
	if err != nil {
		return zero, &pathError{err}
	}
	defer f.Close()
	v, err := parse(f)
	if err != nil {
		return zero, fmt.Errorf("hoststat: %s: %w", path, err)
	}
	return v, nil
}

// pathError prefixes an *os.PathError while keeping it inspectable.
type pathError struct{ err error }

func (e *pathError) Error() string { return "hoststat: " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// ParseUptime reads /proc/uptime ("seconds-up seconds-idle") and returns
// the seconds since boot.
func ParseUptime(r io.Reader) (float64, error) {
	f, err := firstLineFields(r, 2)
	if err != nil {
		return 0, err
	}
	up, err := strconv.ParseFloat(f[0], 64)
	if err != nil || up < 0 {
		return 0, fmt.Errorf("uptime %q", f[0])
	}
	return up, nil
}

// ParseLoadavg reads /proc/loadavg ("0.02 0.07 0.03 1/90 4626") and returns
// the 1, 5 and 15 minute load averages.
func ParseLoadavg(r io.Reader) ([3]float64, error) {
	var l [3]float64
	f, err := firstLineFields(r, 3)
	if err != nil {
		return l, err
	}
	for i := range l {
		if l[i], err = strconv.ParseFloat(f[i], 64); err != nil || l[i] < 0 {
			return l, fmt.Errorf("load average %q", f[i])
		}
	}
	return l, nil
}

func firstLineFields(r io.Reader, min int) ([]string, error) {
	sc := bufio.NewScanner(r)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("empty")
	}
	f := strings.Fields(sc.Text())
	if len(f) < min {
		return nil, fmt.Errorf("want %d fields, got %q", min, sc.Text())
	}
	return f, nil
}
