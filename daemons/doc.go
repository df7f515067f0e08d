// Package daemons holds the five MS daemons: init, sched, run, reaper and
// stats. Each owns its spool directories (spool/doc.go has the table), is a
// small type with Run(ctx) error, and can run alone in its own process or
// beside the others in one; they share nothing but the spool.
//
// Every daemon works the same way: it opens a view of the spool as itself
// (Spool.As), recovers its own directories at start (each Run says what it
// recovers and why, Postfix style), then scans its directories whenever the
// spool's watcher wakes it (fsnotify events, a periodic rescan, an overflow)
// and acts on what it finds. A wake-up means "rescan", never "this file
// changed", so a lost event costs latency, not correctness.
//
// Run returns nil when ctx is cancelled (a clean stop) and an error only when
// the daemon cannot go on (its spool directories cannot be read, its
// recovery fails). Trouble with one job is logged and that job is retried
// on the next scan or set aside; it never stops the daemon.
package daemons
