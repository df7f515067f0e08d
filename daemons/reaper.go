package daemons

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"msched/notify"
	"msched/spool"
)

// Reaper is the reaper daemon: for each job in finished/ and rejected/ it
// writes the report to spool/reports/<JID>.txt, appends one accounting
// record (db/accounting.swf and db/accounting.jsonl), hands the report to
// the Notifier, and removes the job file. It also removes cancel requests
// whose job has already left (or never existed), and stale staging files.
//
// The steps are idempotent, so a crash between any two of them costs
// nothing: the job file is removed last, and reaping it again rewrites the
// same report and adds no second accounting record. The Notifier makes a
// notification durable (the Mailer: its queue file) before the job file
// goes, so a crash loses none; a job reaped twice because of a crash may be
// notified twice. The reaper also applies the Retention limits (retention.go).
//
// It also tells users that their jobs started: a job newly in running/
// whose user wants that (notify.Wants: its mail: [begin], or mail.when)
// gets a begin report (notify.RenderBegin) through the same Notifier. The
// reaper, not the run daemon, hands it over so that the Mailer's durable
// queue keeps its one writer, and a start waits for no queue file.
type Reaper struct {
	Env
	Notifier  notify.Notifier // nil: reports are only written to files
	Retention Retention       // zero: everything is kept for ever
}

// NotifyTimeout bounds one call of the Notifier, which only queues.
const NotifyTimeout = time.Minute

// cleanEvery is how often the reaper removes staging files left by writers
// that crashed (spool.CleanTmp), and staleTmp how old they must be: far
// longer than any write takes.
const (
	cleanEvery = time.Minute
	staleTmp   = 10 * time.Minute
)

// Run serves finished/ and rejected/ until ctx is done.
//
// Recovery at start: nothing moves out of finished/ or rejected/, so no move
// of the reaper's can be cut in half and there is nothing for
// spool.Recover to complete. A crash can only have stopped the reaper
// between the steps of one reap, which the first scan repeats (see Reaper).
// What the reaper must know before that scan is which JIDs the accounting
// log already holds: it reads them from the log (openAccounting). A spool
// written by an older msched may hold jobs in exited/, where sched put
// them for the reaper then: they are moved to finished/ first
// (spool.RecoverExited), or they would never be reported.
func (d *Reaper) Run(ctx context.Context) error {
	log := d.logger("reaper")
	release, err := d.Spool.LockDaemon("reaper")
	if err != nil {
		return err
	}
	defer release()
	sp := d.Spool.As(spool.Reaper)
	moved, err := sp.RecoverExited()
	if err != nil {
		return fmt.Errorf("daemons: reaper: recovery: %w", err)
	}
	if len(moved) > 0 {
		log.Info("recovered jobs an older msched left in exited/; reported from finished/", "count", len(moved))
	}
	alog, err := openAccounting(sp.Path(spool.DirDB))
	if err != nil {
		return fmt.Errorf("daemons: reaper: %w", err)
	}
	defer alog.close()
	rp := &reaping{sp: sp, log: log, alog: alog, notifier: d.Notifier, retain: &retainer{Retention: d.Retention},
		bad: map[string]bool{}, begun: map[string]bool{}}
	states := spool.Removable
	if d.Notifier != nil {
		states = append(slices.Clip(states), spool.Running) // begin reports
	}
	d.serve(ctx, log, states, nil, noNext(rp.scan))
	return nil
}

type reaping struct {
	sp        *spool.Spool
	log       *slog.Logger
	alog      *accounting
	notifier  notify.Notifier
	retain    *retainer
	bad       map[string]bool // unreadable job files already logged
	begun     map[string]bool // files in running/ whose begin report is dealt with
	lastClean time.Time
}

func (rp *reaping) scan(ctx context.Context) error {
	var jobs []*spool.Job
	for _, st := range spool.Removable {
		es, err := rp.sp.List(st)
		if err != nil {
			return err
		}
		for _, e := range es {
			j, err := rp.sp.Read(st, e.Name)
			if errors.Is(err, spool.ErrNotFound) {
				continue
			} else if err != nil {
				// Daemons write only what parses back (spool.encode), so this
				// is a hand-edited or damaged file: left for a human, like
				// Postfix's corrupt queue, and logged once.
				if k := string(st) + "/" + e.Name; !rp.bad[k] {
					rp.log.Error("unreadable job file left in place", "state", st, "file", e.Name, "err", err)
					rp.bad[k] = true
				}
				continue
			}
			jobs = append(jobs, j)
		}
	}
	errs := []error{rp.reap(ctx, jobs), rp.begins(ctx)}
	if err := rp.controls(); err != nil {
		errs = append(errs, err)
	}
	if time.Since(rp.lastClean) >= cleanEvery {
		rp.lastClean = time.Now()
		if n, err := rp.sp.CleanTmp(staleTmp); err != nil {
			errs = append(errs, err)
		} else if n > 0 {
			rp.log.Info("removed stale staging files", "count", n)
		}
	}
	errs = append(errs, rp.retain.apply(ctx, rp.sp, rp.alog, rp.log, time.Now()))
	return errors.Join(errs...)
}

// reap reports a batch of jobs and removes them; see Reaper for why each
// step may be repeated. The steps keep their order for every job (report
// file, accounting, notification, removal), but each is done for the whole
// batch at once: reports, notifications and removals concurrently,
// accounting in one append, so that a burst of finished jobs shares its
// fsyncs.
func (rp *reaping) reap(ctx context.Context, jobs []*spool.Job) error {
	if len(jobs) == 0 || ctx.Err() != nil {
		return nil
	}
	reps := make(map[*spool.Job]notify.Report, len(jobs))
	var mu sync.Mutex
	var done []*spool.Job
	written := rp.sp.Batch() // reports/ fsynced once, before anything is removed
	errReports := each(jobs, func(j *spool.Job) error {
		var acc *notify.ModelAccuracy
		if j.Model != nil {
			acc = rp.alog.accuracy(j.Model.Name)
		}
		rep := notify.RenderAccuracy(j, rp.sp.Path(spool.DirOutput), acc)
		text := []byte(fmt.Sprintf("To: %s\nSubject: %s\n\n%s", notify.OneLine(rep.To), notify.OneLine(rep.Subject), rep.Body))
		dir, name := rp.sp.Path(spool.DirReports), j.JID+".txt"
		var err error
		if uid, private := reportOwner(j); private {
			err = written.WriteFileFor(dir, name, text, uid)
		} else {
			err = written.WriteFile(dir, name, text)
		}
		if err != nil {
			return fmt.Errorf("daemons: reaper: report %s: %w", j.JID, err)
		}
		mu.Lock()
		defer mu.Unlock()
		reps[j] = rep
		done = append(done, j)
		return nil
	})
	if err := written.Commit(); err != nil {
		return errors.Join(errReports, fmt.Errorf("daemons: reaper: reports: %w", err))
	}
	// Account in the scan's order (finished, then rejected, each by JID), not
	// in the order the concurrent report writes finished.
	pos := make(map[*spool.Job]int, len(jobs))
	for i, j := range jobs {
		pos[j] = i
	}
	slices.SortFunc(done, func(a, b *spool.Job) int { return pos[a] - pos[b] })
	if err := rp.alog.record(done...); err != nil {
		return errors.Join(errReports, fmt.Errorf("daemons: reaper: %w", err))
	}
	// Handed over before the removal: a job whose notification is not
	// durable stays, and is reaped again (the steps above repeat harmlessly).
	var notified []*spool.Job
	errNotify := each(done, func(j *spool.Job) error {
		if rp.notifier != nil && notify.Wants(rp.notifier, reps[j]) {
			nctx, cancel := context.WithTimeout(ctx, NotifyTimeout)
			defer cancel()
			if err := rp.notifier.Notify(nctx, reps[j]); err != nil {
				return fmt.Errorf("daemons: reaper: %s kept for its notification: %w", j.JID, err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		notified = append(notified, j)
		return nil
	})
	batch := rp.sp.Batch()
	errRemove := each(notified, func(j *spool.Job) error {
		if err := batch.Remove(j); err != nil && !errors.Is(err, spool.ErrNotFound) {
			return fmt.Errorf("daemons: reaper: %w", err)
		}
		rp.log.Info("reaped", "jid", j.JID, "state", j.State(), "subject", reps[j].Subject)
		return nil
	})
	return errors.Join(errReports, errNotify, errRemove, batch.Commit())
}

// begins hands the Notifier the begin report of each job newly in
// running/ whose user wants one. A file there is read once while it stays
// (begun); a job that leaves running/ and comes back (re-queued and started
// again) is handed over again, and the Mailer mails a job's begin report
// once (its mark). A report the Notifier could not take is tried at the
// next scan. A job that reached finished/ before a scan saw it running
// gets its end report only.
func (rp *reaping) begins(ctx context.Context) error {
	if rp.notifier == nil || ctx.Err() != nil {
		return nil
	}
	names, err := rp.sp.Names(spool.Running)
	if err != nil {
		return err
	}
	var errs []error
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		seen[name] = true
		if rp.begun[name] {
			continue
		}
		j, err := rp.sp.Read(spool.Running, name)
		if errors.Is(err, spool.ErrNotFound) {
			continue
		} else if err != nil {
			rp.begun[name] = true // the run daemon's file: it deals with it
			continue
		}
		r := notify.RenderBegin(j)
		if notify.Wants(rp.notifier, r) {
			nctx, cancel := context.WithTimeout(ctx, NotifyTimeout)
			err := rp.notifier.Notify(nctx, r)
			cancel()
			if err != nil {
				errs = append(errs, fmt.Errorf("daemons: reaper: begin report of %s: %w", j.JID, err))
				continue
			}
		}
		rp.begun[name] = true
	}
	for name := range rp.begun {
		if !seen[name] {
			delete(rp.begun, name)
		}
	}
	return errors.Join(errs...)
}

// reportOwner says whom a report is for. A report carries the job's output
// and, for a rejected submission, its bytes: when the daemons run as root,
// serving every local user, it is the job owner's alone (mode 0600, owned
// by the job's uid: spool.Batch.WriteFileFor). A job file written before
// msched recorded the uid is taken to be its user's, by name; with no such
// user the report is root's alone. Daemons running as an ordinary user run
// only that user's jobs, and write reports as every other file.
func reportOwner(j *spool.Job) (uid int, private bool) {
	if os.Geteuid() != 0 {
		return 0, false
	}
	if j.UID != nil {
		return *j.UID, true
	}
	if uid, ok := spool.UserID(j.User); ok {
		return uid, true
	}
	return 0, true
}

// controls removes cancel requests that no daemon will act on: their job is
// in finished/ or rejected/ (too late to cancel) or nowhere (reaped, or a JID
// never given out), or the sender may not cancel it (only its owner or
// root may; logged with who tried). spool.Find looks twice, so a job moving
// between states is not taken for gone.
func (rp *reaping) controls() error {
	cs, err := readControls(rp.sp, rp.log)
	if err != nil {
		return err
	}
	for _, c := range cs {
		st, j, err := rp.sp.Find(c.JID)
		switch {
		case errors.Is(err, spool.ErrNotFound), err == nil && slices.Contains(spool.Removable, st):
			if err := rp.sp.DoneControl(c); err != nil {
				return err
			}
			rp.log.Info("removed cancel request for a job that is not active", "jid", c.JID)
		case err != nil:
			// Unreadable job file: its owner deals with it; keep the request.
			rp.log.Warn("cannot look up job of cancel request", "jid", c.JID, "err", err)
		default:
			if err := c.Allowed(j); err != nil {
				refuseControl(rp.sp, rp.log, c, err)
			}
		}
	}
	return nil
}
