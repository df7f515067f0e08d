package workload

import (
	"bytes"
	"math"
	"math/rand"
	"reflect"
	"testing"
)

// TestO2K_MeetsChiangVernonStatistics is issue 4's acceptance for the o2k
// generator: 100,000 jobs, written as SWF and read back, characterised
// against the 960 space-shared processors, fall inside every range the
// text of Chiang & Vernon (2001) gives (SEEDS.md §5).
func TestO2K_MeetsChiangVernonStatistics(t *testing.T) {
	h, jobs, err := GenerateO2K(O2KConfig{Jobs: 100_000}, rand.New(rand.NewSource(2001)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteAll(&buf, h, jobs); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if r.Header().MaxProcs != O2KMachineProcs {
		t.Fatalf("header MaxProcs %d", r.Header().MaxProcs)
	}
	s, err := Characterise(r.All(), r.Header().MaxProcs)
	if err != nil {
		t.Fatal(err)
	}
	if s.Jobs != 100_000 {
		t.Fatalf("%d jobs read back", s.Jobs)
	}
	t.Logf("serial %.4f, powers of two %.4f, max P %d, T/R<0.2 %.4f (median %.4f), run mean %.0f s CV %.3f, >1h %.4f, >20h %.4f, mean P×T %.2f, load %.4f, months %.3f (mean %.4f)",
		s.SerialShare, s.PowerOfTwoShare, s.MaxP, s.TR.ShareBelow0_2, s.TR.Median, s.RunMeanS, s.RunCV,
		s.OverOneHourShare, s.Over20HoursShare, s.MeanProcHours, s.OfferedLoad, s.MonthlyDemand, s.MonthlyDemandMean)

	in := func(t *testing.T, what string, v, lo, hi float64) {
		t.Helper()
		if v < lo || v > hi {
			t.Errorf("%s = %.4f, outside [%g, %g]", what, v, lo, hi)
		}
	}
	t.Run("serial share 30-40%", func(t *testing.T) { in(t, "serial share", s.SerialShare, 0.30, 0.40) })
	t.Run("mostly powers of two", func(t *testing.T) {
		// "Most jobs request power-of-two processors": read as at least
		// 80 % (serial jobs count, 1 = 2^0), and not all of them (a "small
		// but not insignificant fraction" is not).
		in(t, "power-of-two share", s.PowerOfTwoShare, 0.80, 0.97)
	})
	t.Run("max 64 processors", func(t *testing.T) {
		if s.MaxP != O2KMaxProcs {
			t.Errorf("largest request %d, want 64", s.MaxP)
		}
	})
	t.Run("over half with T/R below 0.2", func(t *testing.T) { in(t, "share T/R < 0.2", s.TR.ShareBelow0_2, 0.5, 1) })
	t.Run("run-time CV about 3", func(t *testing.T) { in(t, "run-time CV", s.RunCV, 2.5, 3.5) })
	t.Run("about 40% over 1 hour", func(t *testing.T) { in(t, "share over 1 h", s.OverOneHourShare, 0.35, 0.45) })
	t.Run("10-15% over 20 hours", func(t *testing.T) { in(t, "share over 20 h", s.Over20HoursShare, 0.10, 0.15) })
	t.Run("mean P×T 50-100 processor-hours", func(t *testing.T) { in(t, "mean P×T", s.MeanProcHours, 50, 100) })
	t.Run("monthly demand 90-100% of 960 processors", func(t *testing.T) {
		if len(s.MonthlyDemand) < 9 {
			t.Fatalf("only %d complete months", len(s.MonthlyDemand))
		}
		in(t, "mean monthly demand", s.MonthlyDemandMean, 0.90, 1.00)
	})
}

// TestO2K_ArrivalsAndRequests checks the statistics of §4 that Characterise
// does not measure: the daily cycle, the peak inter-arrival times, the
// memory requests and the requested run times.
func TestO2K_ArrivalsAndRequests(t *testing.T) {
	_, jobs, err := GenerateO2K(O2KConfig{Jobs: 100_000}, rand.New(rand.NewSource(7)))
	if err != nil {
		t.Fatal(err)
	}
	const day, hour = 86400.0, 3600.0
	perDay := map[int]int{}
	peakJobs := 0
	var gaps []float64
	for i, j := range jobs {
		d := int(j.Submit / day)
		perDay[d]++
		weekday := d%7 < 5
		h := math.Mod(j.Submit, day) / hour
		if weekday && h >= 9 && h < 17 {
			peakJobs++
			// Gaps between consecutive arrivals inside one peak period.
			if i > 0 && int(jobs[i-1].Submit/day) == d && math.Mod(jobs[i-1].Submit, day)/hour >= 9 {
				gaps = append(gaps, j.Submit-jobs[i-1].Submit)
			}
		}
	}
	lastDay := int(jobs[len(jobs)-1].Submit / day) // incomplete; left out
	var wdJobs, weJobs, wdDays, weDays int
	for d := range lastDay {
		if d%7 < 5 {
			wdJobs += perDay[d]
			wdDays++
		} else {
			weJobs += perDay[d]
			weDays++
		}
	}
	t.Run("weekday 350-400 jobs, weekend 150-200", func(t *testing.T) {
		wd, we := float64(wdJobs)/float64(wdDays), float64(weJobs)/float64(weDays)
		if wd < 350 || wd > 400 || we < 150 || we > 200 {
			t.Errorf("%.1f jobs per weekday, %.1f per weekend day", wd, we)
		}
	})
	t.Run("peak about 30 jobs an hour", func(t *testing.T) {
		// Peak hours of the complete weekdays (the trace starts on a Monday).
		rate := float64(peakJobs) / float64(8*(wdDays+1))
		if rate < 28 || rate > 32 {
			t.Errorf("%.2f jobs per peak hour", rate)
		}
	})
	t.Run("peak inter-arrival mean about 2 min, CV 1-2", func(t *testing.T) {
		var m, m2 float64
		for _, g := range gaps {
			m += g
			m2 += g * g
		}
		n := float64(len(gaps))
		m /= n
		cv := math.Sqrt(m2/n-m*m) / m
		if m < 100 || m > 130 || cv < 1 || cv > 2 {
			t.Errorf("peak inter-arrival mean %.1f s, CV %.2f", m, cv)
		}
	})
	var serial, serialBig, over256, over512, defaults, peakOver, bigLong int
	round := map[float64]bool{}
	for _, h := range []float64{1.0 / 60, 10.0 / 60, 0.5, 1, 2, 3, 4, 5, 10, 20, 30, 40, 50, 100, 150, 200, 300, 400} {
		round[math.Round(h*3600)] = true
	}
	for _, j := range jobs {
		if j.ReqProcs != j.Procs {
			t.Fatalf("job %d: allocated %d, requested %d", j.ID, j.Procs, j.ReqProcs)
		}
		if !round[j.ReqTime] {
			t.Fatalf("job %d requests %v s, not a round number of hours or minutes", j.ID, j.ReqTime)
		}
		if j.Run > j.ReqTime+3600 {
			t.Fatalf("job %d ran %v s on a request of %v s: past the kill limit", j.ID, j.Run, j.ReqTime)
		}
		switch j.ReqTime / 3600 {
		case 5, 50, 200, 400:
			defaults++
		}
		if j.Procs == 1 {
			serial++
			if j.ReqMemory > 512*1024 {
				serialBig++
			}
		}
		if j.ReqMemory > 256*1024 {
			over256++
		}
		if j.ReqMemory > 512*1024 {
			over512++
		}
		if j.Memory > j.ReqMemory {
			peakOver++
		}
		if j.Procs > 16 && j.ReqMemory*float64(j.Procs) > 4<<20 && j.Run > 600 {
			bigLong++
		}
	}
	n := float64(len(jobs))
	share := func(k int) float64 { return float64(k) / n }
	t.Run("requests massed at the defaults", func(t *testing.T) {
		// "A large fraction of jobs request the default runtime".
		if share(defaults) < 0.4 {
			t.Errorf("%.3f of requests are 5, 50, 200 or 400 h", share(defaults))
		}
	})
	t.Run("memory requests", func(t *testing.T) {
		// §4.4: 35-40 % over 256 MB per processor, 15-20 % (and half the
		// serial jobs) over 0.5 GB; §5.2: 15-20 % use more than requested;
		// §3.2: no more than 3 % with P > 16, M > 4 GB and T > 10 min.
		if s := share(over256); s < 0.35 || s > 0.40 {
			t.Errorf("%.3f over 256 MB per processor", s)
		}
		if s := share(over512); s < 0.15 || s > 0.20 {
			t.Errorf("%.3f over 0.5 GB per processor", s)
		}
		if s := float64(serialBig) / float64(serial); s < 0.45 || s > 0.55 {
			t.Errorf("%.3f of serial jobs over 0.5 GB", s)
		}
		if s := share(peakOver); s < 0.15 || s > 0.20 {
			t.Errorf("%.3f use more memory than requested", s)
		}
		if s := share(bigLong); s > 0.03 {
			t.Errorf("%.3f with P > 16, M > 4 GB, T > 10 min", s)
		}
	})
}

func TestGenerators_AreDeterministicForASeed(t *testing.T) {
	gens := map[string]func(seed int64) (Header, []Job, error){
		"o2k": func(seed int64) (Header, []Job, error) {
			return GenerateO2K(O2KConfig{Jobs: 2000}, rand.New(rand.NewSource(seed)))
		},
		"warwick": func(seed int64) (Header, []Job, error) {
			return GenerateWarwick(WarwickConfig{Jobs: 200, MeanInterarrival: 60}, rand.New(rand.NewSource(seed)))
		},
		"gibbons": func(seed int64) (Header, []Job, error) {
			return GenerateGibbons(GibbonsConfig{Jobs: 2000, Users: 3}, rand.New(rand.NewSource(seed)))
		},
		"multicluster": func(seed int64) (Header, []Job, error) {
			return GenerateMulticluster(MulticlusterConfig{Jobs: 2000}, rand.New(rand.NewSource(seed)))
		},
	}
	for name, gen := range gens {
		t.Run(name, func(t *testing.T) {
			h1, a, err := gen(42)
			if err != nil {
				t.Fatal(err)
			}
			h2, b, _ := gen(42)
			_, c, _ := gen(43)
			if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(h1, h2) {
				t.Error("same seed, different trace")
			}
			if reflect.DeepEqual(a, c) {
				t.Error("different seeds, same trace")
			}
			for i, j := range a {
				if j.ID != int64(i+1) || j.Run < 0 || j.P() < 1 || (i > 0 && j.Submit < a[i-1].Submit) {
					t.Fatalf("job %d malformed: %+v", i, j)
				}
			}
			if h1.MaxJobs != int64(len(a)) || h1.MaxProcs < 1 {
				t.Errorf("header %+v", h1)
			}
			if v, ok := h1.Get("Note"); !ok || v == "" {
				t.Error("header does not say how the trace was generated")
			}
		})
	}
}
