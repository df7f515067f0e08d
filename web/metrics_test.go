package web

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"msched/acct"
	"msched/notify"
	"msched/spool"
)

// series is one parsed sample of the text format.
type series struct {
	name   string
	labels map[string]string
	value  float64
}

// family is a parsed metric family: its TYPE and its samples.
type family struct {
	typ     string
	samples []series
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$`)
	labelPair  = regexp.MustCompile(`^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)`)
)

// parseExposition parses the text format (version 0.0.4) strictly: every
// sample belongs to the family whose HELP and TYPE precede it (a histogram's
// as _bucket, _sum and _count), families are declared once, label pairs are
// well formed, and no series appears twice.
func parseExposition(t *testing.T, text string) map[string]*family {
	t.Helper()
	fams := map[string]*family{}
	var cur string
	seen := map[string]bool{}
	for i, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "# HELP "):
			f := strings.SplitN(l, " ", 4)
			if len(f) < 4 || f[3] == "" {
				t.Fatalf("line %d: HELP without text: %q", i+1, l)
			}
			if fams[f[2]] != nil {
				t.Fatalf("line %d: family %s declared twice", i+1, f[2])
			}
			cur = f[2]
			fams[cur] = &family{}
		case strings.HasPrefix(l, "# TYPE "):
			f := strings.Fields(l)
			if len(f) != 4 || f[2] != cur || !strings.Contains(" counter gauge histogram summary untyped ", " "+f[3]+" ") {
				t.Fatalf("line %d: bad TYPE after HELP of %s: %q", i+1, cur, l)
			}
			fams[cur].typ = f[3]
		case strings.HasPrefix(l, "#"):
		default:
			m := sampleLine.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("line %d: not a sample: %q", i+1, l)
			}
			s := series{name: m[1], labels: map[string]string{}}
			for rest := m[3]; rest != ""; {
				p := labelPair.FindStringSubmatch(rest)
				if p == nil {
					t.Fatalf("line %d: bad labels %q", i+1, m[3])
				}
				s.labels[p[1]] = p[2]
				rest = rest[len(p[0]):]
			}
			v, err := strconv.ParseFloat(strings.Replace(m[4], "Inf", "inf", 1), 64)
			if err != nil {
				t.Fatalf("line %d: bad value %q", i+1, m[4])
			}
			s.value = v
			f := fams[cur]
			base := s.name
			if f != nil && f.typ == "histogram" {
				base = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(base, "_bucket"), "_sum"), "_count")
			}
			if f == nil || base != cur {
				t.Fatalf("line %d: sample %s outside its family (after %s)", i+1, s.name, cur)
			}
			if key := l[:strings.LastIndexByte(l, ' ')]; seen[key] {
				t.Fatalf("line %d: series %s twice", i+1, key)
			} else {
				seen[key] = true
			}
			f.samples = append(f.samples, s)
		}
	}
	return fams
}

// value is the sample of name with the given labels (name, value pairs);
// ok is false when there is none.
func (f *family) value(name string, labels ...string) (float64, bool) {
	for _, s := range f.samples {
		if s.name != name || len(s.labels) != len(labels)/2 {
			continue
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			match = match && s.labels[labels[i]] == labels[i+1]
		}
		if match {
			return s.value, true
		}
	}
	return 0, false
}

// TestMetrics_Exposition reads a spool with an accounting log of jobs of
// every outcome, heartbeats and a mail queue, and checks the families:
// jobs finished by outcome, the wait-time histogram, heartbeat ages, the
// mail queue, prediction errors per model with no "all" row (a sum over
// the label counts every job once) and no percentage for jobs under 10 s.
func TestMetrics_Exposition(t *testing.T) {
	b := fixture{Jobs: 40, Hosts: 4, Now: testNow}.build(t)
	db := b.sp.Path(spool.DirDB)
	// The fixture's 60 completed jobs waited an hour each; these add one of
	// each other outcome, and short jobs of model m.
	f := func(v float64) *float64 { return &v }
	zero, two := 0, 2
	t0 := testNow.Add(-time.Hour)
	extra := []acct.Record{
		{JID: "J900001", State: "exited", ExitStatus: &two, SubmittedAt: t0, StartedAt: t0.Add(3 * time.Second), Model: "m",
			PredictedSeconds: f(9), ActualSeconds: f(0.001)},
		{JID: "J900002", State: "exited", Signal: "SIGKILL", Reason: "walltime exceeded", SubmittedAt: t0, StartedAt: t0.Add(20 * time.Second),
			Model: "m", PredictedSeconds: f(3), ActualSeconds: f(4)},
		{JID: "J900003", State: "rejected", Reason: "cancelled", Cancelled: true, SubmittedAt: t0},
		// Cancelled while it ran: killed by SIGTERM, and cancelled.
		{JID: "J900006", State: "exited", Signal: "SIGTERM", Cancelled: true, SubmittedAt: t0, StartedAt: t0.Add(2 * time.Hour)},
		{JID: "J900004", State: "rejected", Reason: "needs 9 hosts", SubmittedAt: t0},
		{JID: "J900005", State: "exited", ExitStatus: &zero, SubmittedAt: t0, StartedAt: t0.Add(500 * time.Millisecond), Model: "m",
			PredictedSeconds: f(11), ActualSeconds: f(10)},
	}
	fh, err := os.OpenFile(filepath.Join(db, acct.JSONL), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range extra {
		line, _ := json.Marshal(r)
		fmt.Fprintf(fh, "%s\n", line)
	}
	fh.Close()
	// Two reports waiting in the mail queue, and what is no report.
	q := filepath.Join(db, notify.MailQueueDir)
	for _, name := range []string{"J000001.json", "J000002.begin.json", ".J000003.json.tmp", "sent/J000004"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(q, name)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(q, name), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.sp.As(spool.Sched).Heart(spool.Sched).Beat(); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(7 * time.Second)

	w := get(t, handlerFor(b, now, ""), "/metrics")
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("%d %q", w.Code, w.Header().Get("Content-Type"))
	}
	fams := parseExposition(t, w.Body.String())
	want := func(fam, typ string) *family {
		t.Helper()
		f := fams[fam]
		if f == nil || f.typ != typ {
			t.Fatalf("no %s family %s in:\n%s", typ, fam, w.Body)
		}
		return f
	}

	finished := want("msched_jobs_finished_total", "counter")
	for outcome, n := range map[string]float64{"completed": 61, "failed": 1, "killed": 1, "cancelled": 2, "rejected": 1} {
		if v, ok := finished.value("msched_jobs_finished_total", "outcome", outcome); !ok || v != n {
			t.Errorf("jobs finished %s = %v (%v), want %v", outcome, v, ok, n)
		}
	}

	wait := want("msched_job_wait_seconds", "histogram")
	var last float64
	for _, s := range wait.samples {
		if s.name == "msched_job_wait_seconds_bucket" {
			if s.value < last {
				t.Errorf("bucket le=%s: %v after %v, not cumulative", s.labels["le"], s.value, last)
			}
			last = s.value
		}
	}
	for le, n := range map[string]float64{"1": 1, "5": 2, "15": 2, "60": 3, "3600": 63, "14400": 64, "+Inf": 64} {
		if v, _ := wait.value("msched_job_wait_seconds_bucket", "le", le); v != n {
			t.Errorf("waits ≤ %s s: %v, want %v", le, v, n)
		}
	}
	if c, _ := wait.value("msched_job_wait_seconds_count"); c != 64 {
		t.Errorf("wait count %v, want 64 (the jobs that started)", c)
	}
	if s, _ := wait.value("msched_job_wait_seconds_sum"); math.Abs(s-(60*3600+23.5+7200)) > 1e-6 {
		t.Errorf("wait sum %v", s)
	}

	age := want("msched_daemon_heartbeat_age_seconds", "gauge")
	if v, ok := age.value("msched_daemon_heartbeat_age_seconds", "daemon", "sched"); !ok || v < 7 || v > 60 {
		t.Errorf("sched's heartbeat age %v (%v), want about 7 s", v, ok)
	}
	if _, ok := age.value("msched_daemon_heartbeat_age_seconds", "daemon", "init"); ok {
		t.Error("an age for init, which never beat")
	}

	if v, _ := want("msched_mail_queue_length", "gauge").value("msched_mail_queue_length"); v != 2 {
		t.Errorf("mail queue length %v, want 2", v)
	}

	jobs := want("msched_prediction_jobs", "gauge")
	total := 0.0
	for _, s := range jobs.samples {
		total += s.value
	}
	if total != 63 {
		t.Errorf("Σ msched_prediction_jobs = %v, want 63 (each job once)", total)
	}
	for name, f := range fams {
		for _, s := range f.samples {
			if s.labels["model"] == "all" {
				t.Errorf("%s has a model=\"all\" series", name)
			}
		}
	}
	if v, _ := jobs.value("msched_prediction_jobs", "model", "m"); v != 3 {
		t.Errorf("model m: %v jobs, want 3", v)
	}
	if v, _ := want("msched_prediction_mape_ratio", "gauge").value("msched_prediction_mape_ratio", "model", "m"); math.Abs(v-0.1) > 1e-9 {
		t.Errorf("model m's MAPE %v, want 0.1 (only its 10 s job counts)", v)
	}
	if v, _ := want("msched_prediction_short_abs_error_seconds", "gauge").value("msched_prediction_short_abs_error_seconds", "model", "m"); math.Abs(v-(8.999+1)/2) > 1e-9 {
		t.Errorf("model m's short jobs' error %v s, want %v", v, (8.999+1)/2)
	}
	if v, _ := want("msched_prediction_error_seconds", "gauge").value("msched_prediction_error_seconds", "model", "m"); math.Abs(v-(8.999-1+1)/3) > 1e-9 {
		t.Errorf("model m's mean error %v", v)
	}
}

// A mail queue the page may not read is left out, not shown as empty.
func TestMetrics_MailQueueUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every directory")
	}
	b := fixture{Jobs: 5, Hosts: 2, Now: testNow}.build(t)
	q := filepath.Join(b.sp.Path(spool.DirDB), notify.MailQueueDir)
	if err := os.MkdirAll(q, 0o000); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(q, 0o700) })
	if m := get(t, handlerFor(b, testNow, ""), "/metrics").Body.String(); strings.Contains(m, "msched_mail_queue_length") {
		t.Errorf("a queue length from an unreadable queue:\n%s", m)
	}
}
