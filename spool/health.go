package spool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"msched/atomicfile"
)

// Heartbeats. Each daemon, while it runs, rewrites
// db/heartbeat.<daemon>.json every HeartbeatEvery, unless it has been stuck
// in one scan for StaleAfter beats, and marks it stopped when it stops
// cleanly. Health reads
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

// Heart writes one daemon's heartbeats. Run beats every HeartbeatEvery
// while the daemon runs; the daemon's loop says when it works on a scan
// (Busy) and when it waits (Idle), and a scan that has run for StaleAfter
// beats stops the beats, so a daemon hung in a scan goes stale. Its
// methods may be called on a nil Heart (no heartbeats).
type Heart struct {
	dir, stage string
	mu         sync.Mutex
	b          Beat
	last       time.Time
	busySince  atomic.Int64 // unix ns a scan began; 0: waiting
	// started is closed by the daemon's first Busy or Idle: it holds its
	// lock and has recovered. Until then nothing is written, so that a
	// second daemon of the same kind, which fails to take the lock, never
	// overwrites the heartbeat of the one that runs.
	started   chan struct{}
	startOnce sync.Once
}

func (h *Heart) start() { h.startOnce.Do(func() { close(h.started) }) }

// Busy says the daemon began a scan (and, the first time, that it runs:
// it holds its lock and has recovered).
func (h *Heart) Busy() {
	if h != nil {
		h.busySince.Store(time.Now().UnixNano())
		h.start()
	}
}

// Idle says the daemon ended a scan and waits.
func (h *Heart) Idle() {
	if h != nil {
		h.busySince.Store(0)
		h.start()
	}
}

// Run beats until ctx is done (the daemon's Run returned: Stop then says
// whether it stopped cleanly). Errors are passed to fail (a beat that
// cannot be written is the operator's business, not the daemon's).
func (h *Heart) Run(ctx context.Context, fail func(error)) {
	if h == nil {
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-h.started:
	}
	t := time.NewTicker(HeartbeatEvery)
	defer t.Stop()
	for {
		if since := h.busySince.Load(); since == 0 || time.Since(time.Unix(0, since)) < StaleAfter*HeartbeatEvery {
			if err := h.Beat(); err != nil {
				fail(err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func heartbeatFile(daemon string) string { return "heartbeat." + daemon + ".json" }

// Heart returns the heart of daemon d in this process, its first beat not
// yet written.
func (s *Spool) Heart(d Daemon) *Heart {
	host, _ := os.Hostname()
	return &Heart{dir: s.Path(DirDB), stage: s.stage,
		b:       Beat{Daemon: string(d), PID: os.Getpid(), Host: host, StartedAt: time.Now().UTC(), EveryS: HeartbeatEvery.Seconds()},
		started: make(chan struct{})}
}

// Beat writes a beat unless one was written less than a second ago. The
// file is not fsynced: a beat that a crash loses is no loss.
func (h *Heart) Beat() error {
	if h == nil {
		return nil
	}
	h.start()
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	if now.Sub(h.last) < time.Second {
		return nil
	}
	return h.write(now, false)
}

// Stop writes a last beat that says the daemon stopped cleanly, if it had
// started (see Busy).
func (h *Heart) Stop() error {
	if h == nil {
		return nil
	}
	select {
	case <-h.started:
	default:
		return nil
	}
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
	if err := atomicfile.WriteNoSync(h.stage, h.dir, heartbeatFile(h.b.Daemon), data); err != nil {
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
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, errDamagedBeat) {
			// A beat is not fsynced (Heart.Beat): after a crash of the
			// machine it may be empty or partial, which says no more than
			// no beat. The daemon's first beat replaces it.
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

// errDamagedBeat is a heartbeat file that does not parse.
var errDamagedBeat = errors.New("damaged")

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
	if err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		return nil, fmt.Errorf("spool: heartbeat %s: %w", filepath.Base(path), err)
	}
	var b Beat
	if err := json.Unmarshal(buf[:n], &b); err != nil {
		return nil, fmt.Errorf("spool: heartbeat %s: %w: %v", filepath.Base(path), errDamagedBeat, err)
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
