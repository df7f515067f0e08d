package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"msched/acct"
	"msched/learn"
	"msched/policy"
	"msched/profiler"
	"msched/spool"
)

// predictor wraps the model predictor of the sched daemon in the rule of
// profiler.Predictor (README, "How run times are predicted"): jobs with a
// performance model are predicted by it (corrected by what finished jobs
// taught, with learning.correct), never above their walltime; the others
// by their walltime, which only the historical profiler's record
// (<spool>/db/profiler.db) of the user's own runs of the command may bring
// down, or without a walltime by the profiler's Mean + HalfWidth at the
// finest level with history. The profiler and the correction learn from
// the accounting log as the reaper appends to it, until ctx ends. sched
// writes where each prediction came from into the job's schedule.
func (s *system) predictor(ctx context.Context, models policy.Predictor, log *slog.Logger) (policy.Predictor, error) {
	db := s.sp.Path(spool.DirDB)
	acctLog := filepath.Join(db, acct.JSONL)
	prof, err := profiler.Open(filepath.Join(db, "profiler.db"), profiler.Options{Confidence: s.cfg.Learn.Confidence})
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, prof.Close)
	go func() {
		if err := profiler.FeedFromAccounting(ctx, acctLog, prof); err != nil {
			log.Error("profiler: feed from the accounting log stopped", "err", err)
		}
	}()
	if s.cfg.Learn.Correct {
		c := learn.NewCorrector(s.cfg.Learn.Window, 0)
		archOf := func(h string) string {
			for _, x := range s.hosts {
				if x.Name == h {
					return x.Arch
				}
			}
			return ""
		}
		go func() {
			err := acct.Follow(ctx, acctLog, acct.Pos{}, profiler.FeedEvery, 0, func(fs []acct.Followed) error {
				for _, f := range fs {
					if !f.Copy {
						c.Learn(f.Record, archOf)
					}
				}
				return nil
			})
			if err != nil {
				log.Error("learn: following the accounting log stopped", "err", err)
			}
		}()
		models = learn.Predictor{C: c, Next: models}
	}
	return profiler.Predictor{Profiler: prof, Next: models}, nil
}

// learnConfig is the profiler.* and learning.* keys.
type learnConfig struct {
	Confidence float64 // profiler.confidence
	Correct    bool    // learning.correct
	Window     int     // learning.window
}

func readLearning(v interface {
	GetFloat64(string) float64
	GetBool(string) bool
	GetInt(string) int
}) (learnConfig, error) {
	c := learnConfig{Confidence: v.GetFloat64("profiler.confidence"), Correct: v.GetBool("learning.correct"), Window: v.GetInt("learning.window")}
	if !(c.Confidence > 0 && c.Confidence < 1) {
		return c, fmt.Errorf("config: profiler.confidence: must be in (0, 1), got %v", c.Confidence)
	}
	if c.Window < 1 {
		return c, fmt.Errorf("config: learning.window: must be ≥ 1, got %d", c.Window)
	}
	return c, nil
}
