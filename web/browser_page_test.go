package web

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"msched/daemons"
	"msched/spool"
)

// A job that finishes is reaped by the real reaper at once; the page still
// lists it under recent jobs, with its user and command, and its owner's
// job can be resubmitted from its page: a new file in submitted/, owned by
// the job's owner, with the job's command.
func TestBrowser_FinishedJobInRecentAndResubmitted(t *testing.T) {
	ctx := browser(t)
	now := time.Now().UTC()
	b := fixture{Jobs: 30, Hosts: 4, Now: now}.build(t)
	// A finished job of this test's user, as the run daemon leaves it.
	jid := b.byState[spool.Finished][0]
	j, err := b.sp.Read(spool.Finished, jid)
	if err != nil {
		t.Fatal(err)
	}
	me := os.Geteuid()
	j.User, j.UID = spool.UserName(me), &me
	j.Name, j.Command, j.Workdir, j.Notify, j.Model = "greeting", []string{"/bin/echo", "hello world"}, "/tmp", "", nil
	data, err := j.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := spool.WriteAtomic(b.sp.Dir(spool.Finished), jid, data); err != nil {
		t.Fatal(err)
	}
	// The only job to reap: the fixture's other ended jobs go.
	for _, st := range []spool.State{spool.Finished, spool.Rejected} {
		for _, other := range b.byState[st] {
			if other != jid {
				os.Remove(filepath.Join(b.sp.Dir(st), other))
			}
		}
	}
	// The reaper reports it, records it and removes its file.
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (&daemons.Reaper{Env: daemons.Env{Spool: b.sp, Log: slog.New(slog.DiscardHandler), Rescan: time.Second}}).Run(rctx)
	}()
	waitFor(t, 30*time.Second, "the reaper", func() bool {
		n, _ := b.sp.Names(spool.Finished)
		r, _ := findRecord(b.sp, jid)
		return len(n) == 0 && r != nil
	})
	stop()
	<-done

	srv := httpServer(t, New(Config{Spool: b.sp, Token: "tok", Refresh: time.Hour, Log: slog.New(slog.DiscardHandler)}))
	row := fmt.Sprintf(`#recent tr[data-jid="%s"]`, jid)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv+"/"),
		chromedp.WaitVisible(css(row)),
	); err != nil {
		t.Fatal(err)
	}
	text := eval[string](t, ctx, fmt.Sprintf(`document.querySelector('%s').innerText`, row))
	if !strings.Contains(text, "greeting") || !strings.Contains(text, spool.UserName(me)) || !strings.Contains(text, "/bin/echo 'hello world'") || !strings.Contains(text, "ok") {
		t.Errorf("recent jobs row: %q", text)
	}
	if n := eval[int](t, ctx, `document.querySelector('section[data-state="finished"] .count').textContent|0`); n != 0 {
		t.Errorf("finished/ still counts %d", n)
	}
	// Its page, from the recent list and the filtered list; then log in
	// and resubmit.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv+"/recent?user="+spool.UserName(me)),
		chromedp.WaitVisible(css(fmt.Sprintf(`tr[data-jid="%s"] a[href$="/jobs/%s"]`, jid, jid))),
		chromedp.Click(css(fmt.Sprintf(`tr[data-jid="%s"] a[href$="/jobs/%s"]`, jid, jid))),
		chromedp.WaitVisible(css(`#state`)),
	); err != nil {
		t.Fatal(err)
	}
	if page := eval[string](t, ctx, `document.body.innerText`); !strings.Contains(page, "has left the spool") || !strings.Contains(page, "hello world") {
		t.Errorf("the reaped job's page: %q", page)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv+"/login?next="+jid),
		chromedp.SendKeys(css(`input[name="token"]`), "tok"),
		chromedp.Submit(css(`input[name="token"]`)),
		chromedp.WaitVisible(css(`#resubmit`)),
		chromedp.Click(css(`#resubmit`)),
		chromedp.WaitVisible(css(`#message`)),
	); err != nil {
		t.Fatal(err)
	}
	es, _ := b.sp.List(spool.Submitted)
	var got *spool.Job
	for _, e := range es {
		if strings.HasPrefix(e.Name, "resubmit-"+jid) {
			got, _ = b.sp.Read(spool.Submitted, e.Name)
			if uid := ownerOf(t, filepath.Join(b.sp.Dir(spool.Submitted), e.Name)); uid != me {
				t.Errorf("resubmission owned by uid %d, want the job's owner %d", uid, me)
			}
		}
	}
	if got == nil || got.Name != "greeting" || !slices.Equal(got.Command, []string{"/bin/echo", "hello world"}) || got.Workdir != "/tmp" {
		t.Fatalf("resubmission %+v", got)
	}
}

// A running job past its predicted end: its bar runs on to the now line,
// beyond the predicted end marked on it, and the plan behind it on its
// host starts where it ends.
func TestBrowser_OverrunningBarExtendsPastItsPredictedEnd(t *testing.T) {
	ctx := browser(t)
	now := time.Now().UTC()
	b := fixture{Jobs: 60, Hosts: 6, Now: now.Add(-time.Hour)}.build(t)
	var pub spool.PublishedSchedule
	data, _ := os.ReadFile(filepath.Join(b.sp.Path(spool.DirDB), spool.ScheduleFile))
	if err := json.Unmarshal(data, &pub); err != nil {
		t.Fatal(err)
	}
	// An hour on, sched shows its running jobs as the overrun rule does:
	// ending a second after its decision, the plan behind them then.
	jid := b.running[0]
	var host string
	pub.GeneratedAt = now.Add(-2 * time.Second)
	for i := range pub.Jobs {
		pj := &pub.Jobs[i]
		if pj.State == "running" {
			pj.End = pub.GeneratedAt.Add(time.Second)
			if pj.JID == jid {
				host = pj.Hosts[0]
			}
		} else {
			d := pj.End.Sub(pj.Start)
			pj.Start = pub.GeneratedAt.Add(time.Second)
			pj.End = pj.Start.Add(d)
		}
	}
	pub.Jobs = append(pub.Jobs, spool.PublishedJob{JID: "J999001", Name: "next", State: "planned", Hosts: []string{host},
		Start: pub.GeneratedAt.Add(time.Second), End: pub.GeneratedAt.Add(time.Second + 10*time.Minute), PredictedSeconds: 600})
	data, _ = json.Marshal(pub)
	if err := spool.WriteAtomic(b.sp.Path(spool.DirDB), spool.ScheduleFile, data); err != nil {
		t.Fatal(err)
	}
	srv := httpServer(t, New(Config{Spool: b.sp, HostsFile: filepath.Join(b.sp.Path(spool.DirDB), "hosts.yaml"), Refresh: time.Hour,
		Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler)}))
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv+"/"),
		chromedp.WaitVisible(css(fmt.Sprintf(`#gantt .bar.overrun[data-jid="%s"]`, jid))),
	); err != nil {
		t.Fatal(err)
	}
	geo := eval[map[string]float64](t, ctx, fmt.Sprintf(`(() => {
	  const g = document.querySelector('#gantt .bar.overrun[data-jid="%s"]');
	  const r = g.querySelector('.bar-rect').getBBox(), h = g.querySelector('.overrun-part').getBBox();
	  const next = document.querySelector('#gantt .bar-rect[data-jid="J999001"]').getBBox();
	  return {start: r.x, end: r.x + r.width, pred: +g.querySelector('.pred-end').getAttribute('x1'), hatchFrom: h.x, hatchTo: h.x + h.width,
	    now: +document.querySelector('#gantt .now line').getAttribute('x1'), next: next.x};
	})()`, jid))
	if !(geo["pred"] > geo["start"] && geo["end"] > geo["pred"]+20) {
		t.Errorf("the bar (%.1f to %.1f) does not extend past its predicted end (%.1f)", geo["start"], geo["end"], geo["pred"])
	}
	if abs(geo["end"]-geo["now"]) > 1 || abs(geo["hatchFrom"]-geo["pred"]) > 1 || abs(geo["hatchTo"]-geo["end"]) > 1 {
		t.Errorf("the bar ends at %.1f, now is %.1f; hatched %.1f to %.1f, predicted end %.1f", geo["end"], geo["now"], geo["hatchFrom"], geo["hatchTo"], geo["pred"])
	}
	if geo["next"] < geo["end"]-1 {
		t.Errorf("the job planned behind it starts at %.1f, inside the overrunning bar (ends %.1f)", geo["next"], geo["end"])
	}
	box := eval[string](t, ctx, `document.querySelector('section[data-state="running"]').innerText`)
	if !strings.Contains(box, "overrun +") || !strings.Contains(box, "predicted") {
		t.Errorf("the running box does not mark the overrun: %q", box)
	}
}

func abs(x float64) float64 { return max(x, -x) }

// The health line and the banner say when a daemon stops, and the page
// picks it up by itself.
func TestBrowser_StoppedSchedShows(t *testing.T) {
	ctx := browser(t)
	b := fixture{Jobs: 20, Hosts: 4, Now: time.Now().UTC()}.build(t)
	hearts := map[spool.Daemon]*spool.Heart{}
	for _, d := range spool.Daemons {
		hearts[d] = b.sp.As(d).Heart(d)
		if err := hearts[d].Beat(); err != nil {
			t.Fatal(err)
		}
	}
	srv := httpServer(t, New(Config{Spool: b.sp, Refresh: 300 * time.Millisecond, Log: slog.New(slog.DiscardHandler)}))
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv+"/"),
		chromedp.WaitVisible(css(`#health .daemon[data-daemon="sched"][data-state="up"]`)),
	); err != nil {
		t.Fatal(err)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('.daemons-trouble').length`); n != 0 {
		t.Errorf("a banner while every daemon is up")
	}
	if err := hearts[spool.Sched].Stop(); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`#health .daemon[data-daemon="sched"][data-state="stopped"]`))); err != nil {
		t.Fatal(err)
	}
	banner := eval[string](t, ctx, `document.querySelector('.daemons-trouble').innerText`)
	health := eval[string](t, ctx, `document.getElementById('health').innerText`)
	if !strings.Contains(banner, "sched stopped") || !strings.Contains(health, "sched stopped") || strings.Contains(banner, "init") {
		t.Errorf("banner %q, health line %q", banner, health)
	}
}

// The chart zooms and pans with its buttons, keeps the window through a
// refresh, and hovering a parallel job highlights all its rows.
func TestBrowser_GanttZoomPanHover(t *testing.T) {
	ctx := browser(t)
	now := time.Now().UTC()
	b := fixture{Jobs: 120, Hosts: 12, Now: now}.build(t)
	srv := httpServer(t, New(Config{Spool: b.sp, HostsFile: filepath.Join(b.sp.Path(spool.DirDB), "hosts.yaml"),
		Refresh: 500 * time.Millisecond, Log: slog.New(slog.DiscardHandler)}))
	if err := chromedp.Do(ctx, chromedp.Navigate(srv+"/"), chromedp.WaitVisible(css(`#gantt .bar`))); err != nil {
		t.Fatal(err)
	}
	// A planned job on several hosts.
	jid := eval[string](t, ctx, `(() => {
	  const n = {};
	  for (const b of document.querySelectorAll('#gantt .bar[data-state="planned"]')) n[b.dataset.jid] = (n[b.dataset.jid] || 0) + 1;
	  return Object.keys(n).find(k => n[k] > 1) || '';
	})()`)
	if jid == "" {
		t.Fatal("no job on several hosts in the chart")
	}
	width := func() float64 {
		return eval[float64](t, ctx, fmt.Sprintf(`document.querySelector('#gantt .bar-rect[data-jid="%s"]').getBBox().width`, jid))
	}
	w0 := width()
	if err := chromedp.Do(ctx, chromedp.Click(css(`#gantt-zoom button[data-zoom="in"]`))); err != nil {
		t.Fatal(err)
	}
	if w1 := width(); abs(w1-2*w0) > 1 {
		t.Errorf("zoomed in: width %.1f, want twice %.1f", w1, w0)
	}
	x0 := eval[float64](t, ctx, fmt.Sprintf(`document.querySelector('#gantt .bar-rect[data-jid="%s"]').getBBox().x`, jid))
	if err := chromedp.Do(ctx, chromedp.Click(css(`#gantt-zoom button[data-zoom="right"]`))); err != nil {
		t.Fatal(err)
	}
	x1 := eval[float64](t, ctx, fmt.Sprintf(`document.querySelector('#gantt .bar-rect[data-jid="%s"]').getBBox().x`, jid))
	plotW := eval[float64](t, ctx, `+document.getElementById('gantt').getAttribute('data-plotw')`)
	if abs((x0-x1)-plotW/4) > 1 {
		t.Errorf("panned later by a quarter: the bar moved from %.1f to %.1f (plot %.1f wide)", x0, x1, plotW)
	}
	// The window stays through the live refresh.
	updates := eval[int](t, ctx, `+(document.getElementById('live').getAttribute('data-updates') || 0)`)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(fmt.Sprintf(`#live[data-updates="%d"]`, updates+2)))); err != nil {
		t.Fatal(err)
	}
	if x2 := eval[float64](t, ctx, fmt.Sprintf(`document.querySelector('#gantt .bar-rect[data-jid="%s"]').getBBox().x`, jid)); abs(x2-x1) > 1 {
		t.Errorf("after a refresh the bar is at %.1f, was %.1f: the zoom was lost", x2, x1)
	}
	if err := chromedp.Do(ctx, chromedp.Click(css(`#gantt-zoom button[data-zoom="reset"]`))); err != nil {
		t.Fatal(err)
	}
	if w := width(); abs(w-w0) > 1 {
		t.Errorf("after reset: width %.1f, want %.1f", w, w0)
	}
	// Hover one of its bars: all of them are highlighted, others dimmed.
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(css(fmt.Sprintf(`#gantt .bar[data-jid="%s"]`, jid)))); err != nil {
		t.Fatal(err)
	}
	hl := eval[map[string]int](t, ctx, fmt.Sprintf(`(() => {
	  const b = document.querySelector('#gantt .bar[data-jid="%s"]');
	  b.querySelector('.bar-rect').dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
	  return {hl: document.querySelectorAll('#gantt .bar.hl').length, all: document.querySelectorAll('#gantt .bar[data-jid="%s"]').length,
	    hovering: document.getElementById('gantt').classList.contains('hovering') ? 1 : 0};
	})()`, jid, jid))
	if hl["hl"] != hl["all"] || hl["all"] < 2 || hl["hovering"] != 1 {
		t.Errorf("hovering %s: %v", jid, hl)
	}
}
