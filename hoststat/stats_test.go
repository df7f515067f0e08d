package hoststat

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseProc(t *testing.T) {
	up, err := ParseUptime(strings.NewReader("275.59 521.88\n"))
	if err != nil || up != 275.59 {
		t.Errorf("uptime %v %v", up, err)
	}
	l, err := ParseLoadavg(strings.NewReader("0.52 0.17 1.03 2/90 4626\n"))
	if err != nil || l != [3]float64{0.52, 0.17, 1.03} {
		t.Errorf("loadavg %v %v", l, err)
	}
	for _, bad := range []string{"", "1.0", "x y z", "-1 0 0 1/2 3"} {
		if _, err := ParseLoadavg(strings.NewReader(bad)); err == nil {
			t.Errorf("loadavg %q accepted", bad)
		}
	}
	for _, bad := range []string{"", "x 1", "5"} {
		if _, err := ParseUptime(strings.NewReader(bad)); err == nil {
			t.Errorf("uptime %q accepted", bad)
		}
	}
}

func TestUtmp_RecordSize(t *testing.T) {
	if n := binary.Size(utmpRecord{}); n != utmpSize {
		t.Fatalf("utmpRecord is %d bytes, glibc's struct utmp is %d", n, utmpSize)
	}
}

// rawUtmp builds one utmp record byte by byte at the offsets of glibc's
// struct utmp, independently of utmpRecord, so a layout error shows.
func rawUtmp(typ int16, pid int32, line, user, host string, sec int32) []byte {
	b := make([]byte, utmpSize)
	binary.LittleEndian.PutUint16(b[0:], uint16(typ))
	binary.LittleEndian.PutUint32(b[4:], uint32(pid))
	copy(b[8:40], line)
	copy(b[44:76], user)
	copy(b[76:332], host)
	binary.LittleEndian.PutUint32(b[340:], uint32(sec))
	return b
}

func TestParseUtmp(t *testing.T) {
	var buf bytes.Buffer
	buf.Write(rawUtmp(2, 0, "~", "reboot", "6.1.0", 1700000000))                    // BOOT_TIME
	buf.Write(rawUtmp(6, 812, "tty1", "LOGIN", "", 1700000001))                     // LOGIN_PROCESS
	buf.Write(rawUtmp(7, 4242, "pts/3", "alice", "client.example.org", 1700000100)) // USER_PROCESS
	buf.Write(rawUtmp(8, 4243, "pts/4", "", "", 1700000200))                        // DEAD_PROCESS
	buf.Write(rawUtmp(7, 5000, ":0", strings.Repeat("b", 32), "", 1700000300))      // full-width name
	logins, err := ParseUtmp(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := []Login{
		{User: "alice", Line: "pts/3", Host: "client.example.org", Pid: 4242, Login: time.Unix(1700000100, 0)},
		{User: strings.Repeat("b", 32), Line: ":0", Pid: 5000, Login: time.Unix(1700000300, 0)},
	}
	if len(logins) != len(want) {
		t.Fatalf("got %d logins %+v, want %d", len(logins), logins, len(want))
	}
	for i := range want {
		if !logins[i].Login.Equal(want[i].Login) {
			t.Errorf("login %d time %v, want %v", i, logins[i].Login, want[i].Login)
		}
		logins[i].Login, want[i].Login = time.Time{}, time.Time{}
		if logins[i] != want[i] {
			t.Errorf("login %d: got %+v, want %+v", i, logins[i], want[i])
		}
	}
	if _, err := ParseUtmp(bytes.NewReader(make([]byte, utmpSize+10))); err == nil {
		t.Error("partial record accepted")
	}
}

// fakeDev makes terminals under a temporary /dev with the given access
// times.
func fakeDev(t *testing.T, atimes map[string]time.Time) string {
	t.Helper()
	dev := t.TempDir()
	for line, at := range atimes {
		p := filepath.Join(dev, line)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	return dev
}

func TestUserIdle(t *testing.T) {
	now := time.Unix(1700001000, 0)
	dev := fakeDev(t, map[string]time.Time{
		"pts/0": now.Add(-90 * time.Second),
		"pts/1": now.Add(-30 * time.Minute),
	})
	logins := []Login{{Line: "pts/1"}, {Line: "pts/0"}, {Line: ":0"}, {Line: "pts/9"}}
	if got := UserIdle(logins, dev, now); got != 90 {
		t.Errorf("idle %v, want 90 (the most recent input)", got)
	}
	if got := UserIdle(logins[2:], dev, now); got != NoUser {
		t.Errorf("idle %v with no terminal, want NoUser", got)
	}
	if got := UserIdle(nil, dev, now); got != NoUser {
		t.Errorf("idle %v with nobody, want NoUser", got)
	}
}

func TestSource_Stats(t *testing.T) {
	now := time.Unix(1700001000, 0)
	dev := fakeDev(t, map[string]time.Time{"pts/3": now.Add(-42 * time.Second)})
	utmp := filepath.Join(t.TempDir(), "utmp")
	os.WriteFile(utmp, rawUtmp(7, 1, "pts/3", "alice", "", 1700000000), 0o644)
	src := Source{Proc: "testdata/proc", Utmp: utmp, Dev: dev, NCPU: 4, Now: func() time.Time { return now }}
	s, err := src.Stats()
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{Time: now, Uptime: 275.59, Load1: 0.52, Load5: 0.17, Load15: 1.03, Idle: 42, NCPU: 4}
	if s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
	if d, ok := s.UserIdle(); !ok || d != 42*time.Second {
		t.Errorf("UserIdle %v %v", d, ok)
	}

	src.Utmp = filepath.Join(t.TempDir(), "missing")
	if s, err = src.Stats(); err != nil || s.Idle != NoUser {
		t.Errorf("missing utmp: %+v %v, want NoUser", s, err)
	}
	if _, ok := s.UserIdle(); ok {
		t.Error("UserIdle ok with no user")
	}
	src.Proc = t.TempDir()
	os.WriteFile(filepath.Join(src.Proc, "uptime"), []byte("garbage\n"), 0o644)
	if _, err := src.Stats(); err == nil || !strings.Contains(err.Error(), "uptime") {
		t.Errorf("bad uptime: %v", err)
	}
}

func TestLocal(t *testing.T) {
	s, err := Local()
	if err != nil {
		t.Fatal(err)
	}
	if s.Uptime <= 0 || s.NCPU <= 0 || s.Load1 < 0 || (s.Idle < 0 && s.Idle != NoUser) {
		t.Errorf("implausible %+v", s)
	}
}
