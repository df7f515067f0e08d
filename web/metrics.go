package web

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"msched/acct"
	"msched/learn"
	"msched/notify"
	"msched/spool"
)

// metrics writes the Prometheus text exposition format (version 0.0.4) by
// hand: the values are read from the spool at scrape time, so a registry
// would only copy them, and linking client_golang (its registry, default
// collectors, protobuf) makes every CGI process start measurably slower
// (BenchmarkMetricsCGI, startup; README's Metrics gives the figures).
// metrics_test.go parses the output strictly. Counters that come from
// the sched process (evaluator, GA) are present only when sched publishes
// db/evaluator.json; they restart from zero when sched restarts, which
// Prometheus's rate() handles. So do the counters read from the accounting
// log (jobs finished, the wait-time histogram) when the log is rotated.
//
// Every labelled family holds only its labelled series: no "all" row
// mixed in, which a sum() over the label would count twice; the total is
// the sum.
func (h *handler) metrics(w http.ResponseWriter, r *http.Request) {
	var b bytes.Buffer
	e := expo{b: &b}
	if err := h.writeMetrics(&e); err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}

// expo writes families of the text format.
type expo struct{ b *bytes.Buffer }

// family writes a family's HELP and TYPE lines.
func (e expo) family(name, typ, help string) {
	fmt.Fprintf(e.b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// sample writes one sample; labels are name, value pairs.
func (e expo) sample(name string, v float64, labels ...string) {
	b := e.b
	b.WriteString(name)
	if len(labels) > 0 {
		b.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "%s=\"%s\"", labels[i], labelEscaper.Replace(labels[i+1]))
		}
		b.WriteByte('}')
	}
	fmt.Fprintf(b, " %s\n", formatFloat(v))
}

// histogram writes a histogram's buckets (cumulative), sum and count.
func (e expo) histogram(name string, hi histo) {
	for i, le := range hi.bounds {
		e.sample(name+"_bucket", float64(hi.counts[i]), "le", formatFloat(le))
	}
	e.sample(name+"_bucket", float64(hi.n), "le", "+Inf")
	e.sample(name+"_sum", hi.sum)
	e.sample(name+"_count", float64(hi.n))
}

// writeMetrics reads the spool and writes every family.
func (h *handler) writeMetrics(e *expo) error {
	e.family("msched_jobs", "gauge", "Jobs in each spool state.")
	for _, st := range spool.States {
		es, err := h.cfg.Spool.List(st)
		if err != nil {
			return err
		}
		e.sample("msched_jobs", float64(len(es)), "state", string(st))
	}
	sched, err := h.cfg.Spool.ReadSchedule()
	if err != nil {
		return err
	}
	if sched != nil {
		e.family("msched_hosts", "gauge", "Hosts in the published schedule.")
		e.sample("msched_hosts", float64(len(sched.Hosts)))
		n := map[string]int{"running": 0, "planned": 0}
		for _, j := range sched.Jobs {
			n[j.State]++
		}
		e.family("msched_schedule_jobs", "gauge", "Jobs in the published schedule, running or planned.")
		e.sample("msched_schedule_jobs", float64(n["running"]), "kind", "running")
		e.sample("msched_schedule_jobs", float64(n["planned"]), "kind", "planned")
		e.family("msched_schedule_published_timestamp_seconds", "gauge", "When sched last published the schedule.")
		e.sample("msched_schedule_published_timestamp_seconds", float64(sched.GeneratedAt.UnixMilli())/1e3)
	}
	if st := readSchedStats(h.cfg.Spool); st != nil {
		ev := st.Evaluator
		e.family("msched_evaluator_lookups_total", "counter", "Predictions asked of the evaluator since sched started.")
		e.sample("msched_evaluator_lookups_total", float64(ev.Lookups))
		e.family("msched_evaluator_hits_total", "counter", "Evaluator lookups answered from a cache level.")
		e.sample("msched_evaluator_hits_total", float64(ev.L1Hits), "level", "memory")
		e.sample("msched_evaluator_hits_total", float64(ev.L2Hits), "level", "disk")
		e.family("msched_evaluator_model_calls_total", "counter", "Performance model calls (cache misses).")
		e.sample("msched_evaluator_model_calls_total", float64(ev.ModelCalls))
		e.family("msched_evaluator_cache_hit_ratio", "gauge", "Fraction of evaluator lookups answered by either cache level.")
		e.sample("msched_evaluator_cache_hit_ratio", ev.HitRate())
		if g := st.Generations; g != nil {
			e.family("msched_ga_generations_total", "counter", "GA generations bred since sched started.")
			e.sample("msched_ga_generations_total", float64(*g))
			if secs := st.GeneratedAt.Sub(st.StartedAt).Seconds(); secs > 0 {
				e.family("msched_ga_generations_per_second", "gauge", "GA generations per second of sched's uptime.")
				e.sample("msched_ga_generations_per_second", float64(*g)/secs)
			}
		}
		e.family("msched_sched_stats_timestamp_seconds", "gauge", "When sched last published these counters.")
		e.sample("msched_sched_stats_timestamp_seconds", float64(st.GeneratedAt.UnixMilli())/1e3)
	}
	ds, err := h.daemons()
	if err != nil {
		return err
	}
	e.family("msched_daemon_up", "gauge", "1 when the daemon's heartbeat is fresh, else 0 (state: up, stale, down, stopped or never).")
	for _, d := range ds {
		up := 0.0
		if d.State == spool.HealthUp {
			up = 1
		}
		e.sample("msched_daemon_up", up, "daemon", d.Daemon, "state", d.State)
	}
	e.family("msched_daemon_heartbeat_timestamp_seconds", "gauge", "When the daemon last wrote its heartbeat.")
	for _, d := range ds {
		if !d.LastBeat.IsZero() {
			e.sample("msched_daemon_heartbeat_timestamp_seconds", float64(d.LastBeat.UnixMilli())/1e3, "daemon", d.Daemon)
		}
	}
	now := h.cfg.Now()
	e.family("msched_daemon_heartbeat_age_seconds", "gauge", "Seconds since the daemon last wrote its heartbeat (every 5 s while it runs); none for a daemon never started.")
	for _, d := range ds {
		if !d.LastBeat.IsZero() {
			e.sample("msched_daemon_heartbeat_age_seconds", max(now.Sub(d.LastBeat).Seconds(), 0), "daemon", d.Daemon)
		}
	}
	// The queue is the reaper's (mode 0700): a page run as another user
	// cannot count it, and says nothing rather than 0.
	if n, err := notify.QueueLength(h.cfg.Spool.Path(spool.DirDB)); err == nil {
		e.family("msched_mail_queue_length", "gauge", "Mails (reports, begin notices) waiting for delivery in db/mailq/.")
		e.sample("msched_mail_queue_length", float64(n))
	}
	rs, err := readAccounting(h.cfg.Spool)
	if err != nil {
		return err
	}
	ended := map[string]int{}
	wait := newHisto(waitBuckets)
	for _, r := range rs {
		ended[string(r.End())]++
		if !r.StartedAt.IsZero() && !r.SubmittedAt.IsZero() {
			wait.observe(max(r.StartedAt.Sub(r.SubmittedAt).Seconds(), 0))
		}
	}
	e.family("msched_jobs_finished_total", "counter", "Jobs that left the spool, by outcome (completed: exit status 0; failed; killed: a signal; cancelled; rejected), as the accounting log holds them (from zero after it is rotated).")
	for _, o := range outcomes {
		e.sample("msched_jobs_finished_total", float64(ended[o]), "outcome", o)
	}
	e.family("msched_job_wait_seconds", "histogram", "Time from submission to start of the jobs in the accounting log that started.")
	e.histogram("msched_job_wait_seconds", wait)
	acc := predictionAccuracy(rs)
	e.family("msched_prediction_jobs", "gauge", "Jobs in the accounting log with a predicted and an actual run time, by model (exe:NAME: jobs without one).")
	for _, a := range acc {
		e.sample("msched_prediction_jobs", float64(a.n), "model", a.model)
	}
	e.family("msched_prediction_error_seconds", "gauge", "Mean signed prediction error, predicted minus actual, by model.")
	for _, a := range acc {
		e.sample("msched_prediction_error_seconds", a.sum/float64(a.n), "model", a.model)
	}
	e.family("msched_prediction_mape_ratio", "gauge", "Mean absolute percentage error of predicted run times (a fraction), over the jobs of at least 10 s.")
	for _, a := range acc {
		if a.nLong > 0 {
			e.sample("msched_prediction_mape_ratio", a.sumPct/float64(a.nLong), "model", a.model)
		}
	}
	e.family("msched_prediction_short_abs_error_seconds", "gauge", "Mean absolute prediction error of the jobs shorter than 10 s, whose percentage error says nothing.")
	for _, a := range acc {
		if a.n > a.nLong {
			e.sample("msched_prediction_short_abs_error_seconds", a.sumShort/float64(a.n-a.nLong), "model", a.model)
		}
	}
	return nil
}

// outcomes are the values of msched_jobs_finished_total's outcome label,
// every one always present (a series that appears only once it is
// non-zero breaks rate()).
var outcomes = []string{string(acct.EndCompleted), string(acct.EndFailed), string(acct.EndKilled), string(acct.EndCancelled), string(acct.EndRejected)}

// waitBuckets are the wait-time histogram's upper bounds, seconds: a
// second to a day.
var waitBuckets = []float64{1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 24 * 3600}

// histo is a cumulative histogram.
type histo struct {
	bounds []float64
	counts []uint64 // observations ≤ bounds[i]
	n      uint64
	sum    float64
}

func newHisto(bounds []float64) histo {
	return histo{bounds: bounds, counts: make([]uint64, len(bounds))}
}

func (h *histo) observe(v float64) {
	for i := len(h.bounds) - 1; i >= 0 && v <= h.bounds[i]; i-- {
		h.counts[i]++
	}
	h.n++
	h.sum += v
}

// modelError is one model's prediction errors.
type modelError struct {
	model    string
	n, nLong int     // jobs, and those of at least learn.PercentFloor
	sum      float64 // Σ predicted − actual
	sumPct   float64 // Σ |predicted − actual| / actual over the long jobs
	sumShort float64 // Σ |predicted − actual| over the short ones
}

// predictionAccuracy is each model's errors over the records with a
// prediction and an actual run time, by modelKey, sorted by it.
func predictionAccuracy(rs []acct.Record) []*modelError {
	by := map[string]*modelError{}
	for _, r := range rs {
		if r.PredictedSeconds == nil || r.ActualSeconds == nil {
			continue
		}
		p, a := *r.PredictedSeconds, *r.ActualSeconds
		if math.IsNaN(p) || math.IsInf(p, 0) || math.IsNaN(a) || math.IsInf(a, 0) || a < 0 {
			continue
		}
		k := modelKey(r)
		m := by[k]
		if m == nil {
			m = &modelError{model: k}
			by[k] = m
		}
		m.n++
		m.sum += p - a
		if a >= learn.PercentFloor.Seconds() {
			m.nLong++
			m.sumPct += math.Abs(p-a) / a
		} else {
			m.sumShort += math.Abs(p - a)
		}
	}
	out := make([]*modelError, 0, len(by))
	for _, m := range by {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *modelError) int { return strings.Compare(a.model, b.model) })
	return out
}

// labelEscaper escapes a label value as the exposition format says:
// backslash, double quote and line feed.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func formatFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
