package spool

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"msched/atomicfile"
)

// Heartbeats. Each daemon, while its loop runs, rewrites
// db/heartbeat.<daemon>.json every HeartbeatEvery (and at each scan, at most
// once a second), and marks it stopped when it stops cleanly. Health reads
// them: a daemon whose beat is older than StaleAfter beats is stale (hung,
// or its host is down), one whose process is gone is down. A daemon that is
// killed leaves its last beat, which then goes stale, or down at once when
// it ran on this host.

// HeartbeatEvery is how often a daemon beats while it waits.
const HeartbeatEvery = 5 * time.Second

// StaleAfter is how many beats may be missed before a daemon is stale.
const StaleAfter = 3

// Beat is one heartbeat file.
type Beat struct {
	Daemon    string    `json:"daemon"`
	PID       int       `json:"pid"`
	Host      string    `json:"host"`
	StartedAt time.Time `json:"started_at"`
	At        time.Time `json:"at"`
	EveryS    float64   `json:"every_s"`
	Stopped   bool      `json:"stopped,omitempty"`
}

// Heart writes one daemon's heartbeats.
type Heart struct {
	dir, stage string
	mu         sync.Mutex
	b          Beat
	last       time.Time
}

func heartbeatFile(daemon string) string { return "heartbeat." + daemon + ".json" }

// Heart returns the heart of daemon d in this process, its first beat not
// yet written.
func (s *Spool) Heart(d Daemon) *Heart {
	host, _ := os.Hostname()
	return &Heart{dir: s.Path(DirDB), stage: s.stage,
		b: Beat{Daemon: string(d), PID: os.Getpid(), Host: host, StartedAt: time.Now().UTC(), EveryS: HeartbeatEvery.Seconds()}}
}

// Beat writes a beat unless one was written less than a second ago. The
// file is not fsynced: a beat that a crash loses is no loss.
func (h *Heart) Beat() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	if now.Sub(h.last) < time.Second {
		return nil
	}
	return h.write(now, false)
}

// Stop writes a last beat that says the daemon stopped cleanly.
func (h *Heart) Stop() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.write(time.Now(), true)
}

func (h *Heart) write(now time.Time, stopped bool) error {
	h.b.At, h.b.Stopped = now.UTC(), stopped
	data, err := json.Marshal(h.b)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteNoDirSync(h.stage, h.dir, heartbeatFile(h.b.Daemon), data); err != nil {
		return fmt.Errorf("spool: heartbeat: %w", err)
	}
	h.last = now
	return nil
}

// Daemon health states.
const (
	HealthUp      = "up"
	HealthStale   = "stale"   // no beat for StaleAfter beats: hung, or on a host that is down
	HealthDown    = "down"    // its process is gone (it ran on this host) without a clean stop
	HealthStopped = "stopped" // it stopped cleanly
	HealthNever   = "never"   // no heartbeat: never started on this spool
)

// Health is what the heartbeats say of one daemon.
type Health struct {
	Daemon string
	State  string
	Beat   *Beat         // nil when State is HealthNever
	Age    time.Duration // since the last beat
}

// Health reads the heartbeats of the five daemons, as of now.
func (s *Spool) Health(now time.Time) ([]Health, error) {
	host, _ := os.Hostname()
	out := make([]Health, 0, len(Daemons))
	for _, d := range Daemons {
		h := Health{Daemon: string(d), State: HealthNever}
		b, err := readBeat(filepath.Join(s.Path(DirDB), heartbeatFile(string(d))))
		if errors.Is(err, os.ErrNotExist) {
			out = append(out, h)
			continue
		}
		if err != nil {
			return nil, err
		}
		h.Beat, h.Age = b, now.Sub(b.At)
		every := time.Duration(b.EveryS * float64(time.Second))
		if every <= 0 {
			every = HeartbeatEvery
		}
		switch {
		case b.Stopped:
			h.State = HealthStopped
		case b.Host == host && !processAlive(b.PID):
			h.State = HealthDown
		case h.Age > StaleAfter*every:
			h.State = HealthStale
		default:
			h.State = HealthUp
		}
		out = append(out, h)
	}
	return out, nil
}

// readBeat reads a heartbeat file: the daemons' own, small, in db/ (which
// only they write), so it is read whole with a bound.
func readBeat(path string) (*Beat, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, err := f.Read(buf)
	if err != nil {
		return nil, fmt.Errorf("spool: heartbeat %s: %w", filepath.Base(path), err)
	}
	var b Beat
	if err := json.Unmarshal(buf[:n], &b); err != nil {
		return nil, fmt.Errorf("spool: heartbeat %s: %w", filepath.Base(path), err)
	}
	return &b, nil
}

// processAlive reports whether process pid exists (EPERM: it does, as
// another user's).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
