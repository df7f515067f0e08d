package hoststat

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Login is one USER_PROCESS entry of utmp: a user logged in on a line.
type Login struct {
	User  string
	Line  string // terminal, relative to /dev ("pts/0"), or an X display (":0")
	Host  string // remote host, if any
	Pid   int32
	Login time.Time
}

// utmpRecord is glibc's struct utmp on 64-bit Linux (x86_64, arm64, and the
// other 64-bit ports that keep 32-bit time fields for compatibility):
// 384 bytes, little-endian on the machines msched supports.
type utmpRecord struct {
	Type    int16
	_       [2]byte
	Pid     int32
	Line    [32]byte
	ID      [4]byte
	User    [32]byte
	Host    [256]byte
	Exit    [2]int16
	Session int32
	Sec     int32
	Usec    int32
	AddrV6  [4]int32
	_       [20]byte
}

// utmpSize is binary.Size(utmpRecord{}), checked by a test against the C
// layout's 384 bytes.
const utmpSize = 384

const userProcess = 7 // USER_PROCESS: a normal login

// ParseUtmp reads a utmp file and returns its USER_PROCESS entries. A
// trailing partial record is an error: utmp is written a record at a time.
func ParseUtmp(r io.Reader) ([]Login, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if len(data)%utmpSize != 0 {
		return nil, fmt.Errorf("utmp: size %d is not a multiple of %d", len(data), utmpSize)
	}
	var logins []Login
	for off := 0; off < len(data); off += utmpSize {
		var u utmpRecord
		if err := binary.Read(bytes.NewReader(data[off:off+utmpSize]), binary.LittleEndian, &u); err != nil {
			return nil, fmt.Errorf("utmp: record %d: %w", off/utmpSize, err)
		}
		if u.Type != userProcess {
			continue
		}
		logins = append(logins, Login{
			User: cString(u.User[:]), Line: cString(u.Line[:]), Host: cString(u.Host[:]),
			Pid: u.Pid, Login: time.Unix(int64(uint32(u.Sec)), int64(u.Usec)*1000),
		})
	}
	return logins, nil
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// UserIdle returns the seconds since the most recent input on any of the
// logins' terminals, as w(1) computes it: a terminal's access time is
// updated whenever its user types. Lines that are not terminals under dev
// (X displays such as ":0") or cannot be stat'ed are skipped; with no
// terminal left, the result is NoUser.
func UserIdle(logins []Login, dev string, now time.Time) float64 {
	idle := math.Inf(1)
	for _, l := range logins {
		if l.Line == "" || strings.HasPrefix(l.Line, ":") || strings.Contains(l.Line, "..") {
			continue
		}
		fi, err := os.Stat(filepath.Join(dev, l.Line))
		if err != nil {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			continue
		}
		atime := time.Unix(st.Atim.Sec, st.Atim.Nsec)
		idle = math.Min(idle, math.Max(0, now.Sub(atime).Seconds()))
	}
	if math.IsInf(idle, 1) {
		return NoUser
	}
	return idle
}
