// Package web is msched's status page: an overview (the daemons' health,
// jobs per state, the jobs that ended lately, queue length and utilisation
// over the last day, the schedule as an SVG Gantt chart, hosts grouped by
// machine), a page per job, the recent jobs (filtered, paged), a hosts
// page, a model accuracy page, a JSON API and Prometheus metrics.
//
// One handler (New) serves two ways: as a long-running server (`msched web`,
// `msched up --web`) and as a CGI program (`msched cgi`, or any invocation
// with GATEWAY_INTERFACE set). It therefore keeps no state in memory between
// requests: every page is read from the spool at request time, and what a
// login needs (live sessions, recent failed logins) is in files under
// db/web/ (state.go), which the server and every CGI process share.
//
// # What it reads
//
// The web page only reads the spool (spool.List, Read, Find) and what the
// daemons publish under db/: the schedule (schedule.json, written by sched
// after every decision), host samples (hoststat.ReadLatest), the accounting
// log (accounting.jsonl, written by the reaper; read from its end as far
// as a request needs: accounting.go), the heartbeats, and the scheduler's
// evaluator and GA counters (evaluator.json, when sched publishes them);
// and the first lines of the reaper's reports (reports/<JID>.txt), which
// keep a reaped job's command line (report.go). Those files are decoded
// with this package's own types, because nothing imports daemons; a test
// writes them with the daemons' types to keep the two in step.
//
// A CGI program does all of this for every request, the 5-second refresh
// of the overview among them: what a request reads is bounded (the first
// jobs of each state, the running jobs the schedule shows overrunning,
// the log's last records), and the day's usage chart, which reads the log
// back a day, is refreshed once a minute, not with the rest.
//
// # What it writes
//
// Nothing, unless an access token is configured. Then a user who logs in
// with the token may cancel a job (a request in control/, spool.RequestCancel)
// and resubmit one (its user fields, or a reaped job's from its record and
// report, through spool.SubmitAs into submitted/, as the job's owner):
// the two things any user may add to a spool. Every POST carries a CSRF
// token derived from the session and is checked in constant time; the
// session cookie is HttpOnly and SameSite=Strict. Logins write db/web/: a
// file per live session, removed at logout so that a replayed cookie is
// refused, and the failed-login counts behind the rate limits
// (loginlimit.go).
//
// # What it refuses
//
// A request whose Host header is not one of the page's names (HostNames:
// the listen address's, web.hosts) is answered 421 before anything is
// read: the defence against DNS rebinding. Errors reach the browser
// without absolute paths (errors.go); the log has them whole.
//
// # Escaping
//
// Everything a user wrote (job names, commands, paths, reasons) reaches the
// page through html/template, which escapes by context, also inside the
// inline SVG. The page loads nothing from elsewhere: CSS and the refresh
// script are inline, allowed by a Content-Security-Policy nonce.
package web
