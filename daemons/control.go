package daemons

import (
	"log/slog"

	"msched/spool"
)

// control/ is written by every local user (spool/doc.go, "Users and
// permissions"). sched, run and the reaper all read it; what is not a
// request they may act on is removed here, by whichever of them comes
// first, and logged by that one only (spool.DiscardControl says which).

// readControls returns the requests in control/. Junk with a request's
// name (a FIFO, a symbolic link, a file too large or unreadable) is removed
// and logged, never returned.
func readControls(sp *spool.Spool, log *slog.Logger) ([]spool.Control, error) {
	cs, err := sp.Controls()
	if err != nil {
		return nil, err
	}
	out := cs[:0]
	for _, c := range cs {
		if c.Junk == "" {
			out = append(out, c)
			continue
		}
		removed, err := sp.DiscardControl(c)
		if err != nil {
			log.Error("cannot remove junk from control/", "file", c.File(), "what", c.Junk, "owner", c.Sender(), "err", err)
		} else if removed {
			log.Warn("removed junk from control/", "file", c.File(), "what", c.Junk, "owner", c.Sender())
		}
	}
	return out, nil
}

// refuseControl removes a request that c.Allowed refused and logs who
// tried: only a job's owner or root may cancel it.
func refuseControl(sp *spool.Spool, log *slog.Logger, c spool.Control, why error) {
	removed, err := sp.DiscardControl(c)
	if err != nil {
		log.Error("cannot remove refused request", "jid", c.JID, "from", c.Sender(), "err", err)
	} else if removed {
		log.Warn("refused request", "kind", c.Kind, "jid", c.JID, "from", c.Sender(), "why", why)
	}
}
