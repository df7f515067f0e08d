package policy

import (
	"math"
	"time"

	"msched/models"
)

// This file is what the moldable-job policies (scojo-p, scojo-rigid,
// cirne-berman) know of a job's sizes: its run time on each host count it
// may take, its optimum size N_opt and its class.

// curve is one queued job's run time on every host count it may take,
// lo..lo+len(t)-1, and its optimum size.
type curve struct {
	lo    int
	t     []int64 // run time (ns) on lo+i hosts
	opt   int     // N_opt
	class int     // short, medium or long, by the run time at N_opt
	// recorded: scojo-p has counted the job's arrival (kept when the curve
	// is recomputed).
	recorded bool
	// What it was computed from: a change recomputes it.
	min, max int
	given    time.Duration
}

// The job classes (the paper's Table 1), by predicted run time at N_opt:
// short under 60 s, medium under an hour, long.
const (
	classShort = iota
	classMedium
	classLong
	nClasses
)

func classOf(d int64) int {
	switch {
	case d < int64(time.Minute):
		return classShort
	case d < int64(time.Hour):
		return classMedium
	}
	return classLong
}

// at is the run time on n hosts (clamped to the curve).
func (c *curve) at(n int) int64 {
	i := min(max(n-c.lo, 0), len(c.t)-1)
	return c.t[i]
}

// hi is the largest host count of the curve.
func (c *curve) hi() int { return c.lo + len(c.t) - 1 }

// tOpt is the run time at N_opt.
func (c *curve) tOpt() int64 { return c.at(c.opt) }

// curves keeps each queued job's curve across Plan calls, by job ID: a
// job's sizes are asked for at every call while it waits.
type curves struct {
	by   map[string]*curve
	kept []Host // the hosts the curves were computed for
	// ok marks, for this call, the hosts free now or held by a running
	// job; nOK counts them.
	ok  []bool
	nOK int
}

// usableHosts marks this call's usable hosts (see of).
func (cs *curves) usableHosts(m *machine) {
	cs.ok = resize(cs.ok, len(m.hosts))
	for i, t := range m.freeAt {
		cs.ok[i] = t == 0
	}
	for _, i := range m.runIdx {
		cs.ok[i] = true
	}
	cs.nOK = 0
	for _, ok := range cs.ok {
		if ok {
			cs.nOK++
		}
	}
}

// usable counts the usable hosts j may use.
func (cs *curves) usable(m *machine, j *qjob) int {
	if j.allow == nil {
		return cs.nOK
	}
	n := 0
	for i, ok := range cs.ok {
		if ok && j.allow.Has(i) {
			n++
		}
	}
	return n
}

// forget marks every curve stale when the hosts changed (predictions
// depend on them), and drops the curves of jobs gone from the queue when
// there are many.
func (cs *curves) forget(s *Snapshot) {
	if cs.by == nil {
		cs.by = map[string]*curve{}
	}
	if !sameHostsAs(cs.kept, s.Hosts) {
		// Recompute every curve at its next use (of sees its host range
		// change), keeping whether the job's arrival was counted.
		for _, c := range cs.by {
			c.min = -1
		}
		cs.kept = append(cs.kept[:0], s.Hosts...)
		for i := range cs.kept {
			cs.kept[i].FreeAt = time.Time{}
		}
	}
	if len(cs.by) > 2*len(s.Queue)+1024 {
		old := cs.by
		cs.by = make(map[string]*curve, len(s.Queue))
		for i := range s.Queue {
			if c, ok := old[s.Queue[i].ID]; ok {
				cs.by[s.Queue[i].ID] = c
			}
		}
	}
}

// sameHostsAs reports whether hs are the hosts kept (FreeAt aside).
func sameHostsAs(kept, hs []Host) bool {
	if len(kept) != len(hs) {
		return false
	}
	for i := range hs {
		a, b := &hs[i], &kept[i]
		if a.Name != b.Name || a.Arch != b.Arch || a.Cluster != b.Cluster || a.Load != b.Load || a.Speed != b.Speed {
			return false
		}
	}
	return true
}

// of returns j's curve, computing it on first sight (or when the job's host
// range or estimate changed).
//
// The host range is the job's Min..Max, with Max cut to the hosts it may
// use that are free now or held by a running job (a host busy otherwise,
// down or held outside msched until its FreeAt, is left out: a size that
// needs it could wait that long). Run times: when the predictor answers for the job on Min hosts, it
// is the job's model and is asked on each host count (the first n hosts
// the job may use), unless it answers the same on every count for a job
// without a performance model (a mean of past runs, which says nothing of
// the speedup: it is taken as the time on Min hosts, and the efficiency
// model below applies), and N_opt is the processor working set the paper
// defines (§4.6): the n minimising T(n)/E(n), that is n·T(n)², ties to the
// smaller n. (On SCOJO-P's efficiency model, which the simulator's
// --moldable jobs follow, that is their requested size exactly.) Without
// a model, SCOJO-P's efficiency model: N_opt is the geometric middle of
// Min..Max (the requested size of a job whose range is N_opt/2..2·N_opt)
// and the run times scale the job's estimate (its run time on Min hosts)
// by models.Efficiency.
func (cs *curves) of(m *machine, j *qjob) *curve {
	q := j.q
	hi := max(min(q.Max, cs.usable(m, j)), j.n)
	old, ok := cs.by[q.ID]
	if ok && old.min == j.n && old.max == hi && old.given == q.Estimate {
		return old
	}
	c := &curve{lo: j.n, t: make([]int64, hi-j.n+1), min: j.n, max: hi, given: q.Estimate, recorded: ok && old.recorded}
	cs.by[q.ID] = c
	if rigid(q) || hi == j.n {
		c.t[0] = m.estimate(j)
		c.opt = j.n
		c.class = classOf(c.t[0])
		return c
	}
	base := q.Estimate
	if d, ok := predictN(m, j, j.n); ok {
		c.t[0] = d
		best, at := math.Inf(1), j.n
		flat := true
		for n := j.n; n <= hi; n++ {
			if n > j.n {
				d, ok = predictN(m, j, n)
				if !ok {
					d = c.t[n-j.n-1] // no answer: no faster than one host fewer
				}
				c.t[n-j.n] = d
				flat = flat && d == c.t[0]
			}
			if w := float64(n) * float64(d) * float64(d); w < best {
				best, at = w, n
			}
		}
		c.opt = at
		if !flat || q.Model != "" {
			c.class = classOf(c.tOpt())
			return c
		}
		// The same answer on every host count, for a job without a
		// performance model: a mean of past runs (the live profiler's,
		// before the command has run on several sizes), which says how
		// long the job runs but nothing of its speedup. It is taken as
		// the job's time on Min hosts, as a walltime would be.
		base = time.Duration(c.t[0])
	}
	if base <= 0 {
		base = m.o.Fallback
	}
	c.efficiency(max(q.Max, j.n), base)
	c.class = classOf(c.tOpt())
	return c
}

// efficiency fills c from SCOJO-P's efficiency model for a job whose range
// reaches top hosts, base long on c.lo: N_opt is the geometric middle of
// c.lo and top (the requested size of a job whose range is N_opt/2..2·N_opt).
func (c *curve) efficiency(top int, base time.Duration) {
	c.opt = min(max(int(math.Round(math.Sqrt(float64(c.lo)*float64(top)))), c.lo), c.hi())
	e := models.Efficiency{Opt: c.opt}
	tOpt := float64(base) / e.Factor(c.lo)
	for i := range c.t {
		c.t[i] = min(int64(tOpt*e.Factor(c.lo+i)), maxEstimate)
	}
}

// rigid tells a job that runs on one host count only, or a multicluster
// request (its components fix its size).
func rigid(q *QueuedJob) bool { return q.Max <= q.Min || q.Request != 0 }

// predictN is the predictor's run time for j on the first n hosts it may
// use; false when there is no predictor or it gives no answer.
func predictN(m *machine, j *qjob, n int) (int64, bool) {
	if m.o.Predictor == nil {
		return 0, false
	}
	m.hbuf = m.hbuf[:0]
	for i := 0; i < len(m.hosts) && len(m.hbuf) < n; i++ {
		if j.allow == nil || j.allow.Has(i) {
			m.hbuf = append(m.hbuf, m.hosts[i])
		}
	}
	d, err := m.o.Predictor.Predict(m.ctx, j.q, m.hbuf)
	if err != nil {
		m.o.Log.Warn("prediction failed; sizing the job by the efficiency model", "job", j.q.ID, "hosts", n, "err", err)
	}
	if err != nil || d <= 0 {
		return 0, false
	}
	return min(int64(d), maxEstimate), true
}
