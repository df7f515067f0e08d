package notify

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"msched/learn"
	"msched/spool"
)

// OutputLimit is how much of a captured output stream a report carries: the
// last 64 KiB, where a failing program says why. A mail larger than that is
// a burden, and the whole file stays under spool/output/ for whoever wants
// it.
const OutputLimit = 64 << 10

// A report quotes a rejected submission, its reason and the job's fields,
// all of which its user wrote: a report (and its mail) carries at most
// this much of each, however large the file was (a 200 MB file was once
// quoted whole in a 213 MB report). The job file keeps all of it.
const (
	// QuoteLimit bounds the quote of the submitted file: its start, where
	// the user recognises it and where most mistakes are found.
	QuoteLimit = 4 << 10
	// ReasonLimit bounds the reason (init's is at most spool.MaxReason;
	// this bounds any daemon's).
	ReasonLimit = spool.MaxReason
	// FieldLimit bounds one field on the report's lines (the command line,
	// the name, the working directory, …).
	FieldLimit = 1 << 10
	// SubjectLimit bounds the subject line.
	SubjectLimit = 200
)

// Render writes the report for j, a job in finished/ or rejected/. outputDir
// is the spool's output/ directory (Spool.Path(spool.DirOutput)); the
// captured stdout and stderr of a job that named no stdout destination are
// read from there (spool.CapturedPaths). Render never fails: what it cannot read
// it says it could not read.
func Render(j *spool.Job, outputDir string) Report { return RenderAccuracy(j, outputDir, nil) }

// ModelAccuracy is how well a performance model has predicted the jobs that
// used it before this one (from the accounting log). A relative error means
// nothing for a job of a second (predicted 3 s, it is +200 %, and a job of
// a millisecond made it +886627.6 %): the jobs shorter than
// learn.PercentFloor count in seconds instead, as bounded slowdown bounds
// a run time from below.
type ModelAccuracy struct {
	Jobs int // earlier jobs with a prediction and a run time
	// MeanAbsErrorPct is the mean of |predicted − actual| / actual, in %,
	// over the PctJobs of them that ran at least learn.PercentFloor.
	MeanAbsErrorPct float64
	PctJobs         int
	// MeanAbsErrorShort is the mean of |predicted − actual|, in seconds,
	// over the ShortJobs of them that ran less.
	MeanAbsErrorShort float64
	ShortJobs         int
}

// Observe counts one more job, predicted and actual seconds.
func (m *ModelAccuracy) Observe(predicted, actual float64) {
	m.Jobs++
	abs := math.Abs(predicted - actual)
	if actual >= learn.PercentFloor.Seconds() {
		m.PctJobs++
		m.MeanAbsErrorPct += (100*abs/actual - m.MeanAbsErrorPct) / float64(m.PctJobs)
		return
	}
	m.ShortJobs++
	m.MeanAbsErrorShort += (abs - m.MeanAbsErrorShort) / float64(m.ShortJobs)
}

// text says it for the report; "" when there is nothing to say.
func (m *ModelAccuracy) text() string {
	switch {
	case m == nil || m.Jobs == 0:
		return ""
	case m.ShortJobs == 0 || m.PctJobs+m.ShortJobs != m.Jobs:
		// No short job, or counted without Observe: every job is in the
		// percentage.
		return fmt.Sprintf("mean absolute error %.1f%% over the model's %d earlier jobs", m.MeanAbsErrorPct, m.Jobs)
	case m.PctJobs == 0:
		return fmt.Sprintf("mean absolute error %s over the model's %d earlier jobs (all shorter than %v)",
			seconds(m.MeanAbsErrorShort), m.Jobs, learn.PercentFloor)
	}
	return fmt.Sprintf("mean absolute error %.1f%% over the model's %d earlier jobs of %v or more, %s over its %d shorter ones",
		m.MeanAbsErrorPct, m.PctJobs, learn.PercentFloor, seconds(m.MeanAbsErrorShort), m.ShortJobs)
}

// lineTo is a report's "Key:        value" line writer into b, each value
// clipped to FieldLimit.
// A value holding a control character (a line break in a job's name or
// workdir) is written Go-quoted, so that a line never becomes two: the web
// page reads these lines back (web.parseReportHead).
func lineTo(b *strings.Builder) func(k, format string, a ...any) {
	return func(k, format string, a ...any) {
		v := fmt.Sprintf(format, a...)
		if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			v = strconv.Quote(v)
		}
		fmt.Fprintf(b, "%-12s %s\n", k+":", spool.Clip(v, FieldLimit))
	}
}

// header writes the lines every report of j starts with: the job, its
// state, who and what, and where it runs (hosts, a co-allocated job's
// components, the policy's reason for the placement).
func header(b *strings.Builder, j *spool.Job, state string) {
	line := lineTo(b)
	line("Job", "%s", nonEmpty(j.Name, "(no name)"))
	line("JID", "%s", j.JID)
	line("State", "%s", state)
	if j.User != "" {
		line("User", "%s", j.User)
	}
	if len(j.Command) > 0 {
		line("Command", "%s", quoteArgv(j.Command))
	}
	if j.Workdir != "" {
		line("Workdir", "%s", j.Workdir)
	}
	if j.Schedule != nil && len(j.Schedule.Hosts) > 0 {
		line("Hosts", "%s (%d)", strings.Join(j.Schedule.Hosts, ", "), len(j.Schedule.Hosts))
	}
	if r := j.Run; r != nil && len(r.Components) > 0 {
		for k, c := range r.Components {
			text := fmt.Sprintf("%d: cluster %s, %s (%d)", k+1, c.Cluster, strings.Join(c.Hosts, ", "), len(c.Hosts))
			if k == 0 {
				line("Components", "%s", text)
			} else {
				fmt.Fprintf(b, "%-12s %s\n", "", spool.Clip(text, FieldLimit))
			}
		}
	} else if len(j.Components) > 0 {
		line("Components", "%s, %s", spool.ComponentsText(j.Components), j.RequestType())
	}
	if j.Schedule != nil && j.Schedule.Why != "" {
		line("Placement", "%s", j.Schedule.Why)
	}
}

// RenderAccuracy is Render, and for a job with a performance model it also
// says how accurate that model has been so far (acc nil: not known).
func RenderAccuracy(j *spool.Job, outputDir string, acc *ModelAccuracy) Report {
	r := Report{JID: j.JID, Name: j.Name, User: j.User, To: recipient(j), State: spool.Outcome(j.State()), Mail: j.Mail}
	if r.State == "" {
		r.State = spool.OutcomeExited
		if j.Original != "" || j.Run == nil {
			r.State = spool.OutcomeRejected
		}
	}
	r.Failed = failed(j, r.State)
	// One line: the reaper writes it above the report in the report's file,
	// which the web page reads back (a name may hold a line break).
	r.Subject = spool.Clip(OneLine(subject(j, r.State)), SubjectLimit)

	var b strings.Builder
	line := lineTo(&b)
	header(&b, j, r.State)
	if !j.SubmittedAt.IsZero() {
		line("Submitted", "%s", stamp(j.SubmittedAt))
	}
	run := j.Run
	if run != nil && !run.StartedAt.IsZero() {
		line("Started", "%s", stamp(run.StartedAt))
		if !j.SubmittedAt.IsZero() {
			line("Wait", "%s", dur(run.StartedAt.Sub(j.SubmittedAt)))
		}
	}
	if run != nil && !run.EndedAt.IsZero() {
		line("Ended", "%s", stamp(run.EndedAt))
	}
	if run != nil && run.Attempts > 1 {
		line("Attempts", "%d", run.Attempts)
	}
	actual, hasActual := j.Actual()
	predicted, hasPredicted := j.Predicted()
	switch {
	case hasPredicted && hasActual:
		line("Predicted", "%s", dur(predicted))
		estimate(line, j)
		line("Actual", "%s (prediction error %s)", dur(actual), PredictionError(predicted, actual))
	case hasActual:
		line("Actual", "%s (no prediction)", dur(actual))
	case hasPredicted:
		line("Predicted", "%s", dur(predicted))
		estimate(line, j)
	}
	if j.Model != nil && j.Model.Name != "" {
		line("Model", "%s", j.Model.Name)
		if text := acc.text(); text != "" {
			line("Accuracy", "%s", text)
		}
	}
	if run != nil {
		switch {
		case run.ExitStatus != nil:
			line("Exit status", "%d", *run.ExitStatus)
		case run.Signal != "":
			line("Signal", "%s", run.Signal)
		}
	}
	if j.CancelRequested {
		line("Cancelled", "at the user's request")
	}
	if j.Reason != "" {
		lines := strings.Split(strings.TrimRight(spool.Clip(j.Reason, ReasonLimit), "\n"), "\n")
		line("Reason", "%s", lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(&b, "%-12s %s\n", "", spool.Clip(l, FieldLimit))
		}
	}
	if j.Original != "" {
		if len(j.Original) > QuoteLimit {
			fmt.Fprintf(&b, "\nThe submitted file, as received (only its start: it has %d bytes):\n\n", len(j.Original))
		} else {
			b.WriteString("\nThe submitted file, as received:\n\n")
		}
		b.WriteString(indent(spool.Clip(j.Original, QuoteLimit)))
	}
	if j.Run != nil {
		out, errPath := spool.CapturedPaths(outputDir, j.JID)
		if j.Stdout == "" {
			section(&b, "Standard output", out, true)
		} else {
			fmt.Fprintf(&b, "\nStandard output went to %s.\n", j.Stdout)
		}
		if j.Stderr == "" {
			section(&b, "Standard error", errPath, false)
		}
	}
	r.Body = b.String()
	return r
}

// PredictionError is the prediction error, signed (positive when the
// prediction was too long): relative to the actual run time for a job of
// at least learn.PercentFloor, in seconds for a shorter one, whose
// percentage would say nothing (+886627.6 % for a job of a millisecond
// predicted 9 s).
func PredictionError(predicted, actual time.Duration) string {
	diff := predicted.Seconds() - actual.Seconds()
	if actual < learn.PercentFloor {
		return fmt.Sprintf("%+.1f s", diff)
	}
	return fmt.Sprintf("%+.1f%%", 100*diff/actual.Seconds())
}

// seconds shows a number of seconds with one decimal.
func seconds(s float64) string { return fmt.Sprintf("%.1f s", s) }

// estimate adds the line saying where the prediction came from, when the
// scheduler said.
func estimate(line func(k, format string, a ...any), j *spool.Job) {
	if j.Schedule != nil && j.Schedule.EstimateSource != "" {
		line("Estimate", "%s", j.Schedule.EstimateSource)
	}
}

// recipient is who is told about j: its notify address, else its user (a
// bare name, which the Mailer completes with mail.domain).
func recipient(j *spool.Job) string {
	if j.Notify != "" {
		return j.Notify
	}
	return j.User
}

// failed says whether j, which ended in state (an Outcome), failed in the
// sense of mail: [fail]: it was rejected or did not exit with status 0
// (a signal, a non-zero status, a reason such as cancelled or lost).
func failed(j *spool.Job, state string) bool {
	if state == spool.OutcomeRejected || j.Reason != "" || j.Run == nil || j.Run.Signal != "" {
		return true
	}
	return j.Run.ExitStatus == nil || *j.Run.ExitStatus != 0
}

func subject(j *spool.Job, state string) string {
	what := j.JID
	if j.Name != "" {
		what += " (" + j.Name + ")"
	}
	first := func(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
	switch {
	case state == string(spool.Rejected):
		return fmt.Sprintf("msched: job %s rejected: %s", what, first(nonEmpty(j.Reason, "no reason given")))
	case j.Run != nil && j.Run.ExitStatus != nil && j.Reason == "":
		return fmt.Sprintf("msched: job %s exited with status %d", what, *j.Run.ExitStatus)
	case j.Reason != "":
		return fmt.Sprintf("msched: job %s ended: %s", what, first(j.Reason))
	case j.Run != nil && j.Run.Signal != "":
		return fmt.Sprintf("msched: job %s killed by %s", what, j.Run.Signal)
	}
	return fmt.Sprintf("msched: job %s ended", what)
}

// section appends a captured stream, or a note that there is none; a
// missing file gets that note only when keepMissing (a job that wrote
// nothing to stderr needs no line saying so).
func section(b *strings.Builder, title, path string, keepMissing bool) {
	data, truncated, err := tail(path, OutputLimit)
	switch {
	case os.IsNotExist(err):
		if keepMissing {
			fmt.Fprintf(b, "\n%s: none captured.\n", title)
		}
		return
	case err != nil:
		fmt.Fprintf(b, "\n%s: cannot read %s: %v\n", title, path, err)
		return
	case len(data) == 0:
		fmt.Fprintf(b, "\n%s: empty.\n", title)
		return
	}
	if truncated {
		fmt.Fprintf(b, "\n%s (truncated: the last %d KiB; all of it is in %s):\n\n", title, OutputLimit>>10, path)
	} else {
		fmt.Fprintf(b, "\n%s:\n\n", title)
	}
	b.WriteString(indent(string(data)))
}

// tail reads at most the last limit bytes of path. path is in the job's
// user's directory and the reaper runs as root: it is opened without
// following a symbolic link or blocking on a FIFO (spool.OpenUntrusted), or
// the report, which the user reads, could carry any file of root's.
func tail(path string, limit int64) (data []byte, truncated bool, err error) {
	f, err := spool.OpenUntrusted(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	off := int64(0)
	if fi.Size() > limit {
		off, truncated = fi.Size()-limit, true
	}
	data, err = io.ReadAll(io.NewSectionReader(f, off, limit))
	return data, truncated, err
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	return "    " + strings.ReplaceAll(s, "\n", "\n    ") + "\n"
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000 UTC") }

// dur rounds a duration for people: milliseconds under a minute, seconds above.
func dur(d time.Duration) string {
	if d < time.Minute {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// quoteArgv shows an argv unambiguously: words that are plain are shown as
// they are, the others quoted Go-style. It is for reading, not for a shell.
func quoteArgv(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`") {
			out[i] = fmt.Sprintf("%q", a)
		} else {
			out[i] = a
		}
	}
	return strings.Join(out, " ")
}
