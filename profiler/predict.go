package profiler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"msched/policy"
)

// Predictor is the live system's prediction of a job's run time for the
// policies (policy.Predictor). It combines the user's request (the walltime,
// QueuedJob.Estimate), the job's performance model (Next) and the profiler's
// history by one rule, which README states ("How run times are predicted"):
//
//  1. A job with a performance model: the model's prediction (Next), never
//     above the walltime (the job is killed there).
//  2. Otherwise, a job with a walltime: the profiler's Upper for this
//     command (QueuedJob.Executable, a Category) run by this user, when that
//     history gives one and it is shorter than the walltime; else the
//     walltime. The history of other users, other commands or the whole
//     system never takes a prediction below what the user asked.
//  3. Otherwise, with no walltime: the profiler's Upper at the finest level
//     with history (this user's runs of the command, every user's, every
//     run of the system).
//  4. Otherwise nothing (0): the policy takes its default.
//
// Where the walltime is the answer, Predict returns 0 and the policy uses
// QueuedJob.Estimate itself, as it does for a job the predictor cannot
// answer. Each answer's Source is recorded in the Sources the context
// carries (WithSources), for the job's schedule.
type Predictor struct {
	Profiler *Profiler
	Next     policy.Predictor // performance models; nil: none
}

// Predict implements policy.Predictor.
func (pr Predictor) Predict(ctx context.Context, job *policy.QueuedJob, hosts []policy.Host) (time.Duration, error) {
	d, src, err := pr.predict(ctx, job, hosts)
	sourcesFrom(ctx).Record(job.ID, src)
	return d, err
}

func (pr Predictor) predict(ctx context.Context, job *policy.QueuedJob, hosts []policy.Host) (time.Duration, Source, error) {
	wall := job.Estimate
	if job.Model != "" && pr.Next != nil {
		d, err := pr.Next.Predict(ctx, job, hosts)
		switch {
		case err != nil && wall > 0:
			return 0, Source{Kind: SourceWalltime, Model: job.Model, Failed: true}, err
		case err != nil:
			return 0, Source{Kind: SourceDefault, Model: job.Model, Failed: true}, err
		case d > 0 && wall > 0 && d > wall:
			return wall, Source{Kind: SourceModel, Model: job.Model, Capped: true}, nil
		case d > 0:
			return d, Source{Kind: SourceModel, Model: job.Model}, nil
		}
	}
	cat := job.Executable
	if cat == "" {
		cat = job.Name
	}
	procs := max(len(hosts), 1)
	if wall > 0 {
		e, ok := pr.Profiler.EstimateUpTo(cat, job.User, procs, 0, LevelUser)
		if !ok {
			return 0, Source{Kind: SourceWalltime}, nil
		}
		up := time.Duration(e.Upper() * float64(time.Second))
		if up <= 0 || up >= wall {
			return 0, Source{Kind: SourceWalltime, Profile: e.Source, Runs: e.N, Capped: true}, nil
		}
		return up, Source{Kind: SourceProfiler, Profile: e.Source, Runs: e.N}, nil
	}
	e, ok := pr.Profiler.Estimate(cat, job.User, procs, 0)
	if !ok || e.Upper() <= 0 {
		return 0, Source{Kind: SourceDefault}, nil
	}
	return time.Duration(e.Upper() * float64(time.Second)), Source{Kind: SourceProfiler, Profile: e.Source, Runs: e.N}, nil
}

// The kinds of Source.
const (
	SourceModel    = "model"    // the job's performance model
	SourceProfiler = "profiler" // the historical profiler
	SourceWalltime = "walltime" // the user's walltime
	SourceDefault  = "default"  // none of them: the policy's default
)

// Source says where a prediction came from (spool.Schedule.EstimateSource
// is its String).
type Source struct {
	Kind  string // SourceModel, SourceProfiler, SourceWalltime or SourceDefault
	Model string // the performance model, when the job has one
	// Profile is the profiler's Estimate.Source ("user:fit", …) and Runs
	// the runs behind it, when the profiler answered or was overruled.
	Profile string
	Runs    int
	// Capped: the model's or the profiler's prediction was at least the
	// walltime, and the walltime stands.
	Capped bool
	// Failed: the model failed to predict (the policy logs why).
	Failed bool
}

// String says it for a person, as the job's report shows it.
func (s Source) String() string {
	switch s.Kind {
	case SourceModel:
		if s.Capped {
			return fmt.Sprintf("walltime (model %s predicted longer)", s.Model)
		}
		return "model " + s.Model
	case SourceProfiler:
		return fmt.Sprintf("profiler: %d earlier runs of %s (%s)", s.Runs, whose(s.Profile), s.Profile)
	case SourceWalltime:
		switch {
		case s.Failed:
			return fmt.Sprintf("walltime (model %s failed)", s.Model)
		case s.Capped:
			return fmt.Sprintf("walltime (the profiler predicted longer from %d runs of %s)", s.Runs, whose(s.Profile))
		}
		return "walltime (no history of this command by this user)"
	case SourceDefault:
		if s.Failed {
			return fmt.Sprintf("the policy's default (model %s failed, and no walltime)", s.Model)
		}
		return "the policy's default (no model, walltime or history)"
	}
	return s.Kind
}

// whose says whose runs a profiler level holds.
func whose(profile string) string {
	switch level, _, _ := strings.Cut(profile, ":"); level {
	case LevelUser.String():
		return "this command by this user"
	case LevelExecutable.String():
		return "this command by every user"
	}
	return "every command"
}

// Sources remembers, per job, where its latest prediction came from, for
// the sched daemon to write into the job's schedule when the job is placed
// (spool.Schedule.EstimateSource). Predictions are asked inside a policy,
// which knows nothing of their sources; the daemon hands the policy a
// context carrying its Sources (WithSources), as net/http/httptrace hands
// a trace through a request's context. The zero value and nil are ready;
// safe for concurrent use.
type Sources struct {
	mu       sync.Mutex
	cur, old map[string]Source
}

// sourcesKeep is how many jobs' sources a generation holds: the jobs
// predicted but never placed (cancelled, rejected) age out after two
// generations, and a job waiting behind more than this many newer
// predictions is predicted again before it is placed.
const sourcesKeep = 8192

// Record notes that job's latest prediction came from s.
func (ss *Sources) Record(job string, s Source) {
	if ss == nil {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if old, ok := ss.cur[job]; ok && old == s {
		return
	}
	if ss.cur == nil || len(ss.cur) >= sourcesKeep {
		ss.old, ss.cur = ss.cur, make(map[string]Source, 64)
	}
	ss.cur[job] = s
}

// Source is where job's latest prediction came from; ok is false when it
// is not known.
func (ss *Sources) Source(job string) (s Source, ok bool) {
	if ss == nil {
		return Source{}, false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s, ok = ss.cur[job]; !ok {
		s, ok = ss.old[job]
	}
	return s, ok
}

type sourcesKey struct{}

// WithSources returns ctx carrying ss: the Predictor records there where
// each prediction made under ctx came from.
func WithSources(ctx context.Context, ss *Sources) context.Context {
	if ss == nil {
		return ctx
	}
	return context.WithValue(ctx, sourcesKey{}, ss)
}

func sourcesFrom(ctx context.Context) *Sources {
	ss, _ := ctx.Value(sourcesKey{}).(*Sources)
	return ss
}
