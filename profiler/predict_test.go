package profiler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"msched/policy"
)

// TestPredictor_Rule walks the rule of Predictor's comment (and README's):
// the model under the walltime, the user's own history of the command
// under the walltime, the walltime, and only without a walltime the
// coarser history.
func TestPredictor_Rule(t *testing.T) {
	p := newMem(t)
	observeAll(t, p, "sleep", "alice", 1, 3, 3.1, 2.9, 3, 3.05) // alice's sleep 3s
	observeAll(t, p, "sh -c make", "alice", 1, 50, 52, 49)
	observeAll(t, p, "sim", "bob", 1, 100, 110, 90)
	next := policy.PredictorFunc(func(_ context.Context, j *policy.QueuedJob, _ []policy.Host) (time.Duration, error) {
		switch j.Model {
		case "fast":
			return 7 * time.Second, nil
		case "slow":
			return time.Hour, nil
		case "broken":
			return 0, errors.New("no such parameter")
		}
		return 0, nil
	})
	pr := Predictor{Profiler: p, Next: next}
	user, _ := p.EstimateUpTo("sleep", "alice", 1, 0, LevelUser)
	userSleep := time.Duration(user.Upper() * float64(time.Second))
	exe, _ := p.Estimate("sim", "carol", 1, 0)
	bobsSim := time.Duration(exe.Upper() * float64(time.Second))
	sys, _ := p.Estimate("unknown", "carol", 1, 0)
	system := time.Duration(sys.Upper() * float64(time.Second))
	for _, c := range []struct {
		name   string
		job    policy.QueuedJob
		want   time.Duration
		kind   string
		source string // in Source.String()
	}{
		{"a model", policy.QueuedJob{Model: "fast", Estimate: time.Minute}, 7 * time.Second, SourceModel, "model fast"},
		{"a model above the walltime", policy.QueuedJob{Model: "slow", Estimate: time.Minute}, time.Minute, SourceModel, "walltime (model slow predicted longer)"},
		{"a model without a walltime", policy.QueuedJob{Model: "slow"}, time.Hour, SourceModel, "model slow"},
		{"a failing model", policy.QueuedJob{Model: "broken", Estimate: time.Minute}, 0, SourceWalltime, "model broken failed"},
		{"the user's history under the walltime", policy.QueuedJob{Executable: "sleep", User: "alice", Estimate: 2 * time.Minute},
			userSleep, SourceProfiler, "5 earlier runs of this command by this user"},
		// The issue: sleep 40 with walltime 2m predicted 3 s from others' history.
		{"another user's history", policy.QueuedJob{Executable: "sleep", User: "bob", Estimate: 2 * time.Minute}, 0, SourceWalltime, "no history"},
		{"another command of the user's", policy.QueuedJob{Executable: "sh -c sleep 40", User: "alice", Estimate: 2 * time.Minute}, 0, SourceWalltime, "no history"},
		{"the user's history above the walltime", policy.QueuedJob{Executable: "sh -c make", User: "alice", Estimate: 10 * time.Second},
			0, SourceWalltime, "the profiler predicted longer from 3 runs"},
		{"no walltime: every user's runs", policy.QueuedJob{Executable: "sim", User: "carol"}, bobsSim, SourceProfiler, "by every user"},
		{"no walltime: every run", policy.QueuedJob{Executable: "unknown", User: "carol"}, system, SourceProfiler, "every command"},
		{"by name", policy.QueuedJob{Name: "sleep", User: "alice", Estimate: time.Hour}, userSleep, SourceProfiler, "this user"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ss := &Sources{}
			c.job.ID = "J1"
			got, err := pr.Predict(WithSources(context.Background(), ss), &c.job, []policy.Host{{Name: "h0"}})
			if (err != nil) != (c.job.Model == "broken") {
				t.Fatalf("err %v", err)
			}
			if got != c.want {
				t.Errorf("predicted %v, want %v", got, c.want)
			}
			src, ok := ss.Source("J1")
			if !ok || src.Kind != c.kind || !strings.Contains(src.String(), c.source) {
				t.Errorf("source %+v %q (recorded %v), want kind %s saying %q", src, src, ok, c.kind, c.source)
			}
		})
	}
	if userSleep <= 3*time.Second || userSleep >= 4*time.Second {
		t.Errorf("alice's sleep predicted %v from runs of about 3 s", userSleep)
	}
	empty := Predictor{Profiler: newMem(t)}
	ss := &Sources{}
	got, err := empty.Predict(WithSources(context.Background(), ss), &policy.QueuedJob{ID: "J2", Name: "x"}, nil)
	if s, _ := ss.Source("J2"); got != 0 || err != nil || s.Kind != SourceDefault {
		t.Errorf("no history, no walltime: %v, %v, %+v; want 0 (the policy's default)", got, err, s)
	}
	// No Sources in the context: nothing recorded, nothing fails.
	if got, err := pr.Predict(context.Background(), &policy.QueuedJob{ID: "J3", Model: "fast"}, nil); got != 7*time.Second || err != nil {
		t.Errorf("without Sources: %v, %v", got, err)
	}
}

// TestSources_Bounded: jobs predicted and never placed age out.
func TestSources_Bounded(t *testing.T) {
	var ss Sources
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range sourcesKeep {
				ss.Record(fmt.Sprintf("J%d-%d", g, i), Source{Kind: SourceWalltime})
			}
		}()
	}
	wg.Wait()
	ss.Record("last", Source{Kind: SourceModel, Model: "m"})
	if s, ok := ss.Source("last"); !ok || s.Model != "m" {
		t.Errorf("last: %+v %v", s, ok)
	}
	if _, ok := ss.Source("J0-0"); ok {
		t.Error("the first of 4×sourcesKeep jobs is still remembered")
	}
	if n := len(ss.cur) + len(ss.old); n > 2*sourcesKeep {
		t.Errorf("%d sources kept, want at most %d", n, 2*sourcesKeep)
	}
	var nilSources *Sources
	nilSources.Record("x", Source{})
	if _, ok := nilSources.Source("x"); ok {
		t.Error("a nil Sources remembers")
	}
}
