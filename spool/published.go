package spool

import "time"

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
