package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"

	"msched/acct"
	"msched/atomicfile"
	"msched/hoststat"
	"msched/launch"
	"msched/spool"
)

// mschedBin is the msched binary built once by TestMain: the shepherd of
// every job in these tests (the test binary cannot be one: it has no
// shepherd sub-command, and with -race every shepherd would sleep 1 s at
// exit) and the `msched daemon X` processes that the restart test kills.
var mschedBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "msched-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mschedBin = filepath.Join(dir, "msched")
	out, err := exec.Command("go", "build", "-o", mschedBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build msched: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testSpool makes a spool with a hosts file of n local hosts.
func testSpool(t *testing.T, n int) (*spool.Spool, []hoststat.Host) {
	t.Helper()
	sp, err := spool.Create(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	hosts := make([]hoststat.Host, n)
	for i := range hosts {
		hosts[i] = hoststat.Host{Name: fmt.Sprintf("slot%d", i), Arch: "generic", Cluster: "test", Address: "local"}
	}
	if err := hoststat.WriteHosts(filepath.Join(sp.Path(spool.DirDB), "hosts.yaml"), hosts); err != nil {
		t.Fatal(err)
	}
	return sp, hosts
}

// testSettings is the configuration every test daemon runs with: short GA
// decisions, a short kill grace, a rescan as a safety net, a fixed seed.
var testSettings = map[string]string{
	"ga.time_budget":   "20ms",
	"ga.seed":          "1",
	"run.kill_grace":   "1s",
	"run.max_attempts": "2",
	"rescan":           "2s",
	"stats.interval":   "5s",
}

// testEnv is testSettings as MSCHED_* variables, for `msched daemon X`.
func testEnv(spoolDir string) []string {
	env := append(os.Environ(), "MSCHED_SPOOL="+spoolDir, "MSCHED_LOG_LEVEL=info")
	for k, v := range testSettings {
		env = append(env, "MSCHED_"+strings.ToUpper(strings.ReplaceAll(k, ".", "_"))+"="+v)
	}
	return env
}

// testConfig reads the configuration as `msched` does, with testSettings.
func testConfig(t *testing.T, sp *spool.Spool) config {
	t.Helper()
	v := viper.New()
	setDefaults(v)
	for k, val := range testSettings {
		v.Set(k, val)
	}
	v.Set("spool", sp.Root())
	c, err := readConfig(v)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// logFile gives daemons a logger writing to a file that is printed if the
// test fails.
func logFile(t *testing.T, name string) (*slog.Logger, *os.File) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(f.Name())
			t.Logf("%s log (last 6 KB):\n%s", name, tail(b, 6<<10))
		}
		f.Close()
	})
	return slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo})), f
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// inProcess runs the named daemons in this process until stop is called.
type inProcess struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the daemons have returned
	err    error         // what they returned; read after done
}

func startInProcess(t *testing.T, cfg config, hosts []hoststat.Host, log *slog.Logger, names ...string) *inProcess {
	t.Helper()
	sp, err := spool.Open(cfg.Spool)
	if err != nil {
		t.Fatal(err)
	}
	sys := &system{cfg: cfg, sp: sp, hosts: hosts, log: log, launcher: localLauncher()}
	ctx, cancel := context.WithCancel(context.Background())
	p := &inProcess{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.err = sys.run(ctx, names)
		if cerr := sys.close(); p.err == nil {
			p.err = cerr
		}
		if ctx.Err() == nil {
			// Not stopped: say so now rather than leave the test to
			// time out waiting for work nobody does.
			t.Errorf("daemons %v returned before they were stopped: %v", names, p.err)
		}
	}()
	return p
}

// stop cancels the daemons' context and waits for them to return.
func (p *inProcess) stop(t *testing.T) {
	t.Helper()
	p.cancel()
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("daemons returned %v after cancellation, want nil", p.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("daemons did not return within 20 s of cancellation")
	}
}

// record is the part of an accounting record the tests check.
type record struct {
	JID        string    `json:"jid"`
	Name       string    `json:"name"`
	State      string    `json:"state"`
	Reason     string    `json:"reason"`
	ExitStatus *int      `json:"exit_status"`
	Signal     string    `json:"signal"`
	Attempts   int       `json:"attempts"`
	Cancelled  bool      `json:"cancelled"`
	StartedAt  time.Time `json:"started_at"`
}

func readRecords(t *testing.T, sp *spool.Spool) []record {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sp.Path(spool.DirDB), acct.JSONL))
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	var rs []record
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("accounting line %q: %v", sc.Text(), err)
		}
		rs = append(rs, r)
	}
	return rs
}

func countReports(sp *spool.Spool) int {
	des, _ := os.ReadDir(sp.Path(spool.DirReports))
	n := 0
	for _, d := range des {
		if strings.HasSuffix(d.Name(), ".txt") && !strings.HasPrefix(d.Name(), ".") {
			n++
		}
	}
	return n
}

// waitReports waits until n reports are written.
func waitReports(t *testing.T, sp *spool.Spool, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for countReports(sp) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d reports after %v; spool:\n%s", countReports(sp), n, within, spoolListing(sp))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitRecords waits until n accounting records are written and returns
// them. The reaper writes a job's report before its record, so a test that
// reads records while the daemons run waits for them, not for the reports.
func waitRecords(t *testing.T, sp *spool.Spool, n int, within time.Duration) []record {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		rs := readRecords(t, sp)
		if len(rs) >= n {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d accounting records after %v; spool:\n%s", len(rs), n, within, spoolListing(sp))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func spoolListing(sp *spool.Spool) string {
	var b strings.Builder
	for _, st := range spool.States {
		es, _ := sp.List(st)
		if len(es) > 0 {
			fmt.Fprintf(&b, "  %s:", st)
			for _, e := range es {
				fmt.Fprintf(&b, " %s", e.Name)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// spoolDump is what a failing test prints of the spool: the state
// directories, tmp/ (init's claims), and jid's arrival and first history
// entry, which are what msched submit matches its ticket against.
func spoolDump(sp *spool.Spool, jid string) string {
	var b strings.Builder
	b.WriteString("spool:\n" + spoolListing(sp))
	if des, err := os.ReadDir(sp.Path(spool.DirTmp)); err == nil {
		b.WriteString("  tmp/:")
		for _, d := range des {
			b.WriteString(" " + d.Name())
		}
		b.WriteString("\n")
	}
	if st, ok := sp.StateOf(jid); ok {
		if j, err := sp.Read(st, jid); err != nil {
			fmt.Fprintf(&b, "  %s in %s: %v\n", jid, st, err)
		} else if len(j.History) > 0 {
			fmt.Fprintf(&b, "  %s in %s: submitted_at %d, first entry %q\n", jid, st, j.SubmittedAt.UnixNano(), j.History[0].Note)
		}
	}
	return b.String()
}

// checkDrained fails if any state directory still holds a job, or a claim
// or a request is left. After a kill -9 a staging file may be left in tmp/
// (the reaper removes those after 10 minutes: spool.CleanTmp); crashed
// tells the check to allow them, but never a claim, which is a job.
func checkDrained(t *testing.T, sp *spool.Spool, crashed bool) {
	t.Helper()
	if l := spoolListing(sp); l != "" {
		t.Errorf("jobs left in the spool:\n%s", l)
	}
	dirs := []string{spool.DirControl, spool.DirTmp}
	if des, _ := os.ReadDir(sp.Path(spool.DirTmp)); des != nil {
		for _, d := range des {
			if d.IsDir() { // a daemon's staging directory, tmp/<daemon>/
				dirs = append(dirs, filepath.Join(spool.DirTmp, d.Name()))
			}
		}
	}
	for _, dir := range dirs {
		des, _ := os.ReadDir(sp.Path(dir))
		for _, d := range des {
			if d.IsDir() && dir == spool.DirTmp || strings.HasPrefix(d.Name(), atomicfile.PoolPrefix) {
				continue // a staging directory; a daemon's pool of recycled files
			}
			if crashed && dir != spool.DirControl && !strings.HasPrefix(d.Name(), "claim.") {
				t.Logf("staging file left in tmp/ by a killed daemon: %s", d.Name())
				continue
			}
			t.Errorf("left in %s/: %s", dir, d.Name())
		}
	}
}

// checkOneReportEach checks that every job has exactly one accounting record
// and a report file, and that no JID was given twice.
func checkOneReportEach(t *testing.T, sp *spool.Spool, want int) []record {
	t.Helper()
	rs := readRecords(t, sp)
	seen := map[string]bool{}
	for _, r := range rs {
		if seen[r.JID] {
			t.Errorf("JID %s reported twice", r.JID)
		}
		seen[r.JID] = true
		if _, err := os.Stat(filepath.Join(sp.Path(spool.DirReports), r.JID+".txt")); err != nil {
			t.Errorf("no report for %s: %v", r.JID, err)
		}
	}
	if len(rs) != want || countReports(sp) != want {
		t.Errorf("%d accounting records and %d reports, want %d of each", len(rs), countReports(sp), want)
	}
	return rs
}

func submit(t *testing.T, sp *spool.Spool, name, body string) {
	t.Helper()
	if _, err := sp.Submit(name, []byte(body)); err != nil {
		t.Fatal(err)
	}
}

// waitRunning waits until the job named name is in running/ with a pid,
// and returns it.
func waitRunning(t *testing.T, sp *spool.Spool, name string, within time.Duration) *spool.Job {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		es, _ := sp.List(spool.Running)
		for _, e := range es {
			j, err := sp.Read(spool.Running, e.Name)
			if err == nil && j.Name == name && j.Run != nil && j.Run.PID > 0 {
				return j
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("job %s not running within %v; spool:\n%s", name, within, spoolListing(sp))
	return nil
}

func localLauncher() launch.Launcher { return launch.Local{Exe: mschedBin} }
