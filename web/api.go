package web

import (
	"net/http"

	"msched/spool"
)

// The JSON API: the same data as the pages, for scripts. Lists are
// complete (no limit); times are RFC 3339 in UTC; durations are seconds.

// APIJobs is the answer of /api/jobs.
type APIJobs struct {
	Counts map[spool.State]int `json:"counts"`
	Jobs   []JobView           `json:"jobs"`
}

func (h *handler) apiJobs(w http.ResponseWriter, r *http.Request) {
	states, _, ok := stateQuery(w, r)
	if !ok {
		return
	}
	out := APIJobs{Counts: map[spool.State]int{}, Jobs: []JobView{}}
	for _, st := range states {
		sj, err := readState(h.cfg.Spool, st, -1)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		out.Counts[st] = sj.Count
		for _, v := range sj.Jobs {
			v.SetClock(h.cfg.Now())
			out.Jobs = append(out.Jobs, v)
		}
	}
	writeJSON(w, out)
}

func (h *handler) apiJob(w http.ResponseWriter, r *http.Request) {
	if v, ok := h.lookupOr404(w, r, "no job %q"); ok {
		v.SetClock(h.cfg.Now())
		writeJSON(w, v)
	}
}

func (h *handler) apiHosts(w http.ResponseWriter, r *http.Request) {
	sched, err := h.cfg.Spool.ReadSchedule()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	hv, err := h.hosts(sched, h.scheduleFacts(sched))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if hv == nil {
		hv = []HostView{}
	}
	writeJSON(w, hv)
}

// apiSchedule answers the published schedule as sched wrote it, or an
// empty one (no hosts, no jobs) before its first decision.
func (h *handler) apiSchedule(w http.ResponseWriter, r *http.Request) {
	sched, err := h.cfg.Spool.ReadSchedule()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if sched == nil {
		sched = &spool.PublishedSchedule{Hosts: []spool.PublishedHost{}, Jobs: []spool.PublishedJob{}}
	}
	writeJSON(w, sched)
}

func (h *handler) apiModels(w http.ResponseWriter, r *http.Request) {
	rs, err := readAccounting(h.cfg.Spool)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, accuracy(rs))
}

// apiDaemons answers each daemon's health from its heartbeat.
func (h *handler) apiDaemons(w http.ResponseWriter, r *http.Request) {
	ds, err := h.daemons()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, ds)
}
