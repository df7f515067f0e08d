package daemons

import (
	"context"
	"encoding/json"
	"time"

	"msched/evaluator"
	"msched/spool"
)

// SchedStatsFile is the name, in db/, of the scheduler's counters that the
// web page (a separate process, or a CGI program) turns into metrics.
const SchedStatsFile = "evaluator.json"

// SchedStats is what sched publishes of its evaluator and GA.
type SchedStats struct {
	GeneratedAt time.Time       `json:"generated_at"`
	StartedAt   time.Time       `json:"started_at"` // when this sched process started: counters count from here
	Evaluator   evaluator.Stats `json:"evaluator"`
	Generations *int64          `json:"ga_generations,omitempty"` // nil: the policy is not a GA
}

// WriteSchedStats replaces db/evaluator.json atomically (tmp, fsync,
// rename), so a reader never sees half a file.
func WriteSchedStats(sp *spool.Spool, s SchedStats) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return spool.WriteAtomic(sp.Path(spool.DirDB), SchedStatsFile, append(b, '\n'))
}

// PublishSchedStats writes ev's counters, and the GA's generation count
// if gens is not nil, every interval until ctx is done, and once more at
// the end. Run it beside the sched daemon:
//
//	go daemons.PublishSchedStats(ctx, sp, 5*time.Second, ev, gens)
//
// gens runs on this goroutine, concurrently with the policy's Plan, so it
// must be safe for that (an atomic counter); ok false means "not a GA".
// An interval, not every decision: the file feeds a scrape every few
// seconds, and an fsync per decision would cost the live GA time.
func PublishSchedStats(ctx context.Context, sp *spool.Spool, interval time.Duration, ev *evaluator.Evaluator, gens func() (n int64, ok bool)) {
	started := time.Now().UTC()
	write := func() {
		s := SchedStats{GeneratedAt: time.Now().UTC(), StartedAt: started, Evaluator: ev.Stats()}
		if gens != nil {
			if n, ok := gens(); ok {
				s.Generations = &n
			}
		}
		_ = WriteSchedStats(sp, s) // a missed update is repaired by the next
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		write()
		select {
		case <-ctx.Done():
			write()
			return
		case <-t.C:
		}
	}
}
