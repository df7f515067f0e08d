package daemons

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"msched/atomicfile"
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
// and tried again later (recoverClaims) while init serves the others.
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
	// msched submit checks with the bound init claims with, even when it
	// cannot read the daemons' configuration.
	if err := sp.PublishLimits(); err != nil {
		log.Warn("cannot publish the bound on a job file; msched submit uses its own configuration's", "err", err)
	}
	// Before the first listing of submitted/, so that how every file that
	// arrives from now on arrived is known.
	arrivals, err := sp.Arrivals()
	if err != nil {
		log.Warn("cannot tell renamed submissions from files written in place; each is claimed once it is unchanged for the quiet time",
			"quiet", spool.QuietTime, "err", err)
	}
	defer arrivals.Close()
	sc := &initScan{sp: sp, log: log, arrivals: arrivals, retryMax: d.rescan(), failed: map[string]*failedClaim{}}
	sc.recoverClaims(ctx, time.Now())

	// The scan asks for a wake-up for what waits: a file to become quiet,
	// a failed claim or move to be tried again; events and the rescan
	// tick come besides.
	d.serve(ctx, log, []spool.State{spool.Submitted}, nil, sc.scan)
	return nil
}

// recoverClaims judges again the claims left in tmp/: at start (see Run),
// and during a run when a claim or a move failed, so that a submission
// whose move failed (a full disk) goes on within seconds of the cause
// going away, not at init's next start. Between scans no batch is in
// flight, so every claim in tmp/ is one to resolve. The claims are judged
// as a scan's are, a batch at a time: a batch removes its claims only
// after its moves are durable, and one that is already gone is no failure
// (the move it served is done). If some fail, it is tried again after
// claimRetry, doubling up to the rescan interval (after a full disk,
// atomicfile.NoSpaceWait).
func (sc *initScan) recoverClaims(ctx context.Context, now time.Time) {
	claims, done, err := sc.sp.RecoverClaimsWith(ctx, reapedJIDs(sc.sp))
	for _, jid := range done {
		sc.log.Warn("removed the claim of a job that has already finished; not run again", "jid", jid)
	}
	errs := []error{err}
	for len(claims) > 0 && ctx.Err() == nil {
		n := min(len(claims), initBatch)
		for _, c := range claims[:n] {
			sc.log.Info("recovered claim", "jid", c.JID, "file", c.Name)
		}
		batch := sc.sp.Batch()
		errs = append(errs, each(claims[:n], func(c *spool.Claim) error { return judge(sc.sp, batch, c, sc.log) }), batch.Commit())
		claims = claims[n:]
	}
	if err := errors.Join(errs...); err != nil && ctx.Err() == nil {
		sc.leftover(err, now)
		sc.log.Error("recovery: claims left in tmp/", "retry_in", sc.recoverAt.Sub(now), "err", err)
		return
	}
	sc.recoverAt, sc.recoverTries = time.Time{}, 0
}

// leftover schedules recoverClaims after a failure (err) left claims in tmp/.
func (sc *initScan) leftover(err error, now time.Time) {
	wait := min(claimRetry<<min(sc.recoverTries, 16), max(sc.retryMax, claimRetry))
	if atomicfile.NoSpace(err) {
		wait = atomicfile.NoSpaceWait(sc.recoverTries)
	}
	sc.recoverTries++
	sc.recoverAt = now.Add(wait)
}

// claimRetry is how long init waits before it tries again to claim a name
// whose claim failed (the rename refused: an immutable file, a directory
// it may not move); each failure doubles it, up to the rescan interval
// (for a full disk, atomicfile.NoSpaceWait). Each try uses up a JID, which
// the failure's log line names.
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
	// recoverAt is when to judge again the claims a failure left in tmp/
	// (zero: none left), after recoverTries failures in a row.
	recoverAt    time.Time
	recoverTries int
}

// scan claims and judges what submitted/ holds that is ready, and returns
// when something that waits should be looked at again (zero: nothing
// waits).
func (sc *initScan) scan(ctx context.Context) (time.Time, error) {
	now := time.Now()
	if !sc.recoverAt.IsZero() && !now.Before(sc.recoverAt) {
		sc.recoverClaims(ctx, now)
	}
	es, err := sc.sp.List(spool.Submitted)
	if err != nil {
		return sc.recoverAt, err
	}
	ready, next := sc.arrivals.Ready(es, now)
	later := func(t time.Time) { next = earliest(next, t) }
	later(sc.recoverAt)
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
			// The batch failed as a whole (its JIDs, an fsync after the
			// renames): claims of it, and of the batches before, may be
			// in tmp/; the tail below has them judged again soon.
			failed = append(failed, err)
			break
		}
		for name, err := range errs {
			if errors.Is(err, spool.ErrNotFound) {
				continue // withdrawn by its submitter
			}
			// The claim may be in tmp/ (renamed, then not read; its name
			// there may be cut short, and the name in submitted/ may
			// already be a new file): recoverClaims looks, whatever
			// submitted/ holds.
			failed = append(failed, err)
			if e, ok := byName[name]; ok {
				if _, lerr := os.Lstat(filepath.Join(sc.sp.Dir(spool.Submitted), name)); lerr == nil {
					later(sc.claimFailed(name, e, err, now))
				}
			}
		}
		batch := sc.sp.Batch()
		failed = append(failed, each(claims, func(c *spool.Claim) error { return judge(sc.sp, batch, c, sc.log) }), batch.Commit())
	}
	err = errors.Join(failed...)
	if err != nil && sc.recoverAt.IsZero() {
		// What failed is a claim left in tmp/ (a move, a commit, a claim
		// not read): judged again soon, not at the next start.
		sc.leftover(err, now)
		later(sc.recoverAt)
	}
	return next, err
}

// claimFailed records and logs a failed claim of name (listed as e) and
// returns when to try it again.
func (sc *initScan) claimFailed(name string, e spool.Entry, err error, now time.Time) time.Time {
	f := sc.failed[name]
	if f == nil {
		f = &failedClaim{size: e.Size, mtime: e.ModTime}
		sc.failed[name] = f
	}
	wait := min(claimRetry<<min(f.tries, 16), max(sc.retryMax, claimRetry))
	if atomicfile.NoSpace(err) {
		wait = atomicfile.NoSpaceWait(f.tries)
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

// judge moves a claimed submission to queued/ or, if it does not parse or
// is invalid, to rejected/ with the reason. An array submission (array:)
// becomes its members, each queued as a job of its own (judgeArray). A
// claim whose move fails stays in tmp/ and is judged again (recoverClaims).
func judge(sp *spool.Spool, batch *spool.Batch, c *spool.Claim, log *slog.Logger) error {
	j, err := c.Job()
	if err == nil && j.Array != "" {
		return judgeArray(sp, batch, c, j, log)
	}
	if err == nil {
		if err := batch.Move(j, spool.Submitted, spool.Queued, ""); err != nil {
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
	if err := batch.Move(r, spool.Submitted, spool.Rejected, "invalid submission"); err != nil {
		return fmt.Errorf("daemons: init: %s: %w", c.JID, err)
	}
	if c.Refused != "" {
		log.Warn("refused", "jid", r.JID, "file", c.Name, "user", c.User, "uid", c.UID, "reason", c.Refused)
		return nil
	}
	log.Info("rejected", "jid", r.JID, "file", c.Name, "user", c.User, "reason", reason)
	return nil
}

// judgeArray queues an array submission as its members: their JIDs are
// reserved in the claim first (spool.ReserveArray: the claim's own JID is
// the first member's, and the array's), then each member is a batched
// move of its own (spool.Batch.QueueArray), and the claim goes at the
// batch's Commit, once all are durable. A claim judged again after a
// crash keeps its JIDs and writes only the members not yet written. The
// submission was checked as any other (its array: and the bound on its
// members' bytes: Claim.Job), so this fails only for the spool's reasons
// (no JIDs, a full disk), and is tried again.
func judgeArray(sp *spool.Spool, batch *spool.Batch, c *spool.Claim, j *spool.Job, log *slog.Logger) error {
	a, err := spool.ParseArray(j.Array)
	if err != nil { // Claim.Job checked it
		return fmt.Errorf("daemons: init: %s: %w", c.JID, err)
	}
	if err := sp.ReserveArray(c, len(a.Indexes)); err != nil {
		return fmt.Errorf("daemons: init: %w", err)
	}
	queued, err := batch.QueueArray(c, j)
	if err != nil {
		return fmt.Errorf("daemons: init: %w", err)
	}
	log.Info("queued array", "jid", c.JID, "file", c.Name, "user", j.User, "array", j.Array,
		"members", len(c.Members), "queued", len(queued), "last", c.Members[len(c.Members)-1])
	return nil
}
