package web

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"msched/hoststat"
	"msched/spool"
)

// TestScreenshot takes the overview's picture for README.
//
// Without -update it is a quick check on the fixture that the page renders
// to a picture. With -update (go test ./web -run TestScreenshot -args
// -update; about two minutes) it makes docs/overview.png from a real run:
// it builds msched, starts `msched up` on a fresh spool with eight local
// CPU slots of this machine, submits 50 sleep jobs of several sizes (some
// parallel, one that sleeps far longer than its model predicts, two that
// fail, one cancelled while it waits) as this user and, when run as root,
// as the system's nobody and daemon users too (spool.SubmitAs, as the
// page's Resubmit does), waits until jobs have ended, run and wait and the
// long sleeper has overrun, and photographs the overview with its usage
// chart over the last hour and its Gantt chart zoomed in once (about now).
// It then cancels what is left and stops msched.
func TestScreenshot(t *testing.T) {
	if *update {
		realRunScreenshot(t)
		return
	}
	ctx := browser(t)
	now := time.Now().UTC().Truncate(time.Minute).Add(30 * time.Second)
	b := fixture{Jobs: 48, Hosts: 10, Now: now}.build(t)
	srv := httpServer(t, New(Config{Spool: b.sp, HostsFile: filepath.Join(b.sp.Path(spool.DirDB), "hosts.yaml"),
		OverviewLimit: 6, Now: func() time.Time { return now }}))
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(srv+"/"),
		chromedp.WaitVisible(css(`#gantt rect[data-state="planned"]`)),
		chromedp.WaitVisible(css(`#usage-chart`)),
	); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if len(png) < 20000 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot: %d bytes, not a PNG of a page", len(png))
	}
}

// screenshotJob is one job of the real run.
type screenshotJob struct {
	name    string
	argv    []string
	model   float64 // the sleep model's T1: the predicted seconds; 0: none
	hosts   int
	wall    string
	user    int // index into the run's users
	cancel  bool
	waitFor time.Duration // submitted this long after the start
}

func screenshotJobs() []screenshotJob {
	var js []screenshotJob
	sleep := func(s int) []string { return []string{"sleep", fmt.Sprint(s)} }
	// Short jobs that end within the first minute: the recent list.
	for i := 0; i < 12; i++ {
		s := 3 + i%5*2
		js = append(js, screenshotJob{name: []string{"render", "fft-2048", "bioseq", "lu-decomp"}[i%4], argv: sleep(s), model: float64(s), hosts: 1, user: i % 3})
	}
	js = append(js,
		screenshotJob{name: "postproc", argv: []string{"sh", "-c", "sleep 4; echo 'no input' >&2; exit 3"}, model: 4, hosts: 1, user: 1},
		screenshotJob{name: "checker", argv: []string{"false"}, model: 1, hosts: 1, user: 2},
	)
	// The one that sleeps far past its prediction.
	js = append(js, screenshotJob{name: "particles", argv: sleep(400), model: 4, hosts: 1, user: 0, wall: "10m"})
	// Long and parallel jobs, then the queue.
	for i := 0; i < 8; i++ {
		s := 120 + 20*i
		n := 1
		if i%3 == 1 {
			n = 2
		}
		js = append(js, screenshotJob{name: []string{"cfd-wing", "nbody", "sweep3d", "climate"}[i%4], argv: sleep(s), model: float64(s), hosts: n, user: i % 3, wall: "30m", waitFor: 15 * time.Second})
	}
	for i := 0; len(js) < 49; i++ {
		s := 60 + 15*(i%6)
		n := 1
		if i%5 == 2 {
			n = 2
		}
		js = append(js, screenshotJob{name: []string{"nbody", "render", "bioseq", "sweep3d", "fft-2048"}[i%5], argv: sleep(s), model: float64(s), hosts: n, user: i % 3, waitFor: 20 * time.Second})
	}
	js = append(js, screenshotJob{name: "typo", argv: sleep(30), model: 30, hosts: 1, user: 1, cancel: true, waitFor: 20 * time.Second})
	return js
}

func realRunScreenshot(t *testing.T) {
	bin := mschedBinary(t)
	dir := t.TempDir()
	// The other users' jobs write their output under the spool: let them
	// through the test's own directories (made 0700).
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spoolDir := filepath.Join(dir, "spool")
	sp, err := spool.Create(spoolDir)
	if err != nil {
		t.Fatal(err)
	}
	local, err := hoststat.LocalHosts()
	if err != nil {
		t.Fatal(err)
	}
	machine, _ := machineOf(local[0].Name)
	var hosts []hoststat.Host
	for i := 0; i < 8; i++ {
		hosts = append(hosts, hoststat.Host{Name: fmt.Sprintf("%s/cpu%d", machine, i), Arch: local[0].Arch, Cluster: machine, Address: "local"})
	}
	hostsFile := filepath.Join(dir, "hosts.yaml")
	if err := hoststat.WriteHosts(hostsFile, hosts); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	cmd := exec.Command(bin, "--spool", spoolDir, "up", "--hosts", hostsFile, "--web", addr)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MSCHED_STATS_INTERVAL=15s", "MSCHED_RESCAN=2s", "MSCHED_RUN_KILL_GRACE=2s",
		"MSCHED_LOG_LEVEL=warn", "MSCHED_RETENTION_OUTPUT_AGE=0", "MSCHED_RETENTION_REPORTS_AGE=0")
	logf, err := os.Create(filepath.Join(dir, "msched.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
	}
	defer func() {
		stop()
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "msched.log"))
			t.Logf("msched log:\n%s", log)
		}
	}()
	url := "http://" + addr
	waitFor(t, 30*time.Second, "the status page", func() bool {
		r, err := http.Get(url + "/api/daemons")
		if err == nil {
			r.Body.Close()
		}
		return err == nil && r.StatusCode == 200
	})

	users := []int{os.Getuid()}
	if os.Geteuid() == 0 {
		for _, name := range []string{"nobody", "daemon"} {
			if uid, ok := spool.UserID(name); ok {
				users = append(users, uid)
			}
		}
	}
	jobs := screenshotJobs()
	start := time.Now()
	for i, j := range jobs {
		if d := j.waitFor - time.Since(start); d > 0 {
			time.Sleep(d)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "name: %s\ncommand: [", j.name)
		for k, a := range j.argv {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q", a)
		}
		b.WriteString("]\nworkdir: /tmp\n")
		if j.model > 0 {
			fmt.Fprintf(&b, "model: {name: sleep, params: {T1: %g}}\n", j.model)
		}
		if j.hosts > 1 {
			fmt.Fprintf(&b, "hosts: {count: %d}\n", j.hosts)
		}
		if j.wall != "" {
			fmt.Fprintf(&b, "walltime: %s\n", j.wall)
		}
		name := fmt.Sprintf("job%02d.yaml", i)
		if _, err := sp.SubmitAs(name, []byte(b.String()), users[j.user%len(users)]); err != nil {
			t.Fatal(err)
		}
	}
	// Cancel the one marked so once init has given it a JID.
	cancel := map[string]bool{}
	for _, j := range jobs {
		if j.cancel {
			cancel[j.name] = true
		}
	}
	waitFor(t, 30*time.Second, "the submissions to be taken", func() bool {
		n, _ := sp.Names(spool.Submitted)
		return len(n) == 0
	})
	for _, st := range []spool.State{spool.Queued, spool.Scheduling, spool.Runnable} {
		names, _ := sp.Names(st)
		for _, n := range names {
			if _, j, err := sp.Find(n); err == nil && cancel[j.Name] {
				if err := sp.RequestCancel(n); err != nil {
					t.Fatal(err)
				}
			}
		}
	}

	// Wait for jobs that ended, ran and waited, and for the overrun.
	waitFor(t, 4*time.Minute, "ended, running, waiting and overrunning jobs", func() bool {
		r, err := http.Get(url + "/?fragment=1")
		if err != nil {
			return false
		}
		defer r.Body.Close()
		var page strings.Builder
		sc := bufio.NewScanner(r.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			page.WriteString(sc.Text())
		}
		running, _ := sp.Names(spool.Running)
		queued, _ := sp.Names(spool.Queued)
		return strings.Count(page.String(), `<tr data-jid=`) >= 10 && strings.Contains(page.String(), `class="bar overrun`) &&
			len(running) >= 6 && len(queued) >= 10 && time.Since(start) > 100*time.Second
	})

	ctx := browser(t)
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(url+"/?span=1h"),
		chromedp.WaitVisible(css(`#gantt .bar.overrun`)),
		chromedp.WaitVisible(css(`#usage-chart`)),
		// Zoomed in once about now, so that the overrun shows.
		chromedp.Click(css(`#gantt-zoom button[data-zoom="in"]`)),
	); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "docs", "overview.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote docs/overview.png (%d bytes) after %s of a real run", len(png), time.Since(start).Round(time.Second))

	// Cancel what is left, and let the run daemon kill it before stopping.
	for _, st := range []spool.State{spool.Queued, spool.Scheduling, spool.Runnable, spool.Running} {
		names, _ := sp.Names(st)
		for _, n := range names {
			_ = sp.RequestCancel(n)
		}
	}
	waitFor(t, 2*time.Minute, "the jobs to be cancelled", func() bool {
		for _, st := range []spool.State{spool.Queued, spool.Scheduling, spool.Runnable, spool.Running} {
			if n, _ := sp.Names(st); len(n) > 0 {
				return false
			}
		}
		return true
	})
	stop()
}
