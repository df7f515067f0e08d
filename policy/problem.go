package policy

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"msched/ga"
)

// builder turns snapshots into ga.Problems. It keeps one *ga.Task per queued
// job across calls, so the tasks' memoised run times and the GA's live
// population (which matches tasks by pointer) survive from one decision to
// the next. Host indexes follow the snapshot's host order.
type builder struct {
	pred     Predictor
	fallback time.Duration
	log      *slog.Logger

	ctx     context.Context // the Plan call in progress, for RuntimeFuncs
	hosts   []Host
	hostSig string
	tasks   map[string]*ga.Task
	jobs    map[*ga.Task]*QueuedJob
}

func newBuilder(pred Predictor, fallback time.Duration, log *slog.Logger) *builder {
	if log == nil {
		log = slog.Default()
	}
	if fallback <= 0 {
		fallback = time.Hour
	}
	return &builder{pred: pred, fallback: fallback, log: log,
		tasks: map[string]*ga.Task{}, jobs: map[*ga.Task]*QueuedJob{}}
}

// hostSignature changes whenever a host's identity or what its predictions
// depend on changes.
func hostSignature(hs []Host) string {
	var b strings.Builder
	for _, h := range hs {
		b.WriteString(h.Name)
		b.WriteByte(0)
		b.WriteString(h.Arch)
		b.WriteByte(0)
		b.WriteString(h.Cluster)
		b.WriteByte(0)
		b.WriteString(strconv.FormatFloat(h.Load, 'g', 6, 64))
		b.WriteByte(1)
	}
	return b.String()
}

// build returns the problem for the snapshot's running work and the given
// queued jobs (a window of the queue, in arrival order), and the jobs that
// can never be placed on the snapshot's hosts, which are left out of it.
func (b *builder) build(ctx context.Context, s *Snapshot, queue []QueuedJob) (*ga.Problem, []Rejection) {
	b.ctx = ctx
	if sig := hostSignature(s.Hosts); sig != b.hostSig {
		// Host indexes or loads changed: memoised times are stale.
		b.hostSig = sig
		for _, t := range b.tasks {
			t.Forget()
		}
	}
	b.hosts = s.Hosts
	index := make(map[string]int, len(s.Hosts))
	for i, h := range s.Hosts {
		index[h.Name] = i
	}
	p := &ga.Problem{Hosts: len(s.Hosts), Base: make([]float64, len(s.Hosts))}
	for i, h := range s.Hosts {
		if d := h.FreeAt.Sub(s.Now).Seconds(); d > 0 {
			p.Base[i] = d
		}
	}
	// Running jobs' predicted ends also hold their hosts (a snapshot may
	// give either or both).
	for _, r := range s.Running {
		d := math.Max(r.End.Sub(s.Now).Seconds(), 0)
		for _, name := range r.Hosts {
			if i, ok := index[name]; ok && d > p.Base[i] {
				p.Base[i] = d
			}
		}
	}
	seen := make(map[string]bool, len(queue))
	var rejects []Rejection
	many := manyClusters(s.Hosts)
	for i := range queue {
		q := &queue[i]
		if r, ok := refuseCoalloc(q, many); ok {
			rejects = append(rejects, r) // the GA maps a job inside one cluster
			continue
		}
		allow, avail := allowedCount(s.Hosts, q)
		if need := max(q.Min, 1); need > avail {
			rejects = append(rejects, rejection(q, need, avail))
			continue
		}
		seen[q.ID] = true
		t := b.tasks[q.ID]
		if t == nil {
			t = &ga.Task{ID: q.ID}
			b.tasks[q.ID] = t
			t.Runtime = b.runtime(t)
		}
		b.jobs[t] = q
		t.Allowed = allow
		t.Min, t.Max = clampRange(q.Min, q.Max, avail)
		t.Arrival = q.Submit.Sub(s.Now).Seconds()
		p.Tasks = append(p.Tasks, t)
	}
	for id, t := range b.tasks {
		if !seen[id] {
			delete(b.tasks, id)
			delete(b.jobs, t)
		}
	}
	return p, rejects
}

// rejection says why q, which needs min hosts, can never run where only
// avail hosts match its constraints (min > avail).
func rejection(q *QueuedJob, min, avail int) Rejection {
	what := "hosts"
	var cons []string
	if q.Arch != "" {
		cons = append(cons, "arch "+q.Arch)
	}
	if q.Cluster != "" {
		cons = append(cons, "cluster "+q.Cluster)
	}
	if len(cons) > 0 {
		what += " with " + strings.Join(cons, " and ")
	}
	return Rejection{Job: q.ID, Reason: fmt.Sprintf("needs at least %d hosts, only %d %s exist", min, avail, what)}
}

// runtime returns the RuntimeFunc of task t: the predictor's answer for the
// task's job on the chosen hosts, or the fallback estimate when it fails.
func (b *builder) runtime(t *ga.Task) ga.RuntimeFunc {
	var hs []Host
	return func(idx []int) float64 {
		q := b.jobs[t]
		hs = hs[:0]
		for _, i := range idx {
			hs = append(hs, b.hosts[i])
		}
		if b.pred != nil {
			d, err := b.pred.Predict(b.ctx, q, hs)
			if err == nil && d > 0 {
				return d.Seconds()
			}
			if err != nil {
				b.log.Warn("prediction failed; using fallback estimate", "job", q.ID, "err", err)
			}
		}
		if q.Estimate > 0 {
			return q.Estimate.Seconds()
		}
		return b.fallback.Seconds()
	}
}

// allowedCount is allowed(hs, q) and the number of hosts it holds (every
// host when it is nil).
func allowedCount(hs []Host, q *QueuedJob) (ga.Bits, int) {
	a := allowed(hs, q)
	if a == nil {
		return nil, len(hs)
	}
	return a, a.Count()
}

// allowed is the set of hosts that meet q's arch and cluster constraints,
// or nil when q has none.
func allowed(hs []Host, q *QueuedJob) ga.Bits {
	if q.Arch == "" && q.Cluster == "" {
		return nil
	}
	b := ga.NewBits(len(hs))
	for i, h := range hs {
		if (q.Arch == "" || q.Arch == h.Arch) && (q.Cluster == "" || q.Cluster == h.Cluster) {
			b.Set(i)
		}
	}
	return b
}

// clampRange fits a requested host range to the hosts available, of which
// there are at least max(lo, 1) (build rejects the other jobs).
func clampRange(lo, hi, avail int) (int, int) {
	lo = max(lo, 1)
	return lo, min(max(hi, lo), avail)
}

// startEps is how close to now a decoded start must be to start now.
const startEps = 1e-6

// planFrom turns a decoded chromosome into a Plan: the tasks that start now
// (at time 0 of the decode, so all their hosts are free) and the rest with
// their predicted starts.
func (b *builder) planFrom(s *Snapshot, p *ga.Problem, c *ga.Chromosome) Plan {
	var sch ga.Schedule
	ga.Decode(p, c, &sch)
	var plan Plan
	var idx []int
	for _, j := range c.Order {
		t := p.Tasks[j]
		idx = c.Map[j].Hosts(idx[:0])
		names := make([]string, len(idx))
		for k, i := range idx {
			names[k] = s.Hosts[i].Name
		}
		pl := Placement{
			Job:       t.ID,
			Hosts:     names,
			Start:     s.Now.Add(secs(sch.Start[j])),
			Predicted: secs(sch.End[j] - sch.Start[j]),
		}
		if q := b.jobs[t]; q != nil {
			pl.Why = moldableWhy(q, len(names), "chosen by the GA: the host count in the plan of lowest cost, predicted "+roundSecs(pl.Predicted))
		}
		if sch.Start[j] <= startEps {
			pl.Start = s.Now
			plan.StartNow = append(plan.StartNow, pl)
		} else {
			plan.Later = append(plan.Later, pl)
		}
	}
	return plan
}

// roundSecs writes d to the second.
func roundSecs(d time.Duration) string { return d.Round(time.Second).String() }

func secs(f float64) time.Duration {
	if math.IsInf(f, 0) || f > 1e12 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(f * float64(time.Second))
}
