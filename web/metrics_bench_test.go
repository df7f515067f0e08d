package web

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"msched/acct"
	"msched/spool"
)

// The metrics path, measured as /metrics is served: in process (the
// exposition beside the reading of the spool), and as a CGI program, one
// process per scrape, start-up included. These are the figures behind the
// choice of a hand-written exposition over client_golang's (README,
// "Metrics"): run them on two builds side by side with
//
//	MSCHED_BENCH_CGI=before=/tmp/msched-a,after=/tmp/msched-b go test ./web -run - -bench MetricsCGI -count 5
//
// Without MSCHED_BENCH_CGI, BenchmarkMetricsCGI builds this tree's msched.

// metricsSpools are the spools measured: a small one (50 jobs, 60 reaped)
// and a busy one (1,000 jobs over the states, 64 hosts, 10,000 reaped).
func metricsSpools(b *testing.B) map[string]built {
	now := testNow
	small := fixture{Jobs: 50, Hosts: 6, Now: now}.build(b)
	busy := fixture{Jobs: 1000, Hosts: 64, Now: now}.build(b)
	var lines bytes.Buffer
	for i := range 10000 {
		pred, act := float64(5+i%500), float64(4+i%480)
		st := []int{0, 0, 0, 1, 137}[i%5]
		r := acct.Record{JID: spool.FormatJID(int64(200000 + i)), Name: jobNames[i%len(jobNames)], User: "bob",
			Executable: "./" + jobNames[i%len(jobNames)], Hosts: []string{busy.hosts[i%64].Name}, PredictedSeconds: &pred, ActualSeconds: &act,
			State: "exited", ExitStatus: &st, SubmittedAt: now.Add(-3 * time.Hour), StartedAt: now.Add(-3*time.Hour + time.Duration(i)*time.Second),
			EndedAt: now.Add(-time.Hour)}
		if i%7 == 0 {
			r.Model = "particles"
		}
		line, _ := json.Marshal(r)
		lines.Write(line)
		lines.WriteByte('\n')
	}
	f, err := os.OpenFile(filepath.Join(busy.sp.Path(spool.DirDB), acct.JSONL), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.Write(lines.Bytes()); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return map[string]built{"small": small, "busy": busy}
}

func BenchmarkMetrics(b *testing.B) {
	spools := metricsSpools(b)
	for _, name := range []string{"small", "busy"} {
		b.Run(name, func(b *testing.B) {
			h := handlerFor(spools[name], testNow, "")
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
				if w.Code != 200 {
					b.Fatal(w.Code)
				}
			}
		})
	}
}

func BenchmarkMetricsCGI(b *testing.B) {
	bins := map[string]string{}
	var order []string
	if spec := os.Getenv("MSCHED_BENCH_CGI"); spec != "" {
		for _, kv := range strings.Split(spec, ",") {
			name, path, ok := strings.Cut(kv, "=")
			if !ok {
				b.Fatalf("MSCHED_BENCH_CGI: %q is not name=path", kv)
			}
			bins[name] = path
			order = append(order, name)
		}
	} else {
		bin := filepath.Join(b.TempDir(), "msched")
		if out, err := exec.Command("go", "build", "-o", bin, "msched/cmd/msched").CombinedOutput(); err != nil {
			b.Fatalf("go build: %v\n%s", err, out)
		}
		bins["tree"] = bin
		order = []string{"tree"}
	}
	spools := metricsSpools(b)
	// "startup" is the process alone: a request for another host name,
	// refused (421) before anything of the spool is read.
	for _, sp := range []string{"startup", "small", "busy"} {
		for _, name := range order {
			b.Run(sp+"/"+name, func(b *testing.B) {
				dir := spools["small"].sp.Root()
				env, want := []string(nil), "\nmsched_jobs{state="
				if sp == "startup" {
					env, want = []string{"MSCHED_WEB_HOSTS=status.example.org", "HTTP_HOST=elsewhere.example"}, "421"
				} else {
					dir = spools[sp].sp.Root()
				}
				var cpu time.Duration
				for b.Loop() {
					out, used := metricsByCGI(b, bins[name], dir, env...)
					if !strings.Contains(out, want) {
						b.Fatalf("no %q in:\n%.500s", want, out)
					}
					cpu += used
				}
				// The CPU time of the CGI process itself (user and
				// system): what start-up and the request cost, less
				// sensitive than the wall clock to other work on the
				// machine.
				b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// metricsByCGI runs bin as a web server runs a CGI program for GET
// /metrics and returns what it wrote and the CPU time it used.
func metricsByCGI(b *testing.B, bin, spoolDir string, env ...string) (string, time.Duration) {
	cmd := exec.Command(bin)
	cmd.Env = []string{"GATEWAY_INTERFACE=CGI/1.1", "SERVER_SOFTWARE=bench/1.0", "SERVER_NAME=status.example.org",
		"SERVER_PORT=80", "SERVER_PROTOCOL=HTTP/1.1", "REQUEST_METHOD=GET", "SCRIPT_NAME=/cgi-bin/msched",
		"PATH_INFO=/metrics", "REQUEST_URI=/cgi-bin/msched/metrics", "REMOTE_ADDR=192.0.2.7", "REMOTE_PORT=40000",
		"HTTP_HOST=status.example.org", "MSCHED_SPOOL=" + spoolDir, "MSCHED_LOG_LEVEL=warn", "PATH=" + os.Getenv("PATH")}
	cmd.Env = append(cmd.Env, env...) // later entries win
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s as CGI: %v\n%s", bin, err, stderr.String())
	}
	return stdout.String(), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}
