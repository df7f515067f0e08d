// Package notify tells users about their jobs: it renders the report the
// reaper writes to spool/reports/<jid>.txt and hands to a Notifier; the
// Mailer is the Notifier that mails it through SMTP (mail.go, smtp.go).
package notify

import (
	"context"
	"path/filepath"
)

// Report is what a user is told about one job that left the system.
type Report struct {
	JID     string
	Name    string
	User    string
	To      string // the job's notify address, else its user
	State   string // "exited" or "rejected"
	Subject string
	Body    string
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

// CapturedPaths returns where the run daemon captures a job's stdout and
// stderr when the job names no destination: <outputDir>/<jid>/stdout and
// …/stderr, outputDir being the spool's output/ directory. The run daemon
// writes there and Render reads from there, so both take the paths from here.
func CapturedPaths(outputDir, jid string) (stdout, stderr string) {
	d := filepath.Join(outputDir, jid)
	return filepath.Join(d, "stdout"), filepath.Join(d, "stderr")
}
