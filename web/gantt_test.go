package web

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"msched/policy"
	"msched/spool"
)

func TestOverrunMarginMatchesPolicy(t *testing.T) {
	if overrunMargin != policy.OverrunMargin {
		t.Fatalf("web's overrunMargin %v, policy.OverrunMargin %v", overrunMargin, policy.OverrunMargin)
	}
}

// overrunSchedule is what sched publishes while J000001 runs past its
// prediction: the overrun rule shows it ending OverrunMargin after the
// decision, and J000002, planned behind it on host a, starting then.
func overrunSchedule(now time.Time) (*spool.PublishedSchedule, map[string]jobFacts) {
	started := now.Add(-10 * time.Minute)
	gen := now.Add(-30 * time.Second)
	s := &spool.PublishedSchedule{GeneratedAt: gen, Hosts: []spool.PublishedHost{{Name: "m/cpu0"}, {Name: "m/cpu1"}, {Name: "solo"}},
		Jobs: []spool.PublishedJob{
			{JID: "J000001", State: "running", Hosts: []string{"m/cpu0"}, Start: started, End: gen.Add(time.Second), PredictedSeconds: gen.Add(time.Second).Sub(started).Seconds()},
			{JID: "J000002", State: "planned", Hosts: []string{"m/cpu0", "m/cpu1"}, Start: gen.Add(time.Second), End: gen.Add(time.Second + 5*time.Minute), PredictedSeconds: 300},
			{JID: "J000003", State: "planned", Hosts: []string{"m/cpu0"}, Start: gen.Add(time.Second + 5*time.Minute), End: gen.Add(time.Second + 6*time.Minute), PredictedSeconds: 60},
			{JID: "J000004", State: "running", Hosts: []string{"solo"}, Start: now.Add(-time.Minute), End: now.Add(time.Minute), PredictedSeconds: 120},
			{JID: "J000005", State: "planned", Hosts: []string{"solo"}, Start: now.Add(time.Minute), End: now.Add(3 * time.Minute), PredictedSeconds: 120},
		}}
	facts := map[string]jobFacts{
		// Its file: predicted 4 minutes, started 10 minutes ago.
		"J000001": {User: "alice", Read: true, Started: started, PredictedEnd: started.Add(4 * time.Minute), Walltime: time.Hour},
		"J000002": {User: "bob"}, "J000003": {User: "alice"}, "J000004": {User: "carol"}, "J000005": {User: "carol"},
	}
	return s, facts
}

// A running job past its prediction is drawn from its start to now, the
// part past its predicted end hatched; the plan behind it on its hosts
// starts where it is drawn to end, and what follows moves with it; the
// other hosts' plans are as published.
func TestGantt_OverrunExtendsAndShiftsThePlan(t *testing.T) {
	now := testNow
	s, facts := overrunSchedule(now)
	g := layoutGanttWith(ganttInput{Sched: s, Now: now, Facts: facts})
	bars := map[string][]GanttBar{}
	for _, b := range g.Bars {
		bars[b.JID] = append(bars[b.JID], b)
	}
	ms := func(t time.Time) int64 { return t.UnixMilli() }
	over := bars["J000001"][0]
	if !over.Overrun || over.T1 != ms(now) || over.PredT != ms(now.Add(-6*time.Minute)) || g.Overruns != 1 {
		t.Errorf("overrunning bar: overrun %v, ends %v (want now %v), predicted end %v", over.Overrun, over.T1, ms(now), over.PredT)
	}
	if over.PredX >= over.PX+over.PW || over.OverW <= 0 || !strings.Contains(over.Title, "OVERRUN by 6m0s") || !strings.Contains(over.Label, "+6m0s") {
		t.Errorf("overrun part: pred x %v, bar %v..%v, width %v, title %q, label %q", over.PredX, over.PX, over.PX+over.PW, over.OverW, over.Title, over.Label)
	}
	for _, b := range bars["J000002"] {
		if b.T0 != ms(now) || b.T1 != ms(now.Add(5*time.Minute)) || !b.Shifted {
			t.Errorf("J000002 on %v: %v..%v shifted %v, want from now for 5m", b.Y, b.T0, b.T1, b.Shifted)
		}
	}
	if b := bars["J000003"][0]; b.T0 != ms(now.Add(5*time.Minute)) || !b.Shifted {
		t.Errorf("J000003: starts %v, want after J000002 as drawn (%v)", b.T0, ms(now.Add(5*time.Minute)))
	}
	if b := bars["J000005"][0]; b.T0 != ms(now.Add(time.Minute)) || b.Shifted || bars["J000004"][0].Overrun {
		t.Errorf("the other host's plan moved: J000005 %v shifted %v", b.T0, b.Shifted)
	}
	// Without the job file the overrun is still seen (from the rule's
	// mark), though its true predicted end is not known.
	delete(facts, "J000001")
	g = layoutGanttWith(ganttInput{Sched: s, Now: now, Facts: facts})
	if g.Overruns != 1 {
		t.Errorf("from the schedule alone: %d overruns, want 1", g.Overruns)
	}
	// A job that has left running/ since is not drawn as overrunning.
	facts["J000001"] = jobFacts{Gone: true}
	if g = layoutGanttWith(ganttInput{Sched: s, Now: now, Facts: facts}); g.Overruns != 0 {
		t.Errorf("a job that ended: %d overruns", g.Overruns)
	}
}

// Hosts are grouped by machine (a header row for a machine of several
// slots, the slots labelled by their own names), the label column fits the
// longest label, each user has one colour with a legend entry, and a job
// on two hosts gets a link between its rows.
func TestGantt_MachinesUsersLinks(t *testing.T) {
	now := testNow
	s, facts := overrunSchedule(now)
	long := "a-rather-long-host-name.cluster.example.org"
	s.Hosts = append(s.Hosts, spool.PublishedHost{Name: long})
	g := layoutGanttWith(ganttInput{Sched: s, Now: now, Facts: facts})
	if len(g.Groups) != 1 || g.Groups[0].Name != "m" || !strings.Contains(g.Groups[0].Figures, "2 slots") {
		t.Fatalf("groups %+v", g.Groups)
	}
	labels := map[string]string{}
	for _, r := range g.Rows {
		labels[r.Name] = r.Label
	}
	if labels["m/cpu0"] != "cpu0" || labels["solo"] != "solo" || labels[long] != long {
		t.Errorf("row labels %v", labels)
	}
	if need := float64(len(long)) * ganttCharW; g.PlotX < need {
		t.Errorf("label column %v px, %q needs %v", g.PlotX, long, need)
	}
	colour := map[string]string{}
	for _, b := range g.Bars {
		if c, ok := colour[b.User]; ok && c != b.Colour {
			t.Errorf("user %s in two colours", b.User)
		}
		colour[b.User] = b.Colour
	}
	if len(g.Legend) != 3 || colour["alice"] == colour["bob"] || colour["bob"] == colour["carol"] || colour["alice"] == colour["carol"] {
		t.Errorf("legend %+v, colours %v", g.Legend, colour)
	}
	if len(g.Links) != 1 || g.Links[0].JID != "J000002" || g.Links[0].Y2 <= g.Links[0].Y1 {
		t.Errorf("links %+v", g.Links)
	}
	for _, tk := range g.Ticks {
		if tk.Label != "" && (tk.X < ganttTickMargin || tk.X > g.PlotW-ganttTickMargin) {
			t.Errorf("tick %q at %v would be cut", tk.Label, tk.X)
		}
	}
	// A user keeps their colour whoever else is on the chart.
	if a := userColours([]string{"alice", "zed"})["alice"]; a != colour["alice"] {
		t.Errorf("alice's colour changed with the users around her: %s, %s", a, colour["alice"])
	}
}

// The overview reads the running job's prediction from its file when the
// published schedule shows it overrunning, and says so in the Running box,
// the chart and the hosts table; Free at no longer says "in 1s".
func TestOverview_OverrunningJob(t *testing.T) {
	b := fixture{Jobs: 60, Hosts: 6, Now: testNow}.build(t)
	jid := b.running[0]
	var pub spool.PublishedSchedule
	path := filepath.Join(b.sp.Path(spool.DirDB), spool.ScheduleFile)
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &pub); err != nil {
		t.Fatal(err)
	}
	// An hour later, sched shows the job ending a second after its decision.
	now := testNow.Add(time.Hour)
	pub.GeneratedAt = now.Add(-2 * time.Second)
	for i := range pub.Jobs {
		if pub.Jobs[i].JID == jid {
			pub.Jobs[i].End = pub.GeneratedAt.Add(time.Second)
		}
	}
	data, _ = json.Marshal(pub)
	if err := spool.WriteAtomic(b.sp.Path(spool.DirDB), spool.ScheduleFile, data); err != nil {
		t.Fatal(err)
	}
	h := handlerFor(b, now, "")
	page := get(t, h, "/").Body.String()
	for _, s := range []string{`class="bar overrun" data-jid="` + jid + `"`, `class="overrun-part" data-jid="` + jid + `"`,
		`⚠ overrun +`, `overrun: <a`, `running jobs past their predicted end`} {
		if !strings.Contains(page, s) && !strings.Contains(page, strings.Replace(s, "overrun: <a", "overrun: "+jid, 1)) {
			t.Errorf("overview lacks %q", s)
		}
	}
	var hosts []HostView
	decode(t, get(t, h, "/api/hosts"), &hosts)
	for _, hv := range hosts {
		for _, r := range hv.Running {
			if r == jid && (len(hv.Overrun) == 0 || !hv.FreeAt.IsZero()) {
				t.Errorf("host %s: overrun %v, free at %v", hv.Name, hv.Overrun, hv.FreeAt)
			}
		}
	}
	var j JobView
	decode(t, get(t, h, "/api/jobs/"+jid), &j)
	if j.ElapsedSeconds == nil || j.OverrunSeconds == nil || *j.OverrunSeconds < 3000 || j.RemainingSeconds == nil || *j.RemainingSeconds != 0 {
		t.Errorf("api/jobs/%s: elapsed %v overrun %v remaining %v", jid, j.ElapsedSeconds, j.OverrunSeconds, j.RemainingSeconds)
	}
}
