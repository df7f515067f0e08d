package web

import (
	"fmt"
	"net/http"
	"time"

	"msched/acct"
	"msched/spool"
)

// The usage chart: how many jobs waited, and what share of the hosts ran
// jobs, over the last day (or hour, or six). Its source is the spool's own
// record of jobs, not samples: the accounting log's records (submitted,
// started and ended times, hosts) of the jobs that ended, and the job
// files of those still in the spool (waiting since they were submitted,
// running since they started). So it is exact for every job the log and
// the spool hold, with two limits: a job cancelled while it waited has no
// recorded end of its wait and is left out of the queue; and a waiting job
// whose file is not read (beyond the overview's limit per state) counts
// from its file's modification time, when it entered its directory. The
// stats daemon's samples (load averages) say how busy the machines were,
// which includes work that is not msched's; they are on the hosts table.
//
// A CGI program builds the chart on every request that shows it, so it is
// not part of the overview's 5-second refresh: the page fetches /usage
// once a minute, and the log is read back only as far as the chart's
// window (scanBack), at most usageReadLimit bytes.

// usageReadLimit bounds what the chart reads of the accounting log: about
// 20,000 records, a day of a busy installation. A chart whose window goes
// back further than that says from when it is complete.
const usageReadLimit = 8 << 20

// usageOldRun is how many records in a row older than the window end the
// scan: records are in reaping order, which is nearly the order of their
// ends, so a few late ones do not stop it early.
const usageOldRun = 64

// usageSpans are the chart's windows: span and bucket.
var usageSpans = []struct {
	Name   string
	Span   time.Duration
	Bucket time.Duration
}{
	{"1h", time.Hour, time.Minute},
	{"6h", 6 * time.Hour, 5 * time.Minute},
	{"24h", 24 * time.Hour, 15 * time.Minute},
}

const defaultUsageSpan = "24h"

// usageEndedReadLimit bounds the jobs of finished/ and rejected/ the chart
// parses (their start and hosts).
const usageEndedReadLimit = 50

// UsagePoint is one bucket of the chart.
type UsagePoint struct {
	Start time.Time `json:"start"`
	// Utilisation is the share of host time busy with jobs: running
	// jobs' host-seconds over hosts × the bucket's length.
	Utilisation float64 `json:"utilisation"`
	// Queue is the mean number of jobs waiting (submitted, not started).
	Queue float64 `json:"queue"`
	Ended int     `json:"ended"` // jobs that ended in the bucket
}

// Usage is the chart's data (/api/usage) and layout.
type Usage struct {
	Span     string       `json:"span"`
	From     time.Time    `json:"from"`
	To       time.Time    `json:"to"`
	BucketS  float64      `json:"bucket_seconds"`
	Hosts    int          `json:"hosts"`
	Points   []UsagePoint `json:"points"`
	Complete bool         `json:"complete"`           // the log was read back to From
	ReadFrom time.Time    `json:"read_from,omitzero"` // not complete: the chart is whole from here
	// Jobs that ended in the window, by outcome class (RecentJob.Class).
	Ended     int      `json:"ended"`
	OK        int      `json:"ok"`
	Failed    int      `json:"failed"`
	Cancelled int      `json:"cancelled"`
	Rejected  int      `json:"rejected"`
	MeanUtil  float64  `json:"mean_utilisation"`
	PeakQueue float64  `json:"peak_queue"` // the largest bucket mean
	Source    string   `json:"source"`
	Errors    []string `json:"errors,omitempty"`
	Spans     []string `json:"-"`
	// Layout.
	Width, Height, PlotX, PlotW, PlotY, PlotH float64     `json:"-"`
	Bars                                      []usageBar  `json:"-"`
	QueueLine                                 string      `json:"-"` // SVG points
	Ticks                                     []GanttTick `json:"-"`
	QueueTop                                  float64     `json:"-"` // the right axis's top value
}

type usageBar struct {
	X, Y, W, H float64
	Title      string
}

const usageSource = "accounting log (db/accounting.jsonl) and the spool's job files"

// interval is a stretch of time with a weight (hosts busy, or one job
// waiting).
type interval struct {
	from, to time.Time
	w        float64
}

// usageData builds the chart for span ("1h", "6h", "24h") as of now from
// the log, what the request read of the spool (sv: the first jobs of each
// state, the listing of all), the schedule (running jobs' starts) and the
// number of hosts.
func (h *handler) usageData(span string, now time.Time, sv spoolView, sched *spool.PublishedSchedule, hostCount int) Usage {
	u := Usage{Span: span, Source: usageSource}
	for _, s := range usageSpans {
		u.Spans = append(u.Spans, s.Name)
	}
	spanD, bucket := 24*time.Hour, 15*time.Minute
	for _, s := range usageSpans {
		if s.Name == span {
			spanD, bucket = s.Span, s.Bucket
		}
	}
	u.To = now.Truncate(bucket).Add(bucket)
	u.From = u.To.Add(-spanD)
	u.BucketS = bucket.Seconds()

	var busy, waiting []interval
	ended := func(class string, at time.Time) {
		if at.Before(u.From) || at.After(now) {
			return
		}
		u.Ended++
		switch class {
		case classOK:
			u.OK++
		case classFailed:
			u.Failed++
		case classCancelled:
			u.Cancelled++
		case classRejected:
			u.Rejected++
		}
		if i := int(at.Sub(u.From) / bucket); i >= 0 && i < len(u.Points) {
			u.Points[i].Ended++
		}
	}
	u.Points = make([]UsagePoint, int(spanD/bucket))

	// The spool: jobs waiting, running, and ended but not yet reaped,
	// from the views the request read (the first of each state) and the
	// listing of the rest (see above).
	read := map[string]JobView{}
	for _, v := range sv.read() {
		if v.JID != "" && v.Invalid == "" {
			read[v.JID] = v
		}
	}
	scheduled := map[string]spool.PublishedJob{}
	if sched != nil {
		for _, j := range sched.Jobs {
			if j.State == "running" {
				scheduled[j.JID] = j
			}
		}
	}
	seen := map[string]bool{}
	for _, st := range spool.States {
		for _, e := range sv.Entries[st] {
			v, ok := read[e.Name]
			switch st {
			case spool.Submitted, spool.Queued, spool.Scheduling, spool.Runnable:
				from := e.ModTime
				if ok && !v.SubmittedAt.IsZero() {
					from = v.SubmittedAt
				}
				waiting = append(waiting, interval{from, now, 1})
			case spool.Running:
				switch p, inSched := scheduled[e.Name]; {
				case ok && !v.StartedAt.IsZero():
					busy = append(busy, interval{v.StartedAt, now, float64(max(len(v.Hosts), 1))})
					if !v.SubmittedAt.IsZero() {
						waiting = append(waiting, interval{v.SubmittedAt, v.StartedAt, 1})
					}
				case inSched:
					busy = append(busy, interval{p.Start, now, float64(max(len(p.Hosts), 1))})
				default:
					busy = append(busy, interval{e.ModTime, now, 1})
				}
			case spool.Finished, spool.Rejected:
				seen[e.Name] = true
				if !ok {
					// Not read: ended when it entered its directory,
					// of no known class.
					ended("", e.ModTime)
					continue
				}
				if !v.StartedAt.IsZero() {
					end := v.EndedAt
					if end.IsZero() {
						end = v.StartedAt
					}
					busy = append(busy, interval{v.StartedAt, end, float64(max(len(v.Hosts), 1))})
					if !v.SubmittedAt.IsZero() {
						waiting = append(waiting, interval{v.SubmittedAt, v.StartedAt, 1})
					}
				}
				at := v.EndedAt
				if n := len(v.History); at.IsZero() && n > 0 {
					at = v.History[n-1].At
				}
				ended(recentFromView(v).Class, at)
			}
		}
	}

	// The log, from its end back to the window's start.
	old := 0
	var earliest time.Time
	complete, err := scanBack(h.cfg.Spool, usageReadLimit, func(line []byte) bool {
		r, ok := acct.ParseRecordLine(line)
		if !ok {
			return true
		}
		if r.Latest().Before(u.From) {
			old++
			return old < usageOldRun
		}
		old = 0
		if earliest.IsZero() || r.Latest().Before(earliest) {
			earliest = r.Latest()
		}
		if seen[r.JID] {
			return true
		}
		if !r.StartedAt.IsZero() {
			end := r.EndedAt
			if end.IsZero() {
				end = r.StartedAt
			}
			busy = append(busy, interval{r.StartedAt, end, float64(max(len(r.Hosts), 1))})
			if !r.SubmittedAt.IsZero() {
				waiting = append(waiting, interval{r.SubmittedAt, r.StartedAt, 1})
			}
		} else if !r.SubmittedAt.IsZero() && !r.EndedAt.IsZero() {
			waiting = append(waiting, interval{r.SubmittedAt, r.EndedAt, 1})
		}
		at := r.EndedAt
		if at.IsZero() {
			at = r.Latest()
		}
		x := recentFromRecord(&r)
		ended(x.Class, at)
		return true
	})
	if err != nil {
		u.Errors = append(u.Errors, h.shown(err))
	}
	u.Complete = complete
	if !complete {
		u.ReadFrom = earliest
	}

	u.Hosts = hostCount

	b := bucket.Seconds()
	add := func(ivs []interval, f func(p *UsagePoint, v float64)) {
		for _, iv := range ivs {
			if !iv.to.After(u.From) || iv.from.After(u.To) || !iv.to.After(iv.from) {
				continue
			}
			a, z := max(iv.from.Sub(u.From).Seconds(), 0), min(iv.to.Sub(u.From).Seconds(), spanD.Seconds())
			for i := int(a / b); i < len(u.Points) && float64(i)*b < z; i++ {
				lo, hi := max(a, float64(i)*b), min(z, float64(i+1)*b)
				if hi > lo {
					f(&u.Points[i], iv.w*(hi-lo)/b)
				}
			}
		}
	}
	add(busy, func(p *UsagePoint, v float64) { p.Utilisation += v })
	add(waiting, func(p *UsagePoint, v float64) { p.Queue += v })
	var sum float64
	var n int
	for i := range u.Points {
		p := &u.Points[i]
		p.Start = u.From.Add(time.Duration(i) * bucket)
		if u.Hosts > 0 {
			p.Utilisation /= float64(u.Hosts)
		} else {
			p.Utilisation = 0
		}
		// The bucket still under way is measured up to now only.
		if end := p.Start.Add(bucket); end.After(now) {
			if part := now.Sub(p.Start).Seconds() / b; part > 0 {
				p.Utilisation /= part
				p.Queue /= part
			}
		}
		if !p.Start.After(now) {
			sum += p.Utilisation
			n++
		}
		u.PeakQueue = max(u.PeakQueue, p.Queue)
	}
	if n > 0 {
		u.MeanUtil = sum / float64(n)
	}
	u.layout(now)
	return u
}

// The chart's geometry: utilisation as bars against the left axis (0 to
// 100 %), the queue as a line against the right one.
const (
	usageWidth  = 1100.0
	usageHeight = 130.0
	usagePlotX  = 46.0
	usagePadR   = 46.0
	usagePlotY  = 8.0
	usageAxisH  = 22.0
)

func (u *Usage) layout(now time.Time) {
	u.Width, u.Height = usageWidth, usageHeight
	u.PlotX, u.PlotY = usagePlotX, usagePlotY
	u.PlotW, u.PlotH = usageWidth-usagePlotX-usagePadR, usageHeight-usagePlotY-usageAxisH
	u.QueueTop = niceTop(u.PeakQueue)
	n := float64(len(u.Points))
	if n == 0 {
		return
	}
	bw := u.PlotW / n
	var line []byte
	for i, p := range u.Points {
		if p.Start.After(now) {
			break
		}
		x := u.PlotX + float64(i)*bw
		util := min(p.Utilisation, 1)
		h := u.PlotH * util
		title := fmt.Sprintf("%s–%s UTC: utilisation %.0f%%, %.1f jobs waiting (mean), %d ended",
			p.Start.UTC().Format("15:04"), p.Start.Add(time.Duration(u.BucketS*float64(time.Second))).UTC().Format("15:04"),
			100*p.Utilisation, p.Queue, p.Ended)
		u.Bars = append(u.Bars, usageBar{X: x + 0.5, Y: u.PlotY + u.PlotH - h, W: max(bw-1, 0.5), H: h, Title: title})
		qy := u.PlotY + u.PlotH*(1-p.Queue/u.QueueTop)
		line = fmt.Appendf(line, "%.1f,%.1f ", x+bw/2, qy)
	}
	u.QueueLine = string(line)
	u.Ticks = ticks(u.From, u.To, u.PlotW)
	for i := range u.Ticks {
		u.Ticks[i].X += u.PlotX
	}
}

// niceTop is a round value at or above v for an axis's top (at least 1).
func niceTop(v float64) float64 {
	for _, t := range []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000} {
		if v <= t {
			return t
		}
	}
	return v
}

func usageSpan(r *http.Request) string {
	s := r.URL.Query().Get("span")
	for _, x := range usageSpans {
		if x.Name == s {
			return s
		}
	}
	return defaultUsageSpan
}

// usagePage is /usage: the chart alone, which the overview fetches once a
// minute (?fragment=1).
func (h *handler) usagePage(w http.ResponseWriter, r *http.Request) {
	u := h.usageAlone(usageSpan(r))
	h.render(w, r, "usage", "Usage", &u)
}

func (h *handler) apiUsage(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, h.usageAlone(usageSpan(r)))
}

// usageAlone reads what the chart needs and builds it: the states it
// uses, the schedule and the hosts.
func (h *handler) usageAlone(span string) Usage {
	now := h.cfg.Now()
	var errs []string
	sv, es := readSpool(h.cfg.Spool, h.cfg.OverviewLimit, now, spool.States...)
	for _, err := range es {
		errs = append(errs, h.shown(err))
	}
	sched, err := h.cfg.Spool.ReadSchedule()
	if err != nil {
		errs = append(errs, h.shown(err))
	}
	hv, err := h.hosts(sched, nil)
	if err != nil {
		errs = append(errs, h.shown(err))
	}
	u := h.usageData(span, now, sv, sched, len(hv))
	u.Errors = append(errs, u.Errors...)
	return u
}
