package workload

import (
	"fmt"
	"io"
	"iter"
	"math"
	"math/bits"
	"slices"
	"text/tabwriter"
)

// Month is the length of a "month" in monthly processor demand: 30 days.
// Chiang & Vernon report demand per calendar month; a fixed 30-day window
// keeps a synthetic trace's months comparable.
const Month = 30 * 24 * 3600.0

// Stats characterises a workload by the measures Chiang & Vernon (2001)
// give for the NCSA O2K (SEEDS.md §5), so a synthetic trace can be
// validated against them and a real trace compared with it.
//
// P is a job's processor count (allocated, else requested: Job.P), T its run
// time (field 4), R its requested time (field 9). Each measure counts the
// jobs for which its inputs are known (not -1); the counts are reported.
type Stats struct {
	Jobs  int `json:"jobs"`  // job lines read
	Procs int `json:"procs"` // machine size the loads are measured against (0: not measured)

	FirstSubmitS float64 `json:"first_submit_s"`
	LastSubmitS  float64 `json:"last_submit_s"`
	SpanS        float64 `json:"span_s"` // last − first submit time: the arrival window

	// Processor requests (jobs with P known).
	JobsWithP       int     `json:"jobs_with_procs"`
	SerialShare     float64 `json:"serial_share"`       // P = 1
	PowerOfTwoShare float64 `json:"power_of_two_share"` // P = 2^k, k ≥ 0 (serial jobs included)
	MaxP            int     `json:"max_procs_requested"`
	MeanP           float64 `json:"mean_procs"`

	// Run times (jobs with T known). CV is the population standard
	// deviation over the mean.
	JobsWithRun       int     `json:"jobs_with_run"`
	RunMeanS          float64 `json:"run_mean_s"`
	RunCV             float64 `json:"run_cv"`
	OverOneHourShare  float64 `json:"over_1h_share"`    // T > 1 h
	Over20HoursShare  float64 `json:"over_20h_share"`   // T > 20 h
	MeanProcHours     float64 `json:"mean_proc_hours"`  // mean P×T, processor-hours (jobs with P and T known)
	TotalProcHours    float64 `json:"total_proc_hours"` // Σ P×T
	JobsWithProcHours int     `json:"jobs_with_proc_hours"`

	// T/R, for jobs with R > 0 and T known.
	TR TRStats `json:"t_over_r"`

	// Offered load: Σ P×T / (Procs × SpanS); 0 when Procs or SpanS is 0.
	OfferedLoad float64 `json:"offered_load"`
	// Monthly processor demand: for each complete 30-day window from the
	// first submit time, Σ P×T of the jobs submitted in it over
	// Procs × 30 days. Empty when the trace spans less than a month or
	// Procs is 0.
	MonthlyDemand     []float64 `json:"monthly_demand"`
	MonthlyDemandMean float64   `json:"monthly_demand_mean"`
}

// TRStats is the distribution of actual over requested run time.
type TRStats struct {
	Jobs          int     `json:"jobs"`
	ShareBelow0_2 float64 `json:"share_below_0_2"` // T/R < 0.2
	ShareOver1    float64 `json:"share_over_1"`    // T > R: ran past the request
	P10           float64 `json:"p10"`
	P25           float64 `json:"p25"`
	Median        float64 `json:"p50"`
	P75           float64 `json:"p75"`
	P90           float64 `json:"p90"`
	Mean          float64 `json:"mean"`
}

// Characterise reads jobs (for example Reader.All or Slice) and measures
// them against a machine of procs processors (procs ≤ 0: no load
// measures). It keeps one float per job with a known T/R, for the
// quantiles, and a sum per month; nothing else grows with the trace.
func Characterise(jobs iter.Seq2[Job, error], procs int) (Stats, error) {
	s := Stats{Procs: max(procs, 0), MonthlyDemand: []float64{}}
	var (
		serial, pow2, sumP int
		nRun               int
		mean, m2           float64 // Welford
		over1h, over20h    int
		first, last        float64
		anchor             float64
		months             = map[int]float64{}
		ratios             []float64
		below, overR       int
		sumRatio           float64
	)
	for j, err := range jobs {
		if err != nil {
			return s, err
		}
		s.Jobs++
		if s.Jobs == 1 {
			first, last, anchor = j.Submit, j.Submit, j.Submit
		}
		first, last = min(first, j.Submit), max(last, j.Submit)
		p := j.P()
		if p > 0 {
			s.JobsWithP++
			sumP += p
			if p == 1 {
				serial++
			}
			if bits.OnesCount(uint(p)) == 1 {
				pow2++
			}
			s.MaxP = max(s.MaxP, p)
		}
		t := j.Run
		if t < 0 {
			continue
		}
		nRun++
		d := t - mean
		mean += d / float64(nRun)
		m2 += d * (t - mean)
		if t > 3600 {
			over1h++
		}
		if t > 20*3600 {
			over20h++
		}
		if p > 0 {
			ph := float64(p) * t / 3600
			s.JobsWithProcHours++
			s.TotalProcHours += ph
			months[int(math.Floor((j.Submit-anchor)/Month))] += ph
		}
		if j.ReqTime > 0 {
			r := t / j.ReqTime
			ratios = append(ratios, r)
			sumRatio += r
			if r < 0.2 {
				below++
			}
			if r > 1 {
				overR++
			}
		}
	}
	if s.Jobs == 0 {
		return s, nil
	}
	s.FirstSubmitS, s.LastSubmitS, s.SpanS = first, last, last-first
	if s.JobsWithP > 0 {
		n := float64(s.JobsWithP)
		s.SerialShare = float64(serial) / n
		s.PowerOfTwoShare = float64(pow2) / n
		s.MeanP = float64(sumP) / n
	}
	s.JobsWithRun = nRun
	if nRun > 0 {
		n := float64(nRun)
		s.RunMeanS = mean
		if mean > 0 {
			s.RunCV = math.Sqrt(m2/n) / mean
		}
		s.OverOneHourShare = float64(over1h) / n
		s.Over20HoursShare = float64(over20h) / n
	}
	if s.JobsWithProcHours > 0 {
		s.MeanProcHours = s.TotalProcHours / float64(s.JobsWithProcHours)
	}
	if len(ratios) > 0 {
		n := float64(len(ratios))
		slices.Sort(ratios)
		s.TR = TRStats{
			Jobs:          len(ratios),
			ShareBelow0_2: float64(below) / n,
			ShareOver1:    float64(overR) / n,
			P10:           quantile(ratios, 0.10),
			P25:           quantile(ratios, 0.25),
			Median:        quantile(ratios, 0.50),
			P75:           quantile(ratios, 0.75),
			P90:           quantile(ratios, 0.90),
			Mean:          sumRatio / n,
		}
	}
	if procs > 0 {
		if s.SpanS > 0 {
			s.OfferedLoad = s.TotalProcHours * 3600 / (float64(procs) * s.SpanS)
		}
		// Complete windows: [anchor + k·Month, anchor + (k+1)·Month)
		// inside [first, last].
		for k := int(math.Ceil((first - anchor) / Month)); anchor+float64(k+1)*Month <= last; k++ {
			s.MonthlyDemand = append(s.MonthlyDemand, months[k]*3600/(float64(procs)*Month))
		}
		if len(s.MonthlyDemand) > 0 {
			sum := 0.0
			for _, d := range s.MonthlyDemand {
				sum += d
			}
			s.MonthlyDemandMean = sum / float64(len(s.MonthlyDemand))
		}
	}
	return s, nil
}

// quantile is the linearly interpolated q-quantile of sorted x (type 7 of
// Hyndman & Fan, the default of R and NumPy).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	h := q * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// Table writes s as a two-column table for people.
func (s Stats) Table(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	pct := func(x float64) string { return fmt.Sprintf("%.1f %%", 100*x) }
	rows := [][2]string{
		{"jobs", fmt.Sprint(s.Jobs)},
		{"span (submit times)", fmt.Sprintf("%.0f s (%.1f days)", s.SpanS, s.SpanS/86400)},
		{"serial share", pct(s.SerialShare)},
		{"power-of-two share", pct(s.PowerOfTwoShare)},
		{"largest request", fmt.Sprintf("%d processors", s.MaxP)},
		{"mean processors", fmt.Sprintf("%.2f", s.MeanP)},
		{"run time mean", fmt.Sprintf("%.0f s (%.2f h)", s.RunMeanS, s.RunMeanS/3600)},
		{"run time CV", fmt.Sprintf("%.2f", s.RunCV)},
		{"run over 1 h", pct(s.OverOneHourShare)},
		{"run over 20 h", pct(s.Over20HoursShare)},
		{"mean P×T", fmt.Sprintf("%.1f processor-hours", s.MeanProcHours)},
	}
	if s.TR.Jobs > 0 {
		rows = append(rows,
			[2]string{"T/R jobs (R known)", fmt.Sprint(s.TR.Jobs)},
			[2]string{"T/R < 0.2", pct(s.TR.ShareBelow0_2)},
			[2]string{"T/R > 1", pct(s.TR.ShareOver1)},
			[2]string{"T/R p10 p25 p50 p75 p90", fmt.Sprintf("%.3f %.3f %.3f %.3f %.3f",
				s.TR.P10, s.TR.P25, s.TR.Median, s.TR.P75, s.TR.P90)},
			[2]string{"T/R mean", fmt.Sprintf("%.3f", s.TR.Mean)})
	} else {
		rows = append(rows, [2]string{"T/R", "no job has a requested time"})
	}
	if s.Procs > 0 {
		rows = append(rows, [2]string{fmt.Sprintf("offered load on %d processors", s.Procs), pct(s.OfferedLoad)})
		if len(s.MonthlyDemand) > 0 {
			lo, hi := slices.Min(s.MonthlyDemand), slices.Max(s.MonthlyDemand)
			rows = append(rows, [2]string{"monthly demand (30-day windows)",
				fmt.Sprintf("mean %s, min %s, max %s over %d months", pct(s.MonthlyDemandMean), pct(lo), pct(hi), len(s.MonthlyDemand))})
		} else {
			rows = append(rows, [2]string{"monthly demand", "trace spans less than 30 days"})
		}
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}
