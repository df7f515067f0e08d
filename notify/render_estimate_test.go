package notify

import (
	"strings"
	"testing"
	"time"

	"msched/spool"
)

// The report says where the prediction came from, and gives the error of
// a prediction of a job shorter than learn.PercentFloor in seconds: a
// percentage of a sub-second job says nothing (+886627.6 %).
func TestRender_EstimateSourceAndErrorFloor(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	zero := 0
	mk := func(predicted float64, actual time.Duration) *spool.Job {
		return &spool.Job{JID: "J1", User: "bob", Command: []string{"sleep", "3"}, SubmittedAt: t0, Model: &spool.Model{Name: "sleep"},
			Schedule: &spool.Schedule{Hosts: []string{"a"}, PredictedSeconds: predicted, EstimateSource: "model sleep"},
			Run:      &spool.RunInfo{StartedAt: t0, EndedAt: t0.Add(actual), ExitStatus: &zero}}
	}
	for _, c := range []struct {
		predicted float64
		actual    time.Duration
		want      string
	}{
		{9, 1 * time.Millisecond, "Actual:      1ms (prediction error +9.0 s)"},
		{3, 3200 * time.Millisecond, "Actual:      3.2s (prediction error -0.2 s)"},
		{11, 10 * time.Second, "Actual:      10s (prediction error +10.0%)"},
		{60, 2 * time.Minute, "Actual:      2m0s (prediction error -50.0%)"},
	} {
		r := Render(mk(c.predicted, c.actual), t.TempDir())
		if !strings.Contains(r.Body, c.want) || !strings.Contains(r.Body, "Estimate:    model sleep\n") {
			t.Errorf("predicted %v, actual %v: body lacks %q or the estimate's source:\n%s", c.predicted, c.actual, c.want, r.Body)
		}
	}

	var acc ModelAccuracy
	for _, pa := range [][2]float64{{9, 0.001}, {3, 1}, {22, 20}, {30, 40}} {
		acc.Observe(pa[0], pa[1])
	}
	r := RenderAccuracy(mk(3, time.Second), t.TempDir(), &acc)
	if want := "Accuracy:    mean absolute error 17.5% over the model's 2 earlier jobs of 10s or more, 5.5 s over its 2 shorter ones"; !strings.Contains(r.Body, want) {
		t.Errorf("body lacks %q:\n%s", want, r.Body)
	}
	short := ModelAccuracy{}
	short.Observe(2, 1)
	if got := short.text(); got != "mean absolute error 1.0 s over the model's 1 earlier jobs (all shorter than 10s)" {
		t.Errorf("short jobs only: %q", got)
	}
	legacy := &ModelAccuracy{Jobs: 3, MeanAbsErrorPct: 12}
	if got := legacy.text(); got != "mean absolute error 12.0% over the model's 3 earlier jobs" {
		t.Errorf("counted without Observe: %q", got)
	}
}

func TestRenderBegin(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	j := &spool.Job{JID: "J000009", Name: "big run", User: "bob", Notify: "bob@example.org", Command: []string{"./sim", "-n", "9"},
		Mail: []string{spool.MailBegin}, SubmittedAt: t0, Walltime: spool.Duration(time.Hour),
		Schedule: &spool.Schedule{Hosts: []string{"a", "b"}, PredictedSeconds: 600, EstimateSource: "walltime (model sim predicted longer)"},
		Run:      &spool.RunInfo{StartedAt: t0.Add(90 * time.Second), Attempts: 2}}
	r := RenderBegin(j)
	if r.Kind != KindBegin || r.To != "bob@example.org" || r.State != "running" || r.Subject != "msched: job J000009 (big run) started on a, b" {
		t.Errorf("report %+v", r)
	}
	for _, want := range []string{"Command:     ./sim -n 9", "Hosts:       a, b (2)", "Wait:        1m30s", "Attempts:    2",
		"Predicted:   10m0s", "Estimate:    walltime (model sim predicted longer)", "Ends about:  2026-03-01 12:11:30.000 UTC",
		"Walltime:    1h0m0s", "reports/J000009.txt"} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, r.Body)
		}
	}
	if !Wanted(r, nil) || Wanted(r, []string{spool.MailEnd}) == false {
		t.Error("the job's mail: [begin] does not ask for its begin report")
	}
	j.Mail = nil
	if Wanted(RenderBegin(j), DefaultWhen) {
		t.Error("a begin report wanted by default")
	}
}
