package daemons

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"msched/spool"
)

// Init is the init daemon: it takes each file in submitted/, gives it a JID
// (spool.Claim) and moves it to queued/ with its user and submit time, or,
// if the file is unreadable or invalid, to rejected/ with every problem as
// the reason and the user's bytes kept (spool.Claim.Rejection).
type Init struct{ Env }

// Run serves submitted/ until ctx is done.
//
// Recovery at start: a claim left in tmp/ means init crashed after taking a
// submission out of submitted/ and before (or while) moving it on. The
// submission has its JID already and nobody else will ever look at it, so
// it is judged again now under that JID (spool.RecoverClaims also removes
// claims whose move did complete). There is no Recover(submitted): init's
// only moves are from claims, which RecoverClaims covers.
func (d *Init) Run(ctx context.Context) error {
	log := d.logger("init")
	release, err := d.Spool.LockDaemon("init")
	if err != nil {
		return err
	}
	defer release()
	sp := d.Spool.As(spool.Init)
	claims, err := sp.RecoverClaims()
	if err != nil {
		return fmt.Errorf("daemons: init: recovery: %w", err)
	}
	for _, c := range claims {
		log.Info("recovered claim", "jid", c.JID, "file", c.Name)
		if err := judge(sp, c, log); err != nil {
			return fmt.Errorf("daemons: init: recovery: %w", err)
		}
	}
	skipped := map[string]bool{} // names already logged as unclaimable
	d.serve(ctx, log, []spool.State{spool.Submitted}, func(ctx context.Context) error {
		es, err := sp.List(spool.Submitted)
		if err != nil {
			return err
		}
		// Claimed as one batch, in arrival order, so that JIDs follow
		// arrival (the scheduler's queue order) and a burst of submissions
		// shares one JID allocation and one pair of fsyncs; judging, which
		// moves each file with its own fsyncs, runs concurrently.
		names := make([]string, 0, len(es))
		for _, e := range es {
			if !skipped[e.Name] {
				names = append(names, e.Name)
			}
		}
		claims, errs, err := sp.ClaimAll(names)
		if err != nil {
			return err
		}
		for name, err := range errs {
			if errors.Is(err, spool.ErrNotFound) {
				continue // withdrawn by its submitter
			}
			// A directory or a device node dropped into submitted/ cannot
			// be claimed; say so once, and pass it over from then on.
			log.Warn("cannot claim submission", "file", name, "err", err)
			skipped[name] = true
		}
		// Judged in batches that share their fsyncs (spool.Batch). Not all
		// at once: the first jobs of a burst are queued sooner. A batch's
		// claims go to init's pool at its Commit, for the writes of a
		// second later (atomicfile's recycleAfter).
		var failed []error
		for len(claims) > 0 {
			n := min(len(claims), initBatch)
			batch := sp.Batch()
			failed = append(failed, each(claims[:n], func(c *spool.Claim) error { return judge(batch, c, log) }), batch.Commit())
			claims = claims[n:]
		}
		return errors.Join(failed...)
	})
	return nil
}

// initBatch is how many claims init judges as one spool.Batch.
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
	log.Info("rejected", "jid", r.JID, "file", c.Name, "reason", reason)
	return nil
}
