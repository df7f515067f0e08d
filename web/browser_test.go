package web

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"msched/spool"
)

// The browser tests drive Debian's chromium over the DevTools protocol
// (chromedp) against the handler on a loopback test server. They skip only
// when /usr/bin/chromium is missing outside CI; in CI (.ci/run installs
// chromium) a missing browser is a failure.

const chromiumPath = "/usr/bin/chromium"

var update = flag.Bool("update", false, "rewrite docs/overview.png from TestScreenshot")

func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("%s not installed (apt-get install chromium); CI installs it", chromiumPath)
		}
		t.Fatalf("CI is set but %s is missing: .ci/run must install chromium", chromiumPath)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox, // root in CI
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		// Loopback only: every other name fails to resolve.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	// The first call starts the browser and must not have a timeout (it
	// would stop the browser); the steps after it get one.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancel3 := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancel3)
	return ctx
}

func css(s string) chromedp.CSS { return chromedp.CSS(s) }

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// countBars returns the Gantt chart's bars by data-state, and how many
// have a rendered width (getBBox) of at least one pixel.
const countBarsJS = `(() => {
  const out = {running: 0, planned: 0, visible: 0};
  for (const r of document.querySelectorAll('#gantt rect[data-state]')) {
    out[r.getAttribute('data-state')] = (out[r.getAttribute('data-state')] || 0) + 1;
    if (r.getBBox().width >= 1) out.visible++;
  }
  return out;
})()`

func TestBrowser_GanttShowsRunningAndPlannedBars(t *testing.T) {
	ctx := browser(t)
	now := time.Now().UTC()
	b := fixture{Jobs: 120, Hosts: 12, Now: now}.build(t)
	h := New(Config{Spool: b.sp, HostsFile: filepath.Join(b.sp.Path(spool.DirDB), "hosts.yaml"), Refresh: 300 * time.Millisecond})
	srv := httptest.NewServer(h)
	defer srv.Close()

	want := map[string]int{}
	var pub spool.PublishedSchedule
	data, _ := os.ReadFile(filepath.Join(b.sp.Path(spool.DirDB), spool.ScheduleFile))
	if err := json.Unmarshal(data, &pub); err != nil {
		t.Fatal(err)
	}
	for _, j := range pub.Jobs {
		want[j.State] += len(j.Hosts)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(css(`#gantt rect[data-state="running"]`)),
	); err != nil {
		t.Fatal(err)
	}
	got := eval[map[string]int](t, ctx, countBarsJS)
	eval[bool](t, ctx, `window.__notReloaded = true`)
	if got["running"] != want["running"] || got["planned"] != want["planned"] || got["running"] == 0 || got["planned"] == 0 {
		t.Fatalf("bars in the browser %v, want %v", got, want)
	}
	if got["visible"] != got["running"]+got["planned"] {
		t.Errorf("%d of %d bars have no width", got["running"]+got["planned"]-got["visible"], got["running"]+got["planned"])
	}

	// The schedule changes (one more planned job on two hosts): the page
	// picks it up by itself, in place, without reloading.
	pub.Jobs = append(pub.Jobs, spool.PublishedJob{JID: "J999001", Name: "late", State: "planned",
		Hosts: []string{pub.Hosts[0].Name, pub.Hosts[1].Name}, Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), PredictedSeconds: 3600})
	pub.GeneratedAt = time.Now().UTC()
	data, _ = json.Marshal(pub)
	if err := spool.WriteAtomic(b.sp.Path(spool.DirDB), spool.ScheduleFile, data); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`#gantt rect[data-jid="J999001"]`))); err != nil {
		t.Fatal(err)
	}
	n := eval[int](t, ctx, `document.querySelectorAll('#gantt rect[data-jid="J999001"][data-state="planned"]').length`)
	same := eval[bool](t, ctx, `window.__notReloaded === true`)
	if n != 2 || !same {
		t.Errorf("after the update: %d bars of the new job (want 2), page kept (no reload): %v", n, same)
	}
}

func TestBrowser_JobPageShowsHistory(t *testing.T) {
	ctx := browser(t)
	now := time.Now().UTC()
	b := fixture{Jobs: 60, Hosts: 6, Now: now}.build(t)
	srv := httptest.NewServer(New(Config{Spool: b.sp, Token: "tok"}))
	defer srv.Close()
	jid := b.byState[spool.Running][0]
	_, j, err := b.sp.Find(jid)
	if err != nil {
		t.Fatal(err)
	}
	// From the overview, follow the job's link in the running list.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.Click(css(fmt.Sprintf(`section[data-state="running"] a[href$="/jobs/%s"]`, jid))),
		chromedp.WaitVisible(css(`#history`)),
	); err != nil {
		t.Fatal(err)
	}
	title := eval[string](t, ctx, `document.title`)
	state := eval[string](t, ctx, `document.getElementById('state').textContent`)
	rows := eval[int](t, ctx, `document.querySelectorAll('#history tbody tr[data-state]').length`)
	if rows != len(j.History) || !strings.HasPrefix(state, "running") || !strings.HasPrefix(title, jid) {
		t.Fatalf("job page: title %q, state %q, %d history rows (want %d)", title, state, rows, len(j.History))
	}

	// Log in with the token, cancel the job with the form's button: the
	// request appears in control/.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/login?next="+jid),
		chromedp.SendKeys(css(`input[name="token"]`), "tok"),
		chromedp.Submit(css(`input[name="token"]`)),
		chromedp.WaitVisible(css(`#cancel`)),
		chromedp.Click(css(`#cancel`)),
		chromedp.WaitVisible(css(`.note`)),
	); err != nil {
		t.Fatal(err)
	}
	if !cancelRequested(t, b.sp, jid) {
		t.Error("no cancel request after the button")
	}
}

// httpServer serves h on a loopback test server for the test's life and
// returns its URL.
func httpServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// waitFor polls ok every half second until it holds, or fails the test
// after d.
func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting %s for %s", d, what)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
