package web

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"msched/spool"
)

// The page says when a daemon is not up: a dead or hung sched must not
// leave a page that looks normal while jobs never move.
func TestDaemons_PageAndAPISayWhichAreNotUp(t *testing.T) {
	b := fixture{Jobs: 20, Hosts: 4, Now: testNow}.build(t)
	states := func(h *handler) map[string]string {
		t.Helper()
		w := get(t, h, "/api/daemons")
		if w.Code != 200 {
			t.Fatalf("/api/daemons: %d %s", w.Code, w.Body)
		}
		var ds []DaemonView
		if err := json.Unmarshal(w.Body.Bytes(), &ds); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, d := range ds {
			out[d.Daemon] = d.State
		}
		return out
	}
	banner := func(h *handler) string {
		t.Helper()
		body := get(t, h, "/").Body.String()
		i := strings.Index(body, "daemons-trouble")
		if i < 0 {
			return ""
		}
		return body[i : i+strings.Index(body[i:], "</div>")]
	}

	// No heartbeat at all: none of them ever ran here.
	h := handlerFor(b, time.Now(), "")
	for d, st := range states(h) {
		if st != spool.HealthNever {
			t.Errorf("before any heartbeat %s is %s, want never", d, st)
		}
	}
	if got := banner(h); !strings.Contains(got, "<b>sched</b> never") {
		t.Errorf("banner %q does not say sched never ran", got)
	}

	// All five beat: up, and no banner.
	hearts := map[spool.Daemon]*spool.Heart{}
	for _, d := range spool.Daemons {
		hearts[d] = b.sp.As(d).Heart(d)
		if err := hearts[d].Beat(); err != nil {
			t.Fatal(err)
		}
	}
	h = handlerFor(b, time.Now(), "")
	for d, st := range states(h) {
		if st != spool.HealthUp {
			t.Errorf("%s is %s after its beat, want up", d, st)
		}
	}
	if got := banner(h); got != "" {
		t.Errorf("a banner with every daemon up: %q", got)
	}
	if m := get(t, h, "/metrics").Body.String(); !strings.Contains(m, `msched_daemon_up{daemon="sched",state="up"} 1`) {
		t.Errorf("/metrics does not say sched is up:\n%s", m)
	}

	// A minute later without a beat, every one is stale; stats stopped.
	if err := hearts[spool.Stats].Stop(); err != nil {
		t.Fatal(err)
	}
	h = handlerFor(b, time.Now().Add(time.Minute), "")
	got := states(h)
	if got["sched"] != spool.HealthStale || got["stats"] != spool.HealthStopped {
		t.Errorf("a minute on: %v, want sched stale, stats stopped", got)
	}
	if m := get(t, h, "/metrics").Body.String(); !strings.Contains(m, `msched_daemon_up{daemon="sched",state="stale"} 0`) {
		t.Errorf("/metrics does not say sched is stale:\n%s", m)
	}
	if bn := banner(h); !strings.Contains(bn, "<b>sched</b> stale, last heartbeat") || !strings.Contains(bn, "<b>stats</b> stopped") {
		t.Errorf("banner %q does not name sched stale and stats stopped", bn)
	}
}
