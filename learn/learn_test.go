package learn

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"msched/acct"
	"msched/policy"
)

const logLines = `{"jid":"J1","model":"warwick","hosts":["u1","u2"],"predicted_seconds":100,"actual_seconds":120,"state":"exited","swf_status":1}
{"jid":"J2","model":"warwick","hosts":["u1"],"predicted_seconds":200,"actual_seconds":150,"state":"exited","swf_status":1}
{"jid":"J3","model":"warwick","hosts":["s1"],"predicted_seconds":50,"actual_seconds":100,"state":"exited","swf_status":1}
{"jid":"J4","model":"warwick","hosts":["u1"],"predicted_seconds":50,"actual_seconds":1,"state":"exited","swf_status":0}
{"jid":"J5","hosts":["u1"],"predicted_seconds":10,"actual_seconds":20,"state":"exited","swf_status":1}
{"jid":"J6","model":"warwick","state":"rejected","swf_status":0}
not a record
{"jid":"J7","model":"warwick","hosts":["u1"],"predicted_seconds":10,`

var arch = map[string]string{"u1": "SunUltra1", "u2": "SunUltra1", "s1": "SunSPARC5"}

func archOf(h string) string { return arch[h] }

// readLog reads logLines as acct does: J1..J6 (the junk line and the torn
// last one are no records).
func readLog(t *testing.T) []acct.Record {
	t.Helper()
	path := filepath.Join(t.TempDir(), "accounting.jsonl")
	if err := os.WriteFile(path, []byte(logLines), 0o644); err != nil {
		t.Fatal(err)
	}
	var recs []acct.Record
	err := acct.ReadFile(context.Background(), path, nil, func(r acct.Record) bool {
		recs = append(recs, r)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 6 || recs[5].JID != "J6" {
		t.Fatalf("%d records, want J1..J6", len(recs))
	}
	return recs
}

// J1, J2 on SunUltra1: errors −20 and +50 s (mean 15, mean |·| 35),
// percentages 16.67 and 33.33 (mean 25); J3 on SunSPARC5: −50 s, 50 %; J4
// failed and J6 never ran: not counted; J5 has no model.
func TestAccuracy_PerModelAndArch(t *testing.T) {
	got := Accuracy(readLog(t), archOf)
	want := []Stat{
		{Key: Key{NoModel, "SunUltra1"}, Count: 1, MeanError: -10, MeanAbsError: 10, MAPE: 50, PctCount: 1},
		{Key: Key{"warwick", "SunSPARC5"}, Count: 1, MeanError: -50, MeanAbsError: 50, MAPE: 50, PctCount: 1},
		{Key: Key{"warwick", "SunUltra1"}, Count: 2, MeanError: 15, MeanAbsError: 35, MAPE: 25, PctCount: 2},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Key != w.Key || g.Count != w.Count || g.PctCount != w.PctCount ||
			math.Abs(g.MeanError-w.MeanError) > 1e-9 || math.Abs(g.MeanAbsError-w.MeanAbsError) > 1e-9 || math.Abs(g.MAPE-w.MAPE) > 1e-9 {
			t.Errorf("row %d: %+v, want %+v", i, g, w)
		}
	}
}

func TestCorrector_MedianOfLastWindow(t *testing.T) {
	c := NewCorrector(5, 3)
	k := Key{"m", "a"}
	c.Add(k, 100, 200)
	c.Add(k, 100, 190)
	if f, n := c.Factor(k); f != 1 || n != 2 {
		t.Errorf("from 2 jobs: %v, %d; want 1 (too few)", f, n)
	}
	c.Add(k, 100, 5) // a crash: one sample, it moves the median one place
	if f, _ := c.Factor(k); f != 1.9 {
		t.Errorf("factor %v, want the median 1.9", f)
	}
	for range 5 {
		c.Add(k, 100, 50)
	}
	if f, n := c.Factor(k); f != 0.5 || n != 5 {
		t.Errorf("after 5 jobs at half the prediction: %v from %d, want 0.5 from the window of 5", f, n)
	}
	c.Add(k, 0, 10) // no prediction: ignored
	if _, n := c.Factor(k); n != 5 {
		t.Errorf("%d ratios", n)
	}
	if f, _ := c.Factor(Key{"m", "b"}); f != 1 {
		t.Errorf("another architecture: %v, want 1", f)
	}
}

func TestPredictor_AppliesFactorToModelledJobs(t *testing.T) {
	c := NewCorrector(0, 1)
	for _, r := range readLog(t) {
		c.Learn(r, archOf)
	}
	next := policy.PredictorFunc(func(context.Context, *policy.QueuedJob, []policy.Host) (time.Duration, error) {
		return 100 * time.Second, nil
	})
	p := Predictor{C: c, Next: next}
	ultra := []policy.Host{{Name: "u1", Arch: "SunUltra1"}, {Name: "u2", Arch: "SunUltra1"}}
	sparc := []policy.Host{{Name: "s1", Arch: "SunSPARC5"}}
	for _, tc := range []struct {
		model string
		hosts []policy.Host
		want  time.Duration
	}{
		{"warwick", ultra, 100 * time.Second * 975 / 1000}, // median of 1.2 and 0.75
		{"warwick", sparc, 200 * time.Second},
		{"", ultra, 100 * time.Second},
	} {
		got, err := p.Predict(context.Background(), &policy.QueuedJob{ID: "x", Model: tc.model}, tc.hosts)
		if err != nil || got != tc.want {
			t.Errorf("%q on %s: %v, %v; want %v", tc.model, tc.hosts[0].Arch, got, err, tc.want)
		}
	}
}
