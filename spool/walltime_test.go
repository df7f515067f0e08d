package spool

import (
	"strings"
	"testing"
	"time"
)

// Every form a walltime may take, each read by the job file's walltime:
// (Duration) and msched submit --walltime (ParseWalltime) alike.
func TestWalltime_Forms(t *testing.T) {
	const day = 24 * time.Hour
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"90s", 90 * time.Second}, {"2h30m", 150 * time.Minute}, {"1.5h", 90 * time.Minute}, // Go durations
		{"5400", 5400 * time.Second}, {"1.5", 1500 * time.Millisecond}, // seconds
		{"1:30:00", 90 * time.Minute}, {"01:02:03", time.Hour + 2*time.Minute + 3*time.Second}, {"100:00:00", 100 * time.Hour}, // HH:MM:SS
		{"90:00", 90 * time.Minute}, {"0:30", 30 * time.Second}, // MM:SS
		{"2-00:00:00", 2 * day}, {"1-12:30:05", day + 12*time.Hour + 30*time.Minute + 5*time.Second}, // D-HH:MM:SS
		{"2d", 2 * day}, {"1d12h", day + 12*time.Hour}, {"1d30m", day + 30*time.Minute}, {"0d90s", 90 * time.Second}, // days
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseWalltime(tc.in)
			if err != nil || got != tc.want {
				t.Errorf("ParseWalltime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			// In a job file, plain and quoted.
			for _, v := range []string{tc.in, `"` + tc.in + `"`} {
				j, err := ParseSubmission("job.yaml", []byte("command: [a]\nwalltime: "+v+"\n"))
				if err != nil {
					t.Fatalf("walltime: %s: %v", v, err)
				}
				if time.Duration(j.Walltime) != tc.want {
					t.Errorf("walltime: %s = %v, want %v", v, time.Duration(j.Walltime), tc.want)
				}
				// What a daemon writes reads back the same.
				back, err := Parse("job.yaml", mustMarshal(t, j))
				if err != nil || back.Walltime != j.Walltime {
					t.Errorf("walltime: %s written and read back: %v, %v", v, back, err)
				}
			}
		})
	}
}

func mustMarshal(t *testing.T, j *Job) []byte {
	t.Helper()
	b, err := j.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A walltime no form reads is refused with the field, its line and what
// was given; so is one out of range.
func TestWalltime_Errors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"soon", `"soon" is not a duration: want a duration like 2h30m`},
		{"2x", `"2x" is not a duration`},
		{"1.5d", `"1.5d" is not a duration`},
		{"d", `"d" is not a duration`},
		{"2d-1h", `"2d-1h" is not a duration`},
		{"1:60:00", `"1:60:00": minutes must be below 60`},
		{"1:00:60", `"1:00:60": seconds must be below 60`},
		{"90:60", `"90:60": seconds must be below 60`},
		{"1:2:3:4", `"1:2:3:4": want HH:MM:SS or MM:SS`},
		{"1:", `"1:": want whole numbers between the colons`},
		{"1:-5", `"1:-5": want whole numbers between the colons`},
		{"2-12:00", `"2-12:00": want D-HH:MM:SS`},
		{"2-24:00:00", `"2-24:00:00": hours must be below 24 after the days`},
		{"x-01:00:00", `"x-01:00:00": want D-HH:MM:SS`},
		{"999999999:00:00", `"999999999:00:00": out of range`},
		{"40000d", `"40000d" is out of range`},
		{"36500d1h", `"36500d1h" is out of range`},
		{"1e300", `"1e300" is out of range`},
		{"NaN", `"NaN" is out of range`},
		{"99999999999h", `"99999999999h" is not a duration`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if d, err := ParseWalltime(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseWalltime(%q) = %v, %v; want an error saying %s", tc.in, d, err, tc.want)
			}
			_, err := ParseSubmission("job.yaml", []byte("name: x\ncommand: [a]\nwalltime: \""+tc.in+"\"\n"))
			if err == nil || !strings.Contains(err.Error(), "job.yaml:3: walltime: "+tc.want) {
				t.Errorf("walltime: %q in a job file: %v\nwant job.yaml:3: walltime: %s", tc.in, err, tc.want)
			}
		})
	}
	_, err := ParseSubmission("job.yaml", []byte("command: [a]\nwalltime: [2h]\n"))
	if err == nil || !strings.Contains(err.Error(), "job.yaml:2: walltime: want a duration like 2h30m") {
		t.Errorf("walltime: a list: %v", err)
	}
	_, err = ParseSubmission("job.yaml", []byte("command: [a]\nwalltime: -1:00:00\n"))
	if err == nil || !strings.Contains(err.Error(), "job.yaml:2: walltime:") {
		t.Errorf("walltime: -1:00:00: %v", err)
	}
}
