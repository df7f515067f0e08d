package spool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// ScheduleFile is the schedule the sched daemon publishes in db/ after
// every decision, for the status page and `msched status`: the one file of
// db/ with two packages on either side of it (the writer, daemons; the
// readers, web), so its format lives here with the spool's other formats.
const ScheduleFile = "schedule.json"

// PublishedSchedule is the content of db/schedule.json.
type PublishedSchedule struct {
	GeneratedAt time.Time       `json:"generated_at"`
	Policy      string          `json:"policy"`
	Hosts       []PublishedHost `json:"hosts"`
	Jobs        []PublishedJob  `json:"jobs"`
	// Held are the waiting jobs sched holds back from its policy, with
	// why: read them with HeldReason.
	Held []PublishedHold `json:"held,omitempty"`
}

// ReadSchedule reads the schedule sched last published (db/schedule.json);
// nil, and no error, before its first decision. The status page and the
// command line read it so.
func (s *Spool) ReadSchedule() (*PublishedSchedule, error) {
	b, err := os.ReadFile(filepath.Join(s.Path(DirDB), ScheduleFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("spool: schedule: %w", err)
	}
	var p PublishedSchedule
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("spool: %s: %w", ScheduleFile, err)
	}
	return &p, nil
}

// PublishedHold is one reason sched holds waiting jobs back from its
// policy, and which jobs: those of JIDs (waiting for their dependencies),
// or, for an array at its limit of members running at once (ArrayJob),
// every waiting member of the array from From on, in JID order (sched lets
// the lowest-numbered members go first).
type PublishedHold struct {
	Reason   string   `json:"reason"`
	JIDs     []string `json:"jids,omitempty"`
	ArrayJob string   `json:"array_job,omitempty"`
	From     string   `json:"from,omitempty"`
}

// HeldReason is why sched holds j back, as it last published ("waiting
// for J000010", "array J000012: 10 of its jobs running, at most 10 at
// once"), or "" if it does not: the pending reason of a job waiting in
// queued/ or scheduling/ that its hosts do not explain. p may be nil.
func (p *PublishedSchedule) HeldReason(j *Job) string {
	if p == nil || j == nil {
		return ""
	}
	for _, h := range p.Held {
		if h.ArrayJob == "" && slices.Contains(h.JIDs, j.JID) {
			return h.Reason
		}
	}
	for _, h := range p.Held {
		if h.ArrayJob != "" && h.ArrayJob == j.ArrayJob && !JIDLess(j.JID, h.From) {
			return h.Reason
		}
	}
	return ""
}

// PublishedHost is one host of the published schedule.
type PublishedHost struct {
	Name    string  `json:"name"`
	Arch    string  `json:"arch"`
	Cluster string  `json:"cluster,omitempty"`
	Load    float64 `json:"load"`
}

// PublishedJob is one bar of the Gantt chart: a running job (running, or
// placed and about to start) or a planned one, on each of its hosts.
type PublishedJob struct {
	JID              string    `json:"jid"`
	Name             string    `json:"name,omitempty"`
	State            string    `json:"state"` // running | planned
	Hosts            []string  `json:"hosts"`
	Start            time.Time `json:"start"`
	End              time.Time `json:"end"`
	PredictedSeconds float64   `json:"predicted_seconds"`
}
