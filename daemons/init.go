package daemons

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

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
// Recovery at start: a claim left in tmp/ means init crashed after taking a
// submission out of submitted/ and before (or while) moving it on. The
// submission has its JID already and nobody else will ever look at it, so
// it is judged again now under that JID (spool.RecoverClaims also removes
// claims whose move did complete). There is no Recover(submitted): init's
// only moves are from claims, which RecoverClaims covers. Nothing in it
// stops init from starting: a claim is a user's file, and a user chose what
// it is (a link, a FIFO, a file only its owner may read): such a claim is
// rejected like any bad submission, and a claim that cannot even be moved
// is logged and stays for the next start while init serves the others.
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
		log.Error("recovery: claims left in tmp/", "err", err)
	}
	for _, c := range claims {
		log.Info("recovered claim", "jid", c.JID, "file", c.Name)
		if err := judge(sp, c, log); err != nil {
			log.Error("recovery: claim left in tmp/ for the next start", "jid", c.JID, "err", err)
		}
	}
	skipped := map[string]bool{} // versions of names already logged as unclaimable
	d.serve(ctx, log, []spool.State{spool.Submitted}, func(ctx context.Context) error {
		es, err := sp.List(spool.Submitted)
		if err != nil {
			return err
		}
		// Claimed in arrival order, so that JIDs follow arrival (the
		// scheduler's queue order), initBatch at a time: each batch shares
		// one JID allocation and one pair of fsyncs for its claims, and
		// one spool.Batch (its fsyncs) for its moves, judged concurrently.
		// Not the whole burst at once: a claim's bytes (up to
		// spool.MaxJobFile) are in memory until it is judged, and the
		// first jobs of a burst are queued sooner. A batch's claims go to
		// init's pool at its Commit, for the writes of a second later
		// (atomicfile's recycleAfter).
		names := make([]string, 0, len(es))
		version := make(map[string]string, len(es))
		listed := make(map[string]bool, len(es))
		for _, e := range es {
			version[e.Name] = e.Name + "@" + e.ModTime.String()
			listed[version[e.Name]] = true
			if !skipped[version[e.Name]] {
				names = append(names, e.Name)
			}
		}
		for v := range skipped {
			if !listed[v] {
				delete(skipped, v) // gone: remember only what is there
			}
		}
		var failed []error
		for len(names) > 0 && ctx.Err() == nil { // the rest wait, unclaimed, in submitted/
			n := min(len(names), initBatch)
			claims, errs, err := sp.ClaimAll(names[:n])
			names = names[n:]
			if err != nil {
				return errors.Join(append(failed, err)...)
			}
			for name, err := range errs {
				if errors.Is(err, spool.ErrNotFound) {
					continue // withdrawn by its submitter
				}
				// A file init cannot claim (it cannot rename it, or it
				// was swapped for something else since it was listed):
				// say so once, and pass over this version of it. A new
				// file under the name (a new modification time) is tried
				// again, so neither a race nor its loser can block the
				// name for good.
				log.Warn("cannot claim submission", "file", name, "err", err)
				skipped[version[name]] = true
			}
			batch := sp.Batch()
			failed = append(failed, each(claims, func(c *spool.Claim) error { return judge(batch, c, log) }), batch.Commit())
		}
		return errors.Join(failed...)
	})
	return nil
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
