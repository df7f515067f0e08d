package web

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"strings"

	"msched/spool"
)

// metrics writes the Prometheus text exposition format (version 0.0.4) by
// hand: a dozen gauges and counters read from the spool at scrape time do
// not need client_golang's registry, and a CGI program starts faster
// without it. Counters that come from the sched process (evaluator, GA)
// are present only when sched publishes db/evaluator.json; they restart
// from zero when sched restarts, which Prometheus's rate() handles.
func (h *handler) metrics(w http.ResponseWriter, r *http.Request) {
	var b bytes.Buffer
	metric := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	value := func(name string, v float64, labels ...string) {
		b.WriteString(name)
		if len(labels) > 0 {
			b.WriteByte('{')
			for i := 0; i+1 < len(labels); i += 2 {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%s=\"%s\"", labels[i], labelEscaper.Replace(labels[i+1]))
			}
			b.WriteByte('}')
		}
		fmt.Fprintf(&b, " %s\n", formatFloat(v))
	}

	metric("msched_jobs", "gauge", "Jobs in each spool state.")
	for _, st := range spool.States {
		es, err := h.cfg.Spool.List(st)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		value("msched_jobs", float64(len(es)), "state", string(st))
	}
	sched, err := readSchedule(h.cfg.Spool)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if sched != nil {
		metric("msched_hosts", "gauge", "Hosts in the published schedule.")
		value("msched_hosts", float64(len(sched.Hosts)))
		n := map[string]int{"running": 0, "planned": 0}
		for _, j := range sched.Jobs {
			n[j.State]++
		}
		metric("msched_schedule_jobs", "gauge", "Jobs in the published schedule, running or planned.")
		value("msched_schedule_jobs", float64(n["running"]), "kind", "running")
		value("msched_schedule_jobs", float64(n["planned"]), "kind", "planned")
		metric("msched_schedule_published_timestamp_seconds", "gauge", "When sched last published the schedule.")
		value("msched_schedule_published_timestamp_seconds", float64(sched.GeneratedAt.UnixMilli())/1e3)
	}
	if st := readSchedStats(h.cfg.Spool); st != nil {
		e := st.Evaluator
		metric("msched_evaluator_lookups_total", "counter", "Predictions asked of the evaluator since sched started.")
		value("msched_evaluator_lookups_total", float64(e.Lookups))
		metric("msched_evaluator_hits_total", "counter", "Evaluator lookups answered from a cache level.")
		value("msched_evaluator_hits_total", float64(e.L1Hits), "level", "memory")
		value("msched_evaluator_hits_total", float64(e.L2Hits), "level", "disk")
		metric("msched_evaluator_model_calls_total", "counter", "Performance model calls (cache misses).")
		value("msched_evaluator_model_calls_total", float64(e.ModelCalls))
		metric("msched_evaluator_cache_hit_ratio", "gauge", "Fraction of evaluator lookups answered by either cache level.")
		value("msched_evaluator_cache_hit_ratio", e.HitRate())
		if g := st.Generations; g != nil {
			metric("msched_ga_generations_total", "counter", "GA generations bred since sched started.")
			value("msched_ga_generations_total", float64(*g))
			if secs := st.GeneratedAt.Sub(st.StartedAt).Seconds(); secs > 0 {
				metric("msched_ga_generations_per_second", "gauge", "GA generations per second of sched's uptime.")
				value("msched_ga_generations_per_second", float64(*g)/secs)
			}
		}
		metric("msched_sched_stats_timestamp_seconds", "gauge", "When sched last published these counters.")
		value("msched_sched_stats_timestamp_seconds", float64(st.GeneratedAt.UnixMilli())/1e3)
	}
	ds, err := h.daemons()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	metric("msched_daemon_up", "gauge", "1 when the daemon's heartbeat is fresh, else 0 (state: up, stale, down, stopped or never).")
	for _, d := range ds {
		up := 0.0
		if d.State == spool.HealthUp {
			up = 1
		}
		value("msched_daemon_up", up, "daemon", d.Daemon, "state", d.State)
	}
	metric("msched_daemon_heartbeat_timestamp_seconds", "gauge", "When the daemon last wrote its heartbeat.")
	for _, d := range ds {
		if !d.LastBeat.IsZero() {
			value("msched_daemon_heartbeat_timestamp_seconds", float64(d.LastBeat.UnixMilli())/1e3, "daemon", d.Daemon)
		}
	}
	rs, err := readAccounting(h.cfg.Spool)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	acc := accuracy(rs)
	metric("msched_prediction_jobs", "gauge", "Jobs in the accounting log with a predicted and an actual run time.")
	for _, a := range acc {
		value("msched_prediction_jobs", float64(a.Count), "model", a.Model)
	}
	metric("msched_prediction_mape_ratio", "gauge", "Mean absolute percentage error of predicted run times (a fraction).")
	for _, a := range acc {
		if a.MAPECount > 0 {
			value("msched_prediction_mape_ratio", a.MAPE, "model", a.Model)
		}
	}
	metric("msched_prediction_error_seconds", "gauge", "Mean signed prediction error, predicted minus actual.")
	for _, a := range acc {
		if a.Count > 0 {
			value("msched_prediction_error_seconds", a.MeanErrorS, "model", a.Model)
		}
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
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
	return fmt.Sprintf("%g", v)
}
