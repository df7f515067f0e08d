package daemons

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"msched/spool"
)

// Init is the init daemon: it takes each file in submitted/, gives it a JID
// (spool.Claim) and moves it to queued/ with its user, uid and submit time,
// or, if the file is invalid, to rejected/ with every problem as the reason
// and the user's bytes kept (spool.Claim.Rejection). A claimed entry init
// may not read (a link, not a regular file, over spool.MaxJobFile, another
// user's while the daemons run as an ordinary user) is rejected too, with
// what it is as the reason (spool.Claim.Refused).
type Init struct{ Env }

// Run serves submitted/ until ctx is done.
//
// Recovery at start: a claim left in tmp/ means init died after taking a
// submission out of submitted/ and before removing the claim. If the
// claim's JID is in a state directory, or has left them all and is in the
// accounting log (reapedJIDs), its move was done and only the claim's
// removal was lost: the claim is removed, and the job is not run again
// (a batch removes its claims only at Commit, and a job can run and be
// reaped while init is down). Otherwise the submission has its JID already
// and nobody else will ever look at it, so it is judged again now under
// that JID. There is no Recover(submitted): init's only moves are from
// claims, which spool.RecoverClaimsWith covers. Nothing in it stops init
// from starting: a claim is a user's file, and a user chose what it is (a
// link, a FIFO, a file only its owner may read): such a claim is rejected
// like any bad submission, and a claim that cannot even be moved is logged
// and stays for the next start while init serves the others.
//
// Then it claims what is in submitted/ when it is complete
// (spool.Arrivals.Ready): a file renamed in at once, a file written in
// place once it is closed and spool.QuietTime old. A name whose claim
// failed is tried again after claimRetry, then after twice as long, up to
// the rescan interval; a new version of the file at once.
func (d *Init) Run(ctx context.Context) error {
	log := d.logger("init")
	release, err := d.Spool.LockDaemon("init")
	if err != nil {
		return err
	}
	defer release()
	sp := d.Spool.As(spool.Init)
	// Before the first listing of submitted/, so that how every file that
	// arrives from now on arrived is known.
	arrivals, err := sp.Arrivals()
	if err != nil {
		log.Warn("cannot tell renamed submissions from files written in place; each is claimed once it is unchanged for the quiet time",
			"quiet", spool.QuietTime, "err", err)
	}
	defer arrivals.Close()
	d.recoverClaims(ctx, sp, log)

	sc := &initScan{sp: sp, log: log, arrivals: arrivals, retryMax: d.rescan(), failed: map[string]*failedClaim{}}
	wake := d.Spool.Watch(ctx, []spool.State{spool.Submitted}, d.rescan())
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case _, ok := <-wake:
			if !ok {
				return nil
			}
		case <-timer.C:
		}
		if ctx.Err() != nil {
			return nil
		}
		next, err := sc.scan(ctx)
		if err != nil && ctx.Err() == nil {
			log.Error("scan failed", "err", err)
		}
		// A wake-up for what waits: a file to become quiet, a failed
		// claim to be tried again. Events and the rescan tick come besides.
		timer.Stop()
		if !next.IsZero() {
			timer.Reset(max(time.Until(next), time.Millisecond))
		}
	}
}

// recoverClaims is Run's recovery (see there). The claims to judge again
// are judged as a scan's are, a batch at a time: a batch removes its claims
// only after its moves are durable, and one that is already gone is no
// failure (the move it served is done).
func (d *Init) recoverClaims(ctx context.Context, sp *spool.Spool, log *slog.Logger) {
	claims, done, err := sp.RecoverClaimsWith(ctx, reapedJIDs(sp))
	if err != nil {
		log.Error("recovery: claims left in tmp/", "err", err)
	}
	for _, jid := range done {
		log.Warn("recovery: removed the claim of a job that has already finished; not run again", "jid", jid)
	}
	for len(claims) > 0 && ctx.Err() == nil {
		n := min(len(claims), initBatch)
		for _, c := range claims[:n] {
			log.Info("recovered claim", "jid", c.JID, "file", c.Name)
		}
		batch := sp.Batch()
		err := errors.Join(each(claims[:n], func(c *spool.Claim) error { return judge(batch, c, log) }), batch.Commit())
		if err != nil {
			log.Error("recovery: claims left in tmp/ for the next start", "err", err)
		}
		claims = claims[n:]
	}
}

// claimRetry is how long init waits before it tries again to claim a name
// whose claim failed (the rename refused: an immutable file, a directory
// it may not move, a full disk); each failure doubles it, up to the rescan
// interval. Each try uses up a JID, which the failure's log line names.
const claimRetry = time.Second

// failedClaim is a name in submitted/ whose claim failed: which version of
// it (size and modification time: a new file under the name is tried at
// once), how often, and when to try again.
type failedClaim struct {
	size  int64
	mtime time.Time
	tries int
	retry time.Time
}

// initScan is the state of init's scans of submitted/.
type initScan struct {
	sp       *spool.Spool
	log      *slog.Logger
	arrivals *spool.Arrivals
	retryMax time.Duration
	failed   map[string]*failedClaim
}

// scan claims and judges what submitted/ holds that is ready, and returns
// when something that waits should be looked at again (zero: nothing
// waits).
func (sc *initScan) scan(ctx context.Context) (time.Time, error) {
	es, err := sc.sp.List(spool.Submitted)
	if err != nil {
		return time.Time{}, err
	}
	now := time.Now()
	ready, next := sc.arrivals.Ready(es, now)
	later := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	byName := make(map[string]spool.Entry, len(es))
	for _, e := range es {
		byName[e.Name] = e
	}
	for name, f := range sc.failed {
		if e, ok := byName[name]; !ok || e.Size != f.size || !e.ModTime.Equal(f.mtime) {
			delete(sc.failed, name) // gone, or a new file: tried afresh
		}
	}
	names := ready[:0:0]
	for _, name := range ready {
		if f := sc.failed[name]; f != nil && f.retry.After(now) {
			later(f.retry)
			continue
		}
		names = append(names, name)
	}
	// Claimed in arrival order, so that JIDs follow arrival (the
	// scheduler's queue order), initBatch at a time: each batch shares one
	// JID allocation and one pair of fsyncs for its claims, and one
	// spool.Batch (its fsyncs) for its moves, judged concurrently. Not the
	// whole burst at once: a claim's bytes (up to spool.MaxJobFile) are in
	// memory until it is judged, and the first jobs of a burst are queued
	// sooner. A batch's claims go to init's pool at its Commit, for the
	// writes of a second later (atomicfile's recycleAfter).
	var failed []error
	for len(names) > 0 && ctx.Err() == nil { // the rest wait, unclaimed, in submitted/
		n := min(len(names), initBatch)
		claims, errs, err := sc.sp.ClaimAll(names[:n])
		names = names[n:]
		if err != nil {
			return next, errors.Join(append(failed, err)...)
		}
		for name, err := range errs {
			if errors.Is(err, spool.ErrNotFound) {
				continue // withdrawn by its submitter
			}
			later(sc.claimFailed(name, byName[name], err, now))
		}
		batch := sc.sp.Batch()
		failed = append(failed, each(claims, func(c *spool.Claim) error { return judge(batch, c, sc.log) }), batch.Commit())
	}
	return next, errors.Join(failed...)
}

// claimFailed records and logs a failed claim of name (listed as e) and
// returns when to try it again.
func (sc *initScan) claimFailed(name string, e spool.Entry, err error, now time.Time) time.Time {
	f := sc.failed[name]
	if f == nil {
		f = &failedClaim{size: e.Size, mtime: e.ModTime}
		sc.failed[name] = f
	}
	wait := claimRetry << min(f.tries, 16)
	if wait > sc.retryMax {
		wait = max(sc.retryMax, claimRetry)
	}
	f.tries++
	f.retry = now.Add(wait)
	sc.log.Warn("cannot claim submission; trying again later", "file", name, "tries", f.tries, "retry_in", wait, "err", err)
	return f.retry
}

// initBatch is how many submissions init claims at once and judges as one
// spool.Batch: it bounds the claimed bytes init holds (initBatch ×
// spool.MaxJobFile) while sharing fsyncs across a burst.
const initBatch = 64

// mover is a spool view or a batch of its moves.
type mover interface {
	Move(j *spool.Job, from, to spool.State, note string) error
}

// judge moves a claimed submission to queued/ or, if it does not parse or
// is invalid, to rejected/ with the reason. A claim whose move fails stays
// in tmp/ and is judged again at the next start (RecoverClaims).
func judge(sp mover, c *spool.Claim, log *slog.Logger) error {
	j, err := c.Job()
	if err == nil {
		if err := sp.Move(j, spool.Submitted, spool.Queued, ""); err != nil {
			return fmt.Errorf("daemons: init: %s: %w", c.JID, err)
		}
		log.Info("queued", "jid", j.JID, "file", c.Name, "user", j.User)
		return nil
	}
	reason := err.Error()
	var pe *spool.ParseError
	if errors.As(err, &pe) {
		reason = pe.Detail() // one problem per line, without the package prefix
	}
	r := c.Rejection(reason)
	if err := sp.Move(r, spool.Submitted, spool.Rejected, "invalid submission"); err != nil {
		return fmt.Errorf("daemons: init: %s: %w", c.JID, err)
	}
	if c.Refused != "" {
		log.Warn("refused", "jid", r.JID, "file", c.Name, "user", c.User, "uid", c.UID, "reason", c.Refused)
		return nil
	}
	log.Info("rejected", "jid", r.JID, "file", c.Name, "user", c.User, "reason", reason)
	return nil
}
