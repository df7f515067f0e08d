package web

import (
	"fmt"
	"hash/fnv"
	"html/template"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"msched/hoststat"
	"msched/spool"
)

// The Gantt chart's geometry, in SVG user units (pixels at 100 %). The
// chart scales to the page width (viewBox), so these fix proportions. The
// label column is as wide as the longest row label needs (ganttCharW per
// character of 11 px text), within bounds, so that no host name is cut.
const (
	ganttWidth     = 1100.0
	ganttLabelMinW = 90.0
	ganttLabelMaxW = 320.0
	ganttCharW     = 6.6
	ganttRowH      = 20.0
	ganttGroupH    = 18.0 // a machine's header row above its slots
	ganttAxisH     = 36.0
	ganttPadR      = 12.0
	ganttMinSpan   = 2 * time.Minute // a chart shorter than this looks like noise
	// ganttLabelMin is the bar width under which the bar carries no text
	// (its tooltip still names the job): 7 px per character of "J000123".
	ganttLabelMin = 50.0
	// ganttTickMargin keeps a tick's label whole: a tick closer than this
	// to either end of the plot is drawn without its label.
	ganttTickMargin = 26.0
)

// Gantt is the laid-out chart that the template draws. X coordinates of
// what moves with time (bars, ticks, the now line) are inside the plot
// (0 at its left edge): the template draws them in a nested <svg> that
// clips them, and the page's script moves them when the chart is zoomed
// or panned, from their times (data-t0, data-t1, data-t, in Unix ms).
type Gantt struct {
	Width, Height float64
	PlotX, PlotW  float64
	AxisY         float64
	Rows          []GanttRow
	Groups        []GanttGroup
	Bars          []GanttBar
	Links         []GanttLink
	Ticks         []GanttTick
	Legend        []UserColour
	Now           time.Time
	NowX          float64
	NowIn         bool // the now line is inside the plot
	From, To      time.Time
	Policy        string
	GeneratedAt   time.Time
	Overruns      int // running jobs past their predicted end
	Empty         bool
	Standalone    bool // an SVG document of its own (/schedule.svg), not inline
}

// FromMS and ToMS are the time axis's ends for the script.
func (g Gantt) FromMS() int64 { return g.From.UnixMilli() }
func (g Gantt) ToMS() int64   { return g.To.UnixMilli() }

// NowMS is now for the script.
func (g Gantt) NowMS() int64 { return g.Now.UnixMilli() }

// GanttRow is one host: a machine, or one CPU slot under its machine's
// header.
type GanttRow struct {
	Name   string // the host
	Label  string // the slot's name under its machine, else the host's
	Title  string // tooltip: arch, cluster
	Y      float64
	TextY  float64
	Odd    bool
	Indent bool // a slot: its label is indented under the machine's
}

// GanttGroup is the header row of a machine with several slots.
type GanttGroup struct {
	Name    string
	Figures string // machine-wide: slots, load, CPUs
	Y       float64
	TextY   float64
	H       float64
}

// GanttBar is one job on one host.
type GanttBar struct {
	JID, Name, State string
	User             string
	Colour           string
	// X and W are the part of the bar seen in the chart's coordinates
	// (within the plot, at least 2 wide); PX and PW are the whole bar in
	// the plot's, which the template draws and the plot clips.
	X, Y, W, H   float64
	PX, PW       float64
	T0, T1       int64 // displayed start and end, Unix ms
	TextX, TextY float64
	FullLabel    string // what the label says when the bar is wide enough
	Label        string // FullLabel cut to the bar's width; "" when too narrow
	Title        string
	// An overrunning running job: its bar runs to now, and the part past
	// its predicted end (PredX, at PredT) is hatched.
	Overrun bool
	PredX   float64
	PredT   int64
	OverW   float64 // the hatched part's width
	// A planned job moved later than sched planned it, behind an
	// overrunning job.
	Shifted bool
}

// The bars' geometry as attributes, formatted here rather than by a
// template call per number: a chart of a few hundred bars spent most of
// its rendering in those calls. Only numbers go in, so they need no
// escaping.

// Times are the bar's data-t0 and data-t1.
func (b GanttBar) Times() template.HTMLAttr {
	return template.HTMLAttr(fmt.Sprintf(`data-t0="%d" data-t1="%d"`, b.T0, b.T1))
}

// RectGeo places the bar's rectangle.
func (b GanttBar) RectGeo() template.HTMLAttr {
	return template.HTMLAttr(fmt.Sprintf(`data-t0="%d" data-t1="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f"`, b.T0, b.T1, b.PX, b.Y, b.PW, b.H))
}

// OverrunGeo places the hatched part of an overrunning bar.
func (b GanttBar) OverrunGeo() template.HTMLAttr {
	return template.HTMLAttr(fmt.Sprintf(`data-t0="%d" data-t1="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f"`, b.PredT, b.T1, b.PredX, b.Y, b.OverW, b.H))
}

// PredGeo places the mark of an overrunning bar's predicted end.
func (b GanttBar) PredGeo() template.HTMLAttr {
	return template.HTMLAttr(fmt.Sprintf(`data-t="%d" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"`, b.PredT, b.PredX, b.Y-2, b.PredX, b.Y+b.H+2))
}

// TextGeo places the bar's label.
func (b GanttBar) TextGeo() template.HTMLAttr {
	return template.HTMLAttr(fmt.Sprintf(`x="%.1f" y="%.1f"`, b.TextX, b.TextY))
}

// GanttLink joins the rows of a job on several hosts: a line at the start
// of its bars from the first row to the last.
type GanttLink struct {
	JID    string
	X      float64
	T      int64
	Y1, Y2 float64
	Colour string
}

// GanttTick is one time-axis tick.
type GanttTick struct {
	X     float64
	T     int64
	Label string // "" near the plot's ends, where it would be cut
}

// UserColour is one user's colour in the chart, for its legend.
type UserColour struct {
	User   string
	Colour string
}

// tickSteps are the tick intervals tried, smallest first: the first giving
// at most maxTicks ticks over the span is used. The page's script has the
// same list, for a zoomed chart.
var tickSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
	2 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 28 * 24 * time.Hour,
}

const maxTicks = 10

// userPalette are the users' colours: dark enough for white text on a
// running bar, none of them the red of the now line and of overruns.
var userPalette = []string{
	"#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#0f766e",
	"#b7791f", "#9d174d", "#4a5568", "#1e40af", "#7c2d12",
}

// unknownUserColour is the colour of a job whose user was not read.
const unknownUserColour = "#718096"

// userColours gives each user its colour: by a hash of its name, so that a
// user keeps its colour from one refresh to the next, moved on to the next
// free colour (users in name order) when two users' hashes collide.
func userColours(users []string) map[string]string {
	users = slices.Compact(slices.Sorted(slices.Values(users)))
	out := map[string]string{}
	taken := map[int]bool{}
	for _, u := range users {
		if u == "" {
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(u))
		k := int(h.Sum32() % uint32(len(userPalette)))
		for i := 0; i < len(userPalette) && taken[k]; i++ {
			k = (k + 1) % len(userPalette)
		}
		taken[k] = true
		out[u] = userPalette[k]
	}
	return out
}

// ganttInput is what layoutGantt draws.
type ganttInput struct {
	Sched *spool.PublishedSchedule
	Now   time.Time
	Facts map[string]jobFacts        // by JID (factsOf); nil: the schedule alone
	Stats map[string]*hoststat.Stats // latest sample by host, for the machines' figures
}

// layoutGantt lays out the schedule alone (no job files read).
func layoutGantt(sched *spool.PublishedSchedule, now time.Time) Gantt {
	return layoutGanttWith(ganttInput{Sched: sched, Now: now})
}

// shownJob is a bar's job as the chart shows it: running jobs from their
// start to their predicted end, or to now once past it; planned jobs
// after the running work of their hosts as shown.
type shownJob struct {
	spool.PublishedJob
	user       string
	start, end time.Time
	predEnd    time.Time // running: predicted end
	overrun    bool
	shiftedBy  string // planned: the overrunning job that moved it
	walltime   time.Duration
}

// showJobs applies the chart's rules to the schedule's jobs. A running job
// past its predicted end is drawn to now. A planned job starts no earlier
// than now (it has not started) nor than the end, as drawn, of what comes
// before it on each of its hosts: the jobs are taken in planned start
// order, so a job behind an overrunning one moves later, and what follows
// it on its hosts moves with it; its predicted duration is kept.
func showJobs(in ganttInput) []shownJob {
	s := in.Sched
	var out []shownJob
	free := map[string]time.Time{}
	freeBy := map[string]string{} // the overrunning job a host's free time comes from
	for _, j := range s.Jobs {
		if j.State != "running" {
			continue
		}
		f := in.Facts[j.JID]
		x := shownJob{PublishedJob: j, user: f.User, start: j.Start, walltime: f.Walltime}
		if f.Read {
			x.start = f.Started
		}
		x.predEnd, x.overrun = runningEnd(j, f, s.GeneratedAt, in.Now)
		if f.Gone {
			x.overrun = false // it has ended since sched published the schedule
		}
		x.end = x.predEnd
		if x.overrun && in.Now.After(x.end) {
			x.end = in.Now
		}
		for _, h := range j.Hosts {
			if x.end.After(free[h]) {
				free[h] = x.end
				freeBy[h] = ""
				if x.overrun {
					freeBy[h] = j.JID
				}
			}
		}
		out = append(out, x)
	}
	var planned []spool.PublishedJob
	for _, j := range s.Jobs {
		if j.State != "running" {
			planned = append(planned, j)
		}
	}
	sort.SliceStable(planned, func(a, b int) bool { return planned[a].Start.Before(planned[b].Start) })
	for _, j := range planned {
		x := shownJob{PublishedJob: j, user: in.Facts[j.JID].User, start: j.Start}
		for _, h := range j.Hosts {
			if free[h].After(x.start) {
				x.start, x.shiftedBy = free[h], freeBy[h]
			}
		}
		if x.start.Before(in.Now) {
			x.start = in.Now
		}
		x.end = x.start.Add(j.End.Sub(j.Start))
		for _, h := range j.Hosts {
			if x.end.After(free[h]) {
				free[h], freeBy[h] = x.end, x.shiftedBy
			}
		}
		out = append(out, x)
	}
	return out
}

// layoutGanttWith lays out the schedule at time now: hosts grouped by
// machine (a header row per machine of several slots), a bar per job and
// host, coloured by user. The time axis runs from a little before the
// earliest start shown (never further back than half the span ahead of
// now) to the latest end.
func layoutGanttWith(in ganttInput) Gantt {
	sched, now := in.Sched, in.Now
	g := Gantt{Width: ganttWidth, AxisY: ganttAxisH}
	if sched == nil || len(sched.Hosts) == 0 {
		g.PlotX = ganttLabelMinW
		g.PlotW = g.Width - g.PlotX - ganttPadR
		g.Empty = true
		g.Height = ganttAxisH + ganttRowH
		return g
	}
	g.Policy, g.GeneratedAt = sched.Policy, sched.GeneratedAt
	jobs := showJobs(in)

	// Rows, grouped by machine in the order of each machine's first host.
	type group struct {
		name  string
		hosts []spool.PublishedHost
	}
	var groups []*group
	byName := map[string]*group{}
	for _, h := range sched.Hosts {
		m, slot := machineOf(h.Name)
		if slot == "" {
			m = "\x00" + h.Name // a machine of its own: never merged with a machine named like it
		}
		gr := byName[m]
		if gr == nil {
			gr = &group{name: m}
			byName[m] = gr
			groups = append(groups, gr)
		}
		gr.hosts = append(gr.hosts, h)
	}
	labelChars := 0
	for _, gr := range groups {
		for _, h := range gr.hosts {
			n := len([]rune(h.Name))
			if len(gr.hosts) > 1 {
				n = 2 + len([]rune(slotName(h.Name)))
			}
			labelChars = max(labelChars, n)
		}
	}
	g.PlotX = min(max(12+float64(labelChars)*ganttCharW, ganttLabelMinW), ganttLabelMaxW)
	g.PlotW = g.Width - g.PlotX - ganttPadR

	row := map[string]int{}
	y := ganttAxisH
	for _, gr := range groups {
		if len(gr.hosts) > 1 {
			m, _ := machineOf(gr.hosts[0].Name)
			g.Groups = append(g.Groups, GanttGroup{Name: m, Figures: machineFigures(gr.hosts, in.Stats), Y: y, TextY: y + ganttGroupH*0.72, H: ganttGroupH})
			y += ganttGroupH
		}
		for _, h := range gr.hosts {
			row[h.Name] = len(g.Rows)
			title := h.Name + " · " + h.Arch
			if h.Cluster != "" {
				title += " · cluster " + h.Cluster
			}
			r := GanttRow{Name: h.Name, Label: h.Name, Title: title, Y: y, TextY: y + ganttRowH*0.7, Odd: len(g.Rows)%2 == 1}
			if len(gr.hosts) > 1 {
				r.Label, r.Indent = slotName(h.Name), true
			}
			g.Rows = append(g.Rows, r)
			y += ganttRowH
		}
	}
	g.Height = y + 4

	from, to := now, now
	for _, j := range jobs {
		if j.start.Before(from) {
			from = j.start
		}
		if j.end.After(to) {
			to = j.end
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
	x := func(t time.Time) float64 { return g.PlotW * t.Sub(from).Seconds() / span }

	var users []string
	for _, j := range jobs {
		users = append(users, j.user)
	}
	colours := userColours(users)
	for _, u := range slices.Sorted(maps.Keys(colours)) {
		g.Legend = append(g.Legend, UserColour{User: u, Colour: colours[u]})
	}
	if slices.Contains(users, "") {
		g.Legend = append(g.Legend, UserColour{User: "(not read)", Colour: unknownUserColour})
	}

	for _, j := range jobs {
		x0, x1 := x(j.start), x(j.end)
		label := j.JID
		if j.Name != "" {
			label += " " + j.Name
		}
		colour := colours[j.user]
		if colour == "" {
			colour = unknownUserColour
		}
		title := jobTitle(j, label, now)
		if j.overrun {
			g.Overruns++
			label += " +" + dur(now.Sub(j.predEnd).Seconds())
		}
		var ys []float64
		for _, h := range j.Hosts {
			i, ok := row[h]
			if !ok {
				continue
			}
			ry := g.Rows[i].Y
			ys = append(ys, ry)
			vx0, vx1 := min(max(x0, 0), g.PlotW), min(max(x1, 0), g.PlotW)
			b := GanttBar{JID: j.JID, Name: j.Name, State: j.State, User: j.user, Colour: colour,
				X: g.PlotX + min(vx0, g.PlotW-2), Y: ry + 2, W: max(vx1-vx0, 2), H: ganttRowH - 4,
				PX: x0, PW: max(x1-x0, 2), T0: j.start.UnixMilli(), T1: j.end.UnixMilli(),
				TextY: ry + ganttRowH*0.7, FullLabel: label, Title: title, Overrun: j.overrun, Shifted: j.shiftedBy != ""}
			b.TextX = max(x0, 0) + 4
			b.Label = fitLabel(label, min(x1, g.PlotW)-max(x0, 0))
			if j.overrun {
				b.PredX, b.PredT = x(j.predEnd), j.predEnd.UnixMilli()
				b.OverW = max(x1-b.PredX, 0)
			}
			g.Bars = append(g.Bars, b)
		}
		if len(ys) > 1 {
			g.Links = append(g.Links, GanttLink{JID: j.JID, X: x0 + 1.5, T: j.start.UnixMilli(),
				Y1: slices.Min(ys) + ganttRowH/2, Y2: slices.Max(ys) + ganttRowH/2, Colour: colour})
		}
	}
	g.Ticks = ticks(from, to, g.PlotW)
	g.Now, g.NowX = now, x(now)
	g.NowIn = !now.Before(from) && !now.After(to)
	return g
}

// jobTitle is a bar's tooltip.
func jobTitle(j shownJob, label string, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s · %s", label, j.State)
	if j.user != "" {
		fmt.Fprintf(&b, " · user %s", j.user)
	}
	fmt.Fprintf(&b, " · %d host(s)", len(j.Hosts))
	if j.State == "running" {
		fmt.Fprintf(&b, "\nstarted %s, %s ago", clock(j.start), dur(now.Sub(j.start).Seconds()))
		if j.overrun {
			fmt.Fprintf(&b, "\npredicted to end %s: OVERRUN by %s", clock(j.predEnd), dur(now.Sub(j.predEnd).Seconds()))
		} else {
			fmt.Fprintf(&b, "\npredicted end %s, in %s", clock(j.predEnd), dur(j.predEnd.Sub(now).Seconds()))
		}
		if j.walltime > 0 {
			left := j.start.Add(j.walltime).Sub(now)
			fmt.Fprintf(&b, "\nwalltime %s, %s left", dur(j.walltime.Seconds()), dur(max(left, 0).Seconds()))
		}
		return b.String()
	}
	fmt.Fprintf(&b, "\nplanned %s → %s (predicted %s)", clock(j.start), clock(j.end), dur(j.end.Sub(j.start).Seconds()))
	if j.shiftedBy != "" {
		fmt.Fprintf(&b, "\nshown %s later than sched planned it: %s runs past its predicted end", dur(j.start.Sub(j.Start).Seconds()), j.shiftedBy)
	}
	return b.String()
}

// machineFigures are a machine's figures for its header row: its slots
// and its latest sample (the same for every slot of it).
func machineFigures(hosts []spool.PublishedHost, stats map[string]*hoststat.Stats) string {
	s := fmt.Sprintf("%d slots", len(hosts))
	var latest *hoststat.Stats
	for _, h := range hosts {
		if st := stats[h.Name]; st != nil && (latest == nil || st.Time.After(latest.Time)) {
			latest = st
		}
	}
	if latest != nil {
		s += fmt.Sprintf(" · load %.2f", latest.Load1)
		if latest.NCPU > 0 {
			s += fmt.Sprintf(" on %d CPUs", latest.NCPU)
		}
	}
	return s
}

// fitLabel cuts a bar's label to what fits in w px ("" when nothing
// useful does); the page's script does the same on zoom.
func fitLabel(label string, w float64) string {
	if w < ganttLabelMin {
		return ""
	}
	n := int((w - 8) / ganttCharW)
	r := []rune(label)
	if len(r) <= n {
		return label
	}
	if n < 8 {
		return ""
	}
	return string(r[:n-1]) + "…"
}

// ticks are the time axis's ticks over [from, to] on a plot w wide.
func ticks(from, to time.Time, w float64) []GanttTick {
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
	span := to.Sub(from).Seconds()
	var out []GanttTick
	for t := from.Truncate(step).Add(step); !t.After(to); t = t.Add(step) {
		tx := w * t.Sub(from).Seconds() / span
		tk := GanttTick{X: tx, T: t.UnixMilli()}
		if tx >= ganttTickMargin && tx <= w-ganttTickMargin {
			tk.Label = t.UTC().Format(layout)
		}
		out = append(out, tk)
	}
	return out
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
