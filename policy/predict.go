package policy

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"msched/evaluator"
	"msched/models"
)

// ModelPredictor answers a policy's run-time questions from the job's
// performance model through the cached evaluator. A job without a model is
// answered with 0 (no prediction), so the policy falls back to the job's
// estimate. A host whose architecture the hardware database does not know
// is seen as the database's "generic" architecture (speed 1), with one
// warning per architecture: a hosts file naming a CPU the models cannot
// describe should still schedule.
type ModelPredictor struct {
	eval *evaluator.Evaluator
	hw   *models.Hardware
	log  *slog.Logger

	mu     sync.Mutex
	warned map[string]bool
}

// GenericArch is the hardware model an unknown architecture is mapped to.
const GenericArch = "generic"

// NewModelPredictor returns a predictor over ev; hw is the hardware database
// ev was opened with.
func NewModelPredictor(ev *evaluator.Evaluator, hw *models.Hardware, log *slog.Logger) *ModelPredictor {
	if log == nil {
		log = slog.Default()
	}
	return &ModelPredictor{eval: ev, hw: hw, log: log, warned: map[string]bool{}}
}

// Predict implements Predictor.
func (p *ModelPredictor) Predict(ctx context.Context, job *QueuedJob, hosts []Host) (time.Duration, error) {
	if job.Model == "" {
		return 0, nil
	}
	h, err := p.eval.Prepare(job.Model, job.Params)
	if err != nil {
		return 0, err
	}
	specs := make([]models.HostSpec, len(hosts))
	for i, host := range hosts {
		specs[i] = models.HostSpec{Arch: p.arch(host), Load: host.Load}
	}
	secs, err := h.Predict(ctx, specs)
	if err != nil {
		return 0, err
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// arch returns the hardware model of host, "generic" when unknown.
func (p *ModelPredictor) arch(host Host) string {
	if _, err := p.hw.Lookup(host.Arch); err == nil {
		return host.Arch
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.warned[host.Arch] {
		p.warned[host.Arch] = true
		p.log.Warn("architecture not in the hardware database; predicting as generic", "arch", host.Arch, "host", host.Name)
	}
	return GenericArch
}
