package profiler

import (
	"context"
	"errors"
	"fmt"

	"msched/models"
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
