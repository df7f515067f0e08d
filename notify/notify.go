// Package notify tells users about their jobs: it renders the report the
// reaper writes to spool/reports/<jid>.txt and hands to a Notifier; the
// Mailer is the Notifier that mails it through SMTP (mail.go, smtp.go).
package notify

import (
	"context"
	"slices"

	"msched/spool"
)

// Report is what a user is told about one job: that it left the system
// (its report, Kind ""), or that it started (Kind KindBegin).
type Report struct {
	JID     string
	Name    string
	User    string
	To      string // the job's notify address, else its user
	State   string // "exited" or "rejected"; "running" for a begin report
	Subject string
	Body    string
	Kind    string   `json:",omitempty"` // "": the report of a job that left; KindBegin: it started
	Mail    []string `json:",omitempty"` // the job's mail: list (spool.MailBegin, …); nil: the configured default
	Failed  bool     `json:",omitempty"` // the job failed: rejected, or no exit status 0 (spool.MailFail)
}

// KindBegin is the Kind of the report that a job started.
const KindBegin = "begin"

// Wanted says whether r is for its user under when (mail.when's list),
// or under the job's own mail: list when it has one: a begin report with
// spool.MailBegin; a job's end with spool.MailEnd, or with spool.MailFail
// when it failed. An empty mail: list is none (a job file written back by
// a daemon drops it).
func Wanted(r Report, when []string) bool {
	if len(r.Mail) > 0 {
		when = r.Mail
	}
	if r.Kind == KindBegin {
		return slices.Contains(when, spool.MailBegin)
	}
	return slices.Contains(when, spool.MailEnd) || r.Failed && slices.Contains(when, spool.MailFail)
}

// A Chooser is a Notifier that chooses the reports it takes (the Mailer:
// by mail.when and the job's mail:).
type Chooser interface {
	Wants(r Report) bool
}

// Wants says whether n takes r: a Chooser says; any other Notifier takes
// what DefaultWhen and the job's mail: list ask for.
func Wants(n Notifier, r Report) bool {
	if c, ok := n.(Chooser); ok {
		return c.Wants(r)
	}
	return Wanted(r, DefaultWhen)
}

// A Notifier delivers a report to its user (mail, a chat hook, …). The
// reaper calls it after the report file and the accounting record are
// written and before it removes the job file, so Notify must make the
// notification durable and return, not deliver it: the Mailer writes its
// queue file and returns. An error means the notification is not durable:
// the reaper keeps the job file and hands the report over again at its next
// scan (a reaper killed after Notify returned and before the removal does
// the same at its next start, so a Notifier may see a report twice).
// A notification that can never be delivered (a malformed address) is not
// an error: the Notifier records it and returns nil, since handing it over
// again cannot help. The report file is the durable record either way.
type Notifier interface {
	Notify(ctx context.Context, r Report) error
}

// NotifierFunc lets a function serve as a Notifier.
type NotifierFunc func(ctx context.Context, r Report) error

// Notify calls f.
func (f NotifierFunc) Notify(ctx context.Context, r Report) error { return f(ctx, r) }
