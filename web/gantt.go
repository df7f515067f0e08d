package web

import (
	"fmt"
	"time"

	"msched/spool"
)

// The Gantt chart's geometry, in SVG user units (pixels at 100 %). The
// chart scales to the page width (viewBox), so these fix proportions: a
// label column wide enough for host names like "node12/cpu31", rows tall
// enough for a line of 11 px text.
const (
	ganttWidth   = 1100.0
	ganttLabelW  = 150.0
	ganttRowH    = 20.0
	ganttAxisH   = 34.0
	ganttPadR    = 12.0
	ganttMinSpan = 2 * time.Minute // a chart shorter than this looks like noise
	// ganttLabelMin is the bar width under which the bar carries no text
	// (its tooltip still names the job): 7 px per character of "J000123".
	ganttLabelMin = 50.0
)

// Gantt is the laid-out chart that the template draws.
type Gantt struct {
	Width, Height float64
	PlotX, PlotW  float64
	AxisY         float64
	Rows          []GanttRow
	Bars          []GanttBar
	Ticks         []GanttTick
	NowX          float64
	NowIn         bool // the now line is inside the plot
	From, To      time.Time
	Policy        string
	GeneratedAt   time.Time
	Empty         bool
	Standalone    bool // an SVG document of its own (/schedule.svg), not inline
}

// GanttRow is one host.
type GanttRow struct {
	Name  string
	Title string // tooltip: arch, cluster
	Y     float64
	TextY float64
	Odd   bool
}

// GanttBar is one job on one host.
type GanttBar struct {
	JID, Name, State string
	X, Y, W, H       float64
	TextX, TextY     float64
	Label            string // "" when the bar is too narrow
	Title            string
	ClipID           string
}

// GanttTick is one time-axis tick.
type GanttTick struct {
	X     float64
	Label string
}

// tickSteps are the tick intervals tried, smallest first: the first giving
// at most maxTicks ticks over the span is used.
var tickSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
	2 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 28 * 24 * time.Hour,
}

const maxTicks = 10

// layoutGantt lays out sched at time now: one row per host (in the
// schedule's order), a bar per job and host from start to predicted end.
// The time axis runs from a little before the earliest start shown (never
// before a tenth of the span ahead of now) to the latest end.
func layoutGantt(sched *spool.PublishedSchedule, now time.Time) Gantt {
	g := Gantt{Width: ganttWidth, PlotX: ganttLabelW, PlotW: ganttWidth - ganttLabelW - ganttPadR, AxisY: ganttAxisH}
	if sched == nil || len(sched.Hosts) == 0 {
		g.Empty = true
		g.Height = ganttAxisH + ganttRowH
		return g
	}
	g.Policy, g.GeneratedAt = sched.Policy, sched.GeneratedAt
	from, to := now, now
	for _, j := range sched.Jobs {
		if j.Start.Before(from) {
			from = j.Start
		}
		if j.End.After(to) {
			to = j.End
		}
	}
	if to.Sub(from) < ganttMinSpan {
		to = from.Add(ganttMinSpan)
	}
	// Running jobs may have started long ago; keep now in the first third
	// so the future (the plan) gets most of the width.
	if span := to.Sub(now); from.Before(now.Add(-span / 2)) {
		from = now.Add(-span / 2)
	}
	pad := to.Sub(from) / 40
	from, to = from.Add(-pad), to.Add(pad)
	g.From, g.To = from, to
	span := to.Sub(from).Seconds()
	x := func(t time.Time) float64 {
		v := g.PlotX + g.PlotW*t.Sub(from).Seconds()/span
		if v < g.PlotX {
			return g.PlotX
		}
		if v > g.PlotX+g.PlotW {
			return g.PlotX + g.PlotW
		}
		return v
	}
	row := map[string]int{}
	for i, h := range sched.Hosts {
		row[h.Name] = i
		y := ganttAxisH + float64(i)*ganttRowH
		title := h.Name + " · " + h.Arch
		if h.Cluster != "" {
			title += " · cluster " + h.Cluster
		}
		g.Rows = append(g.Rows, GanttRow{Name: h.Name, Title: title, Y: y, TextY: y + ganttRowH*0.7, Odd: i%2 == 1})
	}
	g.Height = ganttAxisH + float64(len(sched.Hosts))*ganttRowH + 4
	for _, j := range sched.Jobs {
		x0, x1 := x(j.Start), x(j.End)
		if x1-x0 < 2 {
			x1 = x0 + 2 // a job is never invisible
		}
		label := j.JID
		if j.Name != "" {
			label += " " + j.Name
		}
		title := fmt.Sprintf("%s (%s) · %s → %s · predicted %s · %d host(s)",
			label, j.State, clock(j.Start), clock(j.End), dur(j.PredictedSeconds), len(j.Hosts))
		for _, h := range j.Hosts {
			i, ok := row[h]
			if !ok {
				continue
			}
			y := ganttAxisH + float64(i)*ganttRowH
			b := GanttBar{JID: j.JID, Name: j.Name, State: j.State, X: x0, Y: y + 2, W: x1 - x0, H: ganttRowH - 4,
				TextX: x0 + 4, TextY: y + ganttRowH*0.7, Title: title, ClipID: fmt.Sprintf("c%d", len(g.Bars))}
			if b.W >= ganttLabelMin {
				b.Label = label
			}
			g.Bars = append(g.Bars, b)
		}
	}
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if to.Sub(from)/s <= maxTicks {
			step = s
			break
		}
	}
	layout := "15:04"
	if step < time.Minute {
		layout = "15:04:05"
	} else if step >= 24*time.Hour {
		layout = "Jan 2"
	} else if to.Sub(from) > 24*time.Hour {
		layout = "Jan 2 15:04"
	}
	for t := from.Truncate(step).Add(step); !t.After(to); t = t.Add(step) {
		g.Ticks = append(g.Ticks, GanttTick{X: x(t), Label: t.UTC().Format(layout)})
	}
	g.NowX = x(now)
	g.NowIn = !now.Before(from) && !now.After(to)
	return g
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05") }

// dur renders seconds as a short duration ("1h2m", "45s").
func dur(secs float64) string {
	d := time.Duration(secs * float64(time.Second))
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd%dh", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", d/time.Hour, d%time.Hour/time.Minute)
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}
