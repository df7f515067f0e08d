package workload

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestCharacterise_TinyTraceByHand(t *testing.T) {
	mk := func(submit, run float64, p int, req float64) Job {
		j := NewJob()
		j.Submit, j.Run, j.Procs, j.ReqTime = submit, run, p, req
		return j
	}
	jobs := []Job{
		mk(0, 7200, 1, 36000),   // 2 h serial, T/R 0.2
		mk(1000, 100, 4, 1000),  // T/R 0.1
		mk(2000, 90000, 8, -1),  // 25 h, no request
		mk(3000, -1, 2, 100),    // run time unknown
		mk(4000, 1800, 3, 3600), // T/R 0.5, not a power of two
	}
	s, err := Characterise(Slice(jobs), 10)
	if err != nil {
		t.Fatal(err)
	}
	// Worked by hand: run times 7200, 100, 90000, 1800 s; mean 24775;
	// squared deviations sum to 5,699,887,500, variance (÷4)
	// 1,424,971,875, CV 37748.80/24775 = 1.523665. P×T: 2 + 0.1111 + 200 +
	// 1.5 = 203.6111 processor-hours over 4 jobs; load 203.6111·3600 /
	// (10 · 4000 s) = 18.325.
	checks := []struct {
		name      string
		got, want float64
	}{
		{"jobs", float64(s.Jobs), 5},
		{"span", s.SpanS, 4000},
		{"serial share", s.SerialShare, 0.2},
		{"power-of-two share", s.PowerOfTwoShare, 0.8},
		{"max P", float64(s.MaxP), 8},
		{"mean P", s.MeanP, 3.6},
		{"jobs with run", float64(s.JobsWithRun), 4},
		{"run mean", s.RunMeanS, 24775},
		{"run CV", s.RunCV, 1.523664970728161},
		{"over 1 h", s.OverOneHourShare, 0.5},
		{"over 20 h", s.Over20HoursShare, 0.25},
		{"mean P×T", s.MeanProcHours, 203.61111111111111 / 4},
		{"T/R jobs", float64(s.TR.Jobs), 3},
		{"T/R < 0.2", s.TR.ShareBelow0_2, 1.0 / 3},
		{"T/R > 1", s.TR.ShareOver1, 0},
		{"T/R p25", s.TR.P25, 0.15},
		{"T/R median", s.TR.Median, 0.2},
		{"T/R p90", s.TR.P90, 0.44},
		{"T/R mean", s.TR.Mean, 0.8 / 3},
		{"offered load", s.OfferedLoad, 18.325},
		{"months", float64(len(s.MonthlyDemand)), 0},
	}
	for _, c := range checks {
		if !near(c.got, c.want, 1e-9*math.Max(1, math.Abs(c.want))) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestCharacterise_MonthlyDemandByHand(t *testing.T) {
	mk := func(day float64, p int, hours float64) Job {
		j := NewJob()
		j.Submit, j.Procs, j.Run = day*86400, p, hours*3600
		return j
	}
	// 30-day windows from day 0: [0, 30) holds 100 processor-hours,
	// [30, 60) holds 200; [60, 90) is incomplete (the trace ends on day 65)
	// and is not counted. A month of 10 processors is 7,200 processor-hours.
	jobs := []Job{mk(0, 10, 10), mk(40, 4, 50), mk(65, 1, 1)}
	s, err := Characterise(Slice(jobs), 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{100.0 / 7200, 200.0 / 7200}
	if len(s.MonthlyDemand) != 2 || !near(s.MonthlyDemand[0], want[0], 1e-12) || !near(s.MonthlyDemand[1], want[1], 1e-12) {
		t.Errorf("monthly demand %v, want %v", s.MonthlyDemand, want)
	}
	if !near(s.MonthlyDemandMean, 300.0/2/7200, 1e-12) {
		t.Errorf("mean monthly demand %v", s.MonthlyDemandMean)
	}
	// Without a machine size there is no load.
	s, _ = Characterise(Slice(jobs), 0)
	if s.OfferedLoad != 0 || len(s.MonthlyDemand) != 0 {
		t.Errorf("procs 0: load %v, months %v", s.OfferedLoad, s.MonthlyDemand)
	}
}

func TestCharacterise_ReportsReadErrorsAndEmptyTraces(t *testing.T) {
	boom := errors.New("boom")
	bad := func(yield func(Job, error) bool) {
		if yield(NewJob(), nil) {
			yield(Job{}, boom)
		}
	}
	if _, err := Characterise(bad, 1); !errors.Is(err, boom) {
		t.Errorf("error %v, want boom", err)
	}
	s, err := Characterise(Slice(nil), 8)
	if err != nil || s.Jobs != 0 {
		t.Errorf("empty: %+v, %v", s, err)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Errorf("empty stats do not encode: %v", err)
	}
}

func TestCharacterise_SDSCTrace(t *testing.T) {
	// Cross-check Characterise's counts on a real trace against a direct
	// count of the fields.
	h, jobs, err := ReadFile(sdscTrace)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Characterise(Slice(jobs), h.MaxProcs)
	if err != nil {
		t.Fatal(err)
	}
	var withRun, withR, serial int
	for _, j := range jobs {
		if j.Run >= 0 {
			withRun++
			if j.ReqTime > 0 {
				withR++
			}
		}
		if j.P() == 1 {
			serial++
		}
	}
	if s.JobsWithRun != withRun || s.TR.Jobs != withR || !near(s.SerialShare*float64(s.JobsWithP), float64(serial), 1e-6) {
		t.Errorf("counts: run %d/%d, T/R %d/%d, serial %v/%d", s.JobsWithRun, withRun, s.TR.Jobs, withR, s.SerialShare*float64(s.JobsWithP), serial)
	}
	if s.TR.P10 > s.TR.P25 || s.TR.P25 > s.TR.Median || s.TR.Median > s.TR.P75 || s.TR.P75 > s.TR.P90 {
		t.Errorf("T/R quantiles out of order: %+v", s.TR)
	}
	var b strings.Builder
	if err := s.Table(&b); err != nil || !strings.Contains(b.String(), "offered load on 128 processors") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
}
