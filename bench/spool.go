package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"msched/hoststat"
	"msched/spool"
)

// SpoolConfig sets up `msched bench spool`: the whole live system on a
// temporary spool, timed from the outside.
type SpoolConfig struct {
	// Jobs is the number of `true` job files dropped into submitted/ at once.
	Jobs int
	// Slots is the number of local hosts. A local host is a CPU slot, not a
	// CPU: `true` uses almost no CPU, so more slots than CPUs measure the
	// daemons rather than the machine. Default 16. Ignored with Hosts.
	Slots int
	// Hosts, when set, are the hosts the jobs run on instead of local
	// slots (a hosts file's ssh hosts: the figures then include ssh), and
	// HostsName says where they came from, for the table.
	Hosts     []hoststat.Host
	HostsName string
	// Idle is the number of jobs of the second phase, submitted one at a
	// time on an otherwise idle system, each after the previous one's report,
	// for the submit-to-start latency (the command's default is 30). 0
	// skips the phase.
	Idle int
	// Timeout bounds the whole benchmark. Default 10 minutes.
	Timeout time.Duration
	// Dir is where the temporary spool is made; "" is os.TempDir().
	Dir string
	// Start runs all five daemons on sp with these hosts until ctx is done,
	// calling reported after each job's report is written. The benchmark
	// package does not build daemons itself (nothing imports daemons but
	// the command and tests); the command passes its own wiring.
	Start func(ctx context.Context, sp *spool.Spool, hosts []hoststat.Host, reported func(jid string)) error
}

// SpoolResult is what `msched bench spool --json` prints.
type SpoolResult struct {
	Jobs          int     `json:"jobs"`
	Seconds       float64 `json:"seconds"`                  // first submit to last report, all Jobs at once
	JobsPerSecond float64 `json:"jobs_per_second"`          // Jobs / Seconds
	LatencyP50Ms  float64 `json:"latency_p50_ms,omitempty"` // submit to start, idle system (phase 2); absent if it was skipped
	LatencyP95Ms  float64 `json:"latency_p95_ms,omitempty"`
	// Hosts names the hosts file the jobs ran on; absent: local slots.
	Hosts string `json:"hosts,omitempty"`

	// Not in the JSON line: the details behind it, for the table.
	Slots         int           `json:"-"`
	IdleJobs      int           `json:"-"`
	BurstP50Ms    float64       `json:"-"` // submit to start during the burst (queueing included)
	BurstP95Ms    float64       `json:"-"`
	IdleReportP50 float64       `json:"-"` // submit to report, idle system, ms
	Stages        []StageTiming `json:"-"` // where the burst jobs' time went
	Shepherd      string        `json:"-"` // what the run daemon execs for each job (set by the caller)
}

// StageTiming is the mean time jobs spent between two recorded instants.
type StageTiming struct {
	Stage  string
	MeanMs float64
	P95Ms  float64
}

// Spool runs the benchmark: phase 1 drops cfg.Jobs job files running
// `true` into submitted/ at once (written to a staging directory of the same
// file system first, then renamed in one tight loop) and times first submit
// to last report; phase 2 submits cfg.Idle jobs one at a time and measures
// submit-to-start latency on the idle system. Latencies are run.started_at
// − submitted_at of the reaper's accounting records (db/accounting.jsonl).
func Spool(ctx context.Context, cfg SpoolConfig) (SpoolResult, error) {
	if cfg.Jobs <= 0 {
		return SpoolResult{}, errors.New("bench: spool: --jobs must be ≥ 1")
	}
	if cfg.Slots <= 0 {
		cfg.Slots = 16
	}
	cfg.Idle = max(cfg.Idle, 0)
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	if cfg.Start == nil {
		return SpoolResult{}, errors.New("bench: spool: no daemons to start")
	}
	dir, err := os.MkdirTemp(cfg.Dir, "msched-bench-spool-")
	if err != nil {
		return SpoolResult{}, err
	}
	defer os.RemoveAll(dir)
	sp, err := spool.Create(filepath.Join(dir, "spool"))
	if err != nil {
		return SpoolResult{}, err
	}
	hosts := cfg.Hosts
	if len(hosts) == 0 {
		hosts = make([]hoststat.Host, cfg.Slots)
		for i := range hosts {
			hosts[i] = hoststat.Host{Name: fmt.Sprintf("slot%d", i), Arch: "generic", Cluster: "bench", Address: "local"}
		}
	}

	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	rep := newReportCounter(sp.Path(spool.DirReports))
	dctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cfg.Start(dctx, sp, hosts, rep.reported) }()
	stopDaemons := func() error {
		stop()
		return <-done
	}

	res := SpoolResult{Jobs: cfg.Jobs, Slots: len(hosts), IdleJobs: cfg.Idle, Hosts: cfg.HostsName}
	// Phase 1: the burst.
	stage := filepath.Join(dir, "stage")
	if err := os.Mkdir(stage, 0o755); err != nil {
		stopDaemons()
		return res, err
	}
	names := make([]string, cfg.Jobs)
	for i := range names {
		names[i] = fmt.Sprintf("true-%05d.yaml", i)
		job := fmt.Sprintf("name: true-%d\ncommand: [\"true\"]\nwalltime: 1m\n", i)
		if err := os.WriteFile(filepath.Join(stage, names[i]), []byte(job), 0o644); err != nil {
			stopDaemons()
			return res, err
		}
	}
	start := time.Now()
	for _, n := range names {
		if err := os.Rename(filepath.Join(stage, n), filepath.Join(sp.Dir(spool.Submitted), n)); err != nil {
			stopDaemons()
			return res, err
		}
	}
	last, err := rep.wait(ctx, cfg.Jobs)
	if err != nil {
		stopDaemons()
		return res, fmt.Errorf("bench: spool: burst: %w (%d of %d reports)", err, rep.count(), cfg.Jobs)
	}
	res.Seconds = last.Sub(start).Seconds()
	res.JobsPerSecond = float64(cfg.Jobs) / res.Seconds
	burst, err := readAccounting(sp)
	if err != nil {
		stopDaemons()
		return res, err
	}
	res.BurstP50Ms, res.BurstP95Ms = latencies(burst)

	// Phase 2: one job at a time on the idle system.
	var idleReport []float64
	for i := 0; i < cfg.Idle; i++ {
		t0 := time.Now()
		if _, err := sp.Submit(fmt.Sprintf("idle-%03d.yaml", i), []byte("name: idle\ncommand: [\"true\"]\nwalltime: 1m\n")); err != nil {
			stopDaemons()
			return res, err
		}
		last, err := rep.wait(ctx, cfg.Jobs+i+1)
		if err != nil {
			stopDaemons()
			return res, fmt.Errorf("bench: spool: idle job %d: %w", i, err)
		}
		idleReport = append(idleReport, ms(last.Sub(t0)))
	}
	if err := stopDaemons(); err != nil {
		return res, err
	}
	all, err := readAccounting(sp)
	if err != nil {
		return res, err
	}
	if len(all) != cfg.Jobs+cfg.Idle {
		return res, fmt.Errorf("bench: spool: %d accounting records for %d jobs", len(all), cfg.Jobs+cfg.Idle)
	}
	res.LatencyP50Ms, res.LatencyP95Ms = latencies(all[len(burst):])
	sort.Float64s(idleReport)
	res.IdleReportP50 = percentile(idleReport, 0.5)
	res.Stages = rep.stages(burst)
	for _, r := range all {
		if r.State != "exited" || r.ExitStatus == nil || *r.ExitStatus != 0 {
			return res, fmt.Errorf("bench: spool: job %s ended %s (exit %v, %s)", r.JID, r.State, r.ExitStatus, r.Reason)
		}
	}
	return res, nil
}

// accountingRecord is the part of acct.Record the benchmark reads.
type accountingRecord struct {
	JID         string    `json:"jid"`
	State       string    `json:"state"`
	Reason      string    `json:"reason"`
	ExitStatus  *int      `json:"exit_status"`
	SubmittedAt time.Time `json:"submitted_at"`
	StartedAt   time.Time `json:"started_at"`
	EndedAt     time.Time `json:"ended_at"`
}

func readAccounting(sp *spool.Spool) ([]accountingRecord, error) {
	f, err := os.Open(filepath.Join(sp.Path(spool.DirDB), "accounting.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("bench: spool: accounting: %w", err)
	}
	defer f.Close()
	var rs []accountingRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		var r accountingRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("bench: spool: accounting: %w", err)
		}
		rs = append(rs, r)
	}
	return rs, sc.Err()
}

// latencies returns the median and 95th percentile of started − submitted.
func latencies(rs []accountingRecord) (p50, p95 float64) {
	var ls []float64
	for _, r := range rs {
		if !r.StartedAt.IsZero() && !r.SubmittedAt.IsZero() {
			ls = append(ls, ms(r.StartedAt.Sub(r.SubmittedAt)))
		}
	}
	sort.Float64s(ls)
	return percentile(ls, 0.5), percentile(ls, 0.95)
}

// percentile of sorted xs, nearest rank; 0 for none.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(p*float64(len(xs))+0.5) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// reportCounter counts the reports in reports/. The daemons' reaper calls
// reported after writing each report, which is what the counter counts; a
// slow poll of the directory catches anything else, since the report file,
// not the notification, is the durable record. (Listing the directory on
// every report made the harness itself a tenth of the CPU of a 2000-job
// burst.)
type reportCounter struct {
	dir  string
	wake chan struct{}
	mu   sync.Mutex
	seen map[string]bool
}

func newReportCounter(dir string) *reportCounter {
	return &reportCounter{dir: dir, wake: make(chan struct{}, 1), seen: map[string]bool{}}
}

func (c *reportCounter) reported(jid string) {
	c.mu.Lock()
	c.seen[jid] = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *reportCounter) notified() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

func (c *reportCounter) count() int {
	des, _ := os.ReadDir(c.dir)
	n := 0
	for _, d := range des {
		if filepath.Ext(d.Name()) == ".txt" && d.Name()[0] != '.' {
			n++
		}
	}
	return n
}

// reportPoll bounds how late the counter notices a report when no
// callback comes.
const reportPoll = 500 * time.Millisecond

// wait blocks until n reports are in the directory, and returns when the
// last of them was written (the largest modification time).
func (c *reportCounter) wait(ctx context.Context, n int) (time.Time, error) {
	t := time.NewTicker(reportPoll)
	defer t.Stop()
	for c.notified() < n {
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-c.wake:
			continue
		case <-t.C:
		}
		if c.count() >= n {
			break
		}
	}
	var last time.Time
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return last, err
	}
	for _, d := range des {
		if fi, err := d.Info(); err == nil && fi.ModTime().After(last) {
			last = fi.ModTime()
		}
	}
	return last, nil
}

// reportTime is when the report of jid was written.
func (c *reportCounter) reportTime(jid string) (time.Time, bool) {
	fi, err := os.Stat(filepath.Join(c.dir, jid+".txt"))
	if err != nil {
		return time.Time{}, false
	}
	return fi.ModTime(), true
}

// stages splits the burst jobs' time in the system into its parts.
func (c *reportCounter) stages(rs []accountingRecord) []StageTiming {
	var wait, run, reap []float64
	for _, r := range rs {
		if r.StartedAt.IsZero() || r.EndedAt.IsZero() {
			continue
		}
		wait = append(wait, ms(r.StartedAt.Sub(r.SubmittedAt)))
		run = append(run, ms(r.EndedAt.Sub(r.StartedAt)))
		if t, ok := c.reportTime(r.JID); ok {
			reap = append(reap, ms(t.Sub(r.EndedAt)))
		}
	}
	return []StageTiming{
		timing("submitted → started (init, sched, run)", wait),
		timing("started → ended (the job under its shepherd)", run),
		timing("ended → report written (run, sched, reaper)", reap),
	}
}

func timing(name string, xs []float64) StageTiming {
	sort.Float64s(xs)
	return StageTiming{Stage: name, MeanMs: meanSD(xs).Mean, P95Ms: percentile(xs, 0.95)}
}

// SpoolTable prints a result for people.
func SpoolTable(w io.Writer, r SpoolResult) error {
	on := fmt.Sprintf("%d local host slots", r.Slots)
	if r.Hosts != "" {
		on = fmt.Sprintf("the %d hosts of %s", r.Slots, r.Hosts)
	}
	_, err := fmt.Fprintf(w, `msched bench spool: %d jobs of "true" on %s
  burst:  first submit to last report %.2f s = %.0f jobs/s; submit-to-start p50 %.0f ms, p95 %.0f ms (queueing included)
`, r.Jobs, on, r.Seconds, r.JobsPerSecond, r.BurstP50Ms, r.BurstP95Ms)
	if err != nil {
		return err
	}
	if r.IdleJobs > 0 {
		fmt.Fprintf(w, "  idle:   %d jobs one at a time: submit-to-start p50 %.1f ms, p95 %.1f ms; submit-to-report p50 %.1f ms\n",
			r.IdleJobs, r.LatencyP50Ms, r.LatencyP95Ms, r.IdleReportP50)
	} else {
		fmt.Fprintln(w, "  idle:   skipped (--idle 0)")
	}
	if r.Shepherd != "" {
		fmt.Fprintf(w, "  shepherd: %s\n", r.Shepherd)
	}
	if len(r.Stages) == 0 {
		return nil
	}
	fmt.Fprintln(w, "  where the burst jobs' time went (mean, p95):")
	for _, s := range r.Stages {
		if _, err := fmt.Fprintf(w, "    %-48s %9.1f ms %9.1f ms\n", s.Stage, s.MeanMs, s.P95Ms); err != nil {
			return err
		}
	}
	return nil
}
