package web

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"time"

	"gopkg.in/yaml.v3"

	"msched/spool"
)

// What the published schedule does not say. sched publishes its running
// jobs as its policy saw them: a job past its predicted end is shown ending
// policy.OverrunMargin after the decision (the overrun rule), so its bar's
// end and predicted_seconds say "about to end" however long it has overrun,
// and the plan behind it starts then. The page takes a running job's
// prediction from its job file instead, and the user of every job in the
// chart (which the schedule does not carry) from its file too.

// overrunMargin mirrors policy.OverrunMargin (web does not import policy; a
// test checks they agree): a running job published ending within this of
// the schedule's time was shown ending there by the overrun rule.
const overrunMargin = time.Second

// jobFacts is what the page knows of a job in the chart besides the
// schedule.
type jobFacts struct {
	User string
	// A running job read from its file: when it started, when it was
	// predicted to end, its walltime (0: none).
	Read         bool
	Started      time.Time
	PredictedEnd time.Time
	Walltime     time.Duration
	// Gone: running in the schedule, but no longer in running/ or
	// runnable/ (it ended after sched published the schedule).
	Gone bool
}

// runningReadLimit bounds how many running jobs a request parses whole
// to learn their true prediction: those the schedule shows past, or about
// to reach, their predicted end. One per host of a large installation.
const runningReadLimit = 512

// userScanLimit bounds how many other jobs of the chart a request looks
// up the user of (userOf: a read of the file, no parse).
const userScanLimit = 1000

// factsOf gathers the facts of the jobs in the schedule at now: from the
// views already read, else from their files, found through where (each
// listed job file's state, by name). A running job that the schedule shows
// ending by now or within overrunMargin of its publication is parsed
// (sp.Read), for its true predicted end; of the others only the user is
// read (userOf).
func factsOf(sp *spool.Spool, sched *spool.PublishedSchedule, read []JobView, where map[string]spool.State, now time.Time) map[string]jobFacts {
	facts := map[string]jobFacts{}
	add := func(v JobView) {
		f := jobFacts{User: v.User}
		if v.State == spool.Running && !v.StartedAt.IsZero() {
			f.Read, f.Started = true, v.StartedAt
			if v.PredictedSeconds != nil {
				f.PredictedEnd = v.StartedAt.Add(time.Duration(*v.PredictedSeconds * float64(time.Second)))
			}
			if v.WalltimeSeconds != nil {
				f.Walltime = time.Duration(*v.WalltimeSeconds * float64(time.Second))
			}
		}
		facts[v.JID] = f
	}
	for _, v := range read {
		if v.JID != "" && v.Invalid == "" {
			add(v)
		}
	}
	if sched == nil {
		return facts
	}
	scanned, parsed := 0, 0
	for _, j := range sched.Jobs {
		if _, ok := facts[j.JID]; ok {
			continue
		}
		st, ok := where[j.JID]
		if st == spool.Running && j.State == "running" && parsed < runningReadLimit {
			if _, over := runningEnd(j, jobFacts{}, sched.GeneratedAt, now); over {
				parsed++
				if job, err := sp.Read(spool.Running, j.JID); err == nil {
					add(ViewJob(spool.Running, job))
					continue
				}
			}
		}
		var f jobFacts
		if ok && scanned < userScanLimit {
			scanned++
			f.User = userOf(filepath.Join(sp.Dir(st), j.JID))
		}
		f.Gone = j.State == "running" && st != spool.Running && st != spool.Runnable
		facts[j.JID] = f
	}
	return facts
}

// userFileLimit bounds what userOf reads: the daemons' sections, user
// among them, follow the request, which is rarely more than a few KiB.
const userFileLimit = 64 << 10

// userOf reads the user of a job file without parsing it: the top-level
// "user:" line that init wrote (yaml.v3 writes a key at column 0; the
// user's own fields cannot hold such a line, as a multi-line value is
// indented). "" if there is none within userFileLimit.
func userOf(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, userFileLimit))
	if err != nil {
		return ""
	}
	for len(b) > 0 {
		line, rest, _ := bytes.Cut(b, []byte("\n"))
		b = rest
		v, ok := bytes.CutPrefix(line, []byte("user: "))
		if !ok {
			continue
		}
		if len(v) > 0 && (v[0] == '"' || v[0] == '\'') {
			var s string
			if yaml.Unmarshal(v, &s) != nil {
				return ""
			}
			return s
		}
		return string(bytes.TrimSpace(v))
	}
	return ""
}

// runningEnd is when a running job of the schedule is predicted to end,
// and whether it has overrun that prediction as of now: from its file when
// it was read, else from the schedule, where a job published ending within
// overrunMargin of the schedule's time was already past its prediction
// (its true predicted end is then unknown; the published one is a bound).
func runningEnd(j spool.PublishedJob, f jobFacts, generated, now time.Time) (end time.Time, overrun bool) {
	if f.Read && !f.PredictedEnd.IsZero() {
		return f.PredictedEnd, now.After(f.PredictedEnd)
	}
	shown := !generated.IsZero() && !j.End.After(generated.Add(overrunMargin+50*time.Millisecond))
	return j.End, shown || now.After(j.End)
}
