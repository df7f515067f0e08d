package learn

import (
	"math"
	"slices"
	"strings"
	"time"

	"msched/acct"
)

// NoModel names the predictions of jobs without a performance model (the
// profiler's, or the walltime's) in accuracy tables.
const NoModel = "(none)"

// PercentFloor is the shortest actual run time whose prediction error is
// given as a percentage. Below it a percentage says nothing (a job of a
// millisecond predicted 9 s is +886627.6 %, and one such job swamps the
// mean of a hundred): the error is given in seconds instead. 10 s, the
// bound under which bounded slowdown counts a job as 10 s long.
const PercentFloor = 10 * time.Second

// Key is a model on an architecture: what a correction applies to.
type Key struct {
	Model string `json:"model"`
	Arch  string `json:"arch"`
}

// hostsArch gives a record's architecture key: the architectures of its hosts
// (archOf maps a host name to its architecture, "" unknown), distinct,
// sorted and joined by "+"; "" when archOf is nil or knows none of them.
func hostsArch(hosts []string, archOf func(host string) string) string {
	if archOf == nil {
		return ""
	}
	archs := make([]string, len(hosts))
	for i, h := range hosts {
		archs[i] = archOf(h)
	}
	return archKey(archs)
}

// archKey is the architecture key of hosts of architectures archs ("" for
// unknown): the known ones, distinct, sorted and joined by "+".
func archKey(archs []string) string {
	var as []string
	for _, a := range archs {
		if a != "" && !slices.Contains(as, a) {
			as = append(as, a)
		}
	}
	slices.Sort(as)
	return strings.Join(as, "+")
}

// keyOf is a record's (model, architecture).
func keyOf(r acct.Record, archOf func(string) string) Key {
	m := r.Model
	if m == "" {
		m = NoModel
	}
	return Key{Model: m, Arch: hostsArch(r.Hosts, archOf)}
}

// Stat is one model's accuracy on one architecture over finished jobs.
type Stat struct {
	Key
	Count int `json:"count"`
	// MeanError is the mean of predicted − actual, seconds: positive when
	// the model over-predicts.
	MeanError float64 `json:"mean_error_s"`
	// MeanAbsError is the mean of |predicted − actual|, seconds.
	MeanAbsError float64 `json:"mean_abs_error_s"`
	// MAPE is the mean of |predicted − actual| / actual, in percent, over
	// the jobs that ran at least PercentFloor (PctCount of them).
	MAPE     float64 `json:"mean_abs_pct_error"`
	PctCount int     `json:"pct_count"`
	// ShortMeanAbsError is the mean of |predicted − actual|, seconds, over
	// the jobs that ran less than PercentFloor (ShortCount of them).
	ShortMeanAbsError float64 `json:"short_mean_abs_error_s"`
	ShortCount        int     `json:"short_count"`
}

// Usable reports whether a record can measure a prediction: it completed
// (acct.Record.Completed) and was predicted.
func Usable(r acct.Record) bool {
	return r.Completed() && r.PredictedSeconds != nil && *r.PredictedSeconds > 0
}

// Accuracy measures every (model, architecture) over the usable records,
// sorted by model then architecture.
func Accuracy(recs []acct.Record, archOf func(string) string) []Stat {
	acc := map[Key]*Stat{}
	for _, r := range recs {
		if !Usable(r) {
			continue
		}
		k := keyOf(r, archOf)
		s := acc[k]
		if s == nil {
			s = &Stat{Key: k}
			acc[k] = s
		}
		pred, act := *r.PredictedSeconds, *r.ActualSeconds
		s.Count++
		s.MeanError += pred - act
		s.MeanAbsError += math.Abs(pred - act)
		if act >= PercentFloor.Seconds() {
			s.PctCount++
			s.MAPE += 100 * math.Abs(pred-act) / act
		} else {
			s.ShortCount++
			s.ShortMeanAbsError += math.Abs(pred - act)
		}
	}
	out := make([]Stat, 0, len(acc))
	for _, s := range acc {
		s.MeanError /= float64(s.Count)
		s.MeanAbsError /= float64(s.Count)
		if s.PctCount > 0 {
			s.MAPE /= float64(s.PctCount)
		}
		if s.ShortCount > 0 {
			s.ShortMeanAbsError /= float64(s.ShortCount)
		}
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Stat) int {
		if c := strings.Compare(a.Model, b.Model); c != 0 {
			return c
		}
		return strings.Compare(a.Arch, b.Arch)
	})
	return out
}
