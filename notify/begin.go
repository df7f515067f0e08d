package notify

import (
	"fmt"
	"strings"
	"time"

	"msched/spool"
)

// RenderBegin writes the report that j, a job in running/, started: where,
// when, after how long a wait, and when it is predicted to end (Kind
// KindBegin). Its user asks for it with mail: [begin] (or mail.when).
func RenderBegin(j *spool.Job) Report {
	r := Report{JID: j.JID, Name: j.Name, User: j.User, To: recipient(j), State: string(spool.Running), Kind: KindBegin, Mail: j.Mail}
	what := j.JID
	if j.Name != "" {
		what += " (" + j.Name + ")"
	}
	on := ""
	if j.Schedule != nil && len(j.Schedule.Hosts) > 0 {
		on = " on " + strings.Join(j.Schedule.Hosts, ", ")
	}
	r.Subject = spool.Clip(OneLine(fmt.Sprintf("msched: job %s started%s", what, on)), SubjectLimit)

	var b strings.Builder
	line := lineTo(&b)
	header(&b, j, "started")
	if !j.SubmittedAt.IsZero() {
		line("Submitted", "%s", stamp(j.SubmittedAt))
	}
	var started time.Time
	if j.Run != nil {
		started = j.Run.StartedAt
	}
	if !started.IsZero() {
		line("Started", "%s", stamp(started))
		if !j.SubmittedAt.IsZero() {
			line("Wait", "%s", dur(started.Sub(j.SubmittedAt)))
		}
		if j.Run.Attempts > 1 {
			line("Attempts", "%d", j.Run.Attempts)
		}
	}
	if predicted, ok := j.Predicted(); ok {
		line("Predicted", "%s", dur(predicted))
		estimate(line, j)
		if !started.IsZero() {
			line("Ends about", "%s", stamp(started.Add(predicted)))
		}
	}
	if j.Walltime > 0 {
		line("Walltime", "%s (the job is stopped after it)", time.Duration(j.Walltime))
	}
	fmt.Fprintf(&b, "\nThe job's report is written to the spool's reports/%s.txt when it ends.\n", j.JID)
	r.Body = b.String()
	return r
}
