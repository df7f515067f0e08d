package profiler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"msched/models"
	"msched/policy"
)

// ErrNoHistory is returned by the profiler's Model when it has seen no run
// at all.
var ErrNoHistory = errors.New("profiler: no history")

// ParamAttained is the Scenario parameter that gives the profiler's Model
// the seconds the job has already run (absent: not started).
const ParamAttained = "attained"

// Model returns the profiler as a performance model of one job: exe run by
// user. Its prediction for a scenario is the top of the confidence
// interval, Mean + HalfWidth, on len(Hosts) processors, given
// Params["attained"] seconds already run. Strings cannot travel in a
// Scenario's Params, so the model is made per job. The hosts' architecture
// and load are not used: the profiler knows wall times only.
func (p *Profiler) Model(exe, user string) models.Model { return jobModel{p, exe, user} }

type jobModel struct {
	p         *Profiler
	exe, user string
}

func (m jobModel) Predict(_ context.Context, s models.Scenario) (float64, error) {
	e, ok := m.p.Estimate(m.exe, m.user, max(len(s.Hosts), 1), s.Params[ParamAttained])
	if !ok {
		return 0, fmt.Errorf("%w for %q/%q", ErrNoHistory, m.exe, m.user)
	}
	return e.Upper(), nil
}

// HostOrderIrrelevant implements models.OrderFree.
func (jobModel) HostOrderIrrelevant() bool { return true }

// Predictor answers a policy for the jobs its Next predictor cannot: a job
// that Next predicts (one with a performance model) keeps Next's answer;
// any other is predicted as the profiler's Mean + HalfWidth for its
// Executable (else its Name) and User on the hosts asked about. With no
// history either, the answer is 0 and the policy falls back to the job's
// own Estimate.
type Predictor struct {
	Profiler *Profiler
	Next     policy.Predictor // nil: the profiler answers every job
}

// Predict implements policy.Predictor.
func (pr Predictor) Predict(ctx context.Context, job *policy.QueuedJob, hosts []policy.Host) (time.Duration, error) {
	if pr.Next != nil {
		d, err := pr.Next.Predict(ctx, job, hosts)
		if err != nil || d > 0 {
			return d, err
		}
	}
	exe := job.Executable
	if exe == "" {
		exe = job.Name
	}
	e, ok := pr.Profiler.Estimate(exe, job.User, max(len(hosts), 1), 0)
	if !ok {
		return 0, nil
	}
	return time.Duration(e.Upper() * float64(time.Second)), nil
}
