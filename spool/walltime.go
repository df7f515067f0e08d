package spool

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// WalltimeForms is how a walltime may be written, for the errors that
// refuse one (the job file's walltime: and msched submit --walltime).
const WalltimeForms = "a duration like 2h30m or 90s, seconds like 5400, [D-]HH:MM:SS like 1-12:00:00, MM:SS like 90:00, or days like 2d or 1d12h"

// MaxWalltime bounds a walltime: longer than any job is let run, and far
// from time.Duration's limit (292 years), which every sum of times the
// daemons make with it must stay under.
const MaxWalltime = 100 * 365 * 24 * time.Hour

// ParseWalltime reads a walltime in any of the forms batch users write
// (WalltimeForms):
//
//   - a Go duration: 90s, 2h30m, 1.5h;
//   - a number of seconds: 5400, 1.5;
//   - Slurm's and PBS's clock forms: HH:MM:SS (1:30:00), MM:SS (90:00),
//     D-HH:MM:SS (2-00:00:00), each field after the first below 60 and
//     the hours below 24 after a day;
//   - days: 2d, and days then a Go duration: 1d12h, 1d30m.
//
// It is the one reader of a walltime: Duration.UnmarshalYAML (the job
// file) and msched submit --walltime both call it. A negative walltime
// (-5s) is returned as it is, for validate to refuse with its field; one
// over MaxWalltime, or that no form reads, is an error saying what was
// given and what is accepted.
func ParseWalltime(s string) (time.Duration, error) {
	q := Clip(s, maxQuoted)
	if s == "" {
		return 0, fmt.Errorf("empty; want %s", WalltimeForms)
	}
	over := func() (time.Duration, error) {
		return 0, fmt.Errorf("%q is out of range (at most %d days)", q, int(MaxWalltime/(24*time.Hour)))
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "xXpP_") {
		if math.IsNaN(secs) || math.IsInf(secs, 0) || math.Abs(secs) > MaxWalltime.Seconds() {
			return over()
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	if strings.Contains(s, ":") {
		d, err := parseClock(s)
		if err != nil {
			return 0, fmt.Errorf("%q: %v", q, err)
		}
		if d > MaxWalltime {
			return over()
		}
		return d, nil
	}
	var days time.Duration
	rest := s
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseUint(s[:i], 10, 32)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration: want %s", q, WalltimeForms)
		}
		if n > uint64(MaxWalltime/(24*time.Hour)) {
			return over()
		}
		days, rest = time.Duration(n)*24*time.Hour, s[i+1:]
		if rest == "" {
			return days, nil
		}
		if rest[0] == '-' || rest[0] == '+' {
			return 0, fmt.Errorf("%q is not a duration: want %s", q, WalltimeForms)
		}
	}
	d, err := time.ParseDuration(rest)
	if err != nil { // also a duration past time.Duration's range
		return 0, fmt.Errorf("%q is not a duration: want %s", q, WalltimeForms)
	}
	if d > MaxWalltime-days {
		return over()
	}
	return days + d, nil
}

// parseClock reads [D-]HH:MM:SS and MM:SS.
func parseClock(s string) (time.Duration, error) {
	days := -1
	rest := s
	if i := strings.IndexByte(s, '-'); i >= 0 && i < strings.IndexByte(s, ':') {
		n, err := strconv.Atoi(s[:i])
		if err != nil || i == 0 || n < 0 || !digitsOnly(s[:i]) {
			return 0, fmt.Errorf("want D-HH:MM:SS, the days a whole number")
		}
		if n > int(MaxWalltime/(24*time.Hour)) {
			return 0, fmt.Errorf("too many days")
		}
		days, rest = n, s[i+1:]
	}
	parts := strings.Split(rest, ":")
	switch {
	case days >= 0 && len(parts) != 3:
		return 0, fmt.Errorf("want D-HH:MM:SS, with hours, minutes and seconds after the days")
	case len(parts) != 2 && len(parts) != 3:
		return 0, fmt.Errorf("want HH:MM:SS or MM:SS")
	}
	n := make([]int64, len(parts))
	for i, p := range parts {
		if p == "" || len(p) > 9 || !digitsOnly(p) {
			return 0, fmt.Errorf("want whole numbers between the colons, like 1:30:00")
		}
		n[i], _ = strconv.ParseInt(p, 10, 64)
		if i > 0 && n[i] >= 60 {
			return 0, fmt.Errorf("%s must be below 60", []string{"", "minutes", "seconds"}[i+3-len(parts)])
		}
	}
	if unit := []time.Duration{time.Minute, time.Hour}[len(parts)-2]; n[0] > int64(MaxWalltime/unit) {
		return 0, fmt.Errorf("out of range (at most %d days)", int(MaxWalltime/(24*time.Hour)))
	}
	if days >= 0 && n[0] >= 24 {
		return 0, fmt.Errorf("hours must be below 24 after the days")
	}
	var d time.Duration
	if len(parts) == 3 {
		d = time.Duration(n[0])*time.Hour + time.Duration(n[1])*time.Minute + time.Duration(n[2])*time.Second
	} else {
		d = time.Duration(n[0])*time.Minute + time.Duration(n[1])*time.Second
	}
	if days > 0 {
		d += time.Duration(days) * 24 * time.Hour
	}
	return d, nil
}

// digitsOnly reports whether s is one or more ASCII digits.
func digitsOnly(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
