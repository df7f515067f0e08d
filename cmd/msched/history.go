package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"msched/acct"
	"msched/spool"
	"msched/web"
)

// historyStates are the names history's --state takes: the record's state
// (exited: it ran, or was given up on after it was placed; rejected: it
// never ran) and how it ended (completed: exit status 0; failed: anything
// else; cancelled: by its user), as sacct's states.
var historyStates = []string{spool.OutcomeExited, spool.OutcomeRejected, "completed", "failed", "cancelled"}

func newHistoryCmd(v *viper.Viper) *cobra.Command {
	var f jobFilter
	var since, until string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history [--user U] [--state S] [--name N] [--since T] [--until T] [--json]",
		Short: "List the jobs that have left the spool, from the accounting log",
		Long: `history lists the jobs that have left the spool (reported and removed), oldest
first, from the reaper's accounting log (db/accounting.jsonl, and the rotated
generations accounting.jsonl.N … .1 still kept), as sacct does: every user's.

--user and --name keep the jobs of some users or names (comma-separated lists;
shell patterns such as 'sim-*'); --state keeps the jobs that ended so: exited
(it ran) or rejected (it never did), completed (exit status 0), failed (any
other end) or cancelled. --since and --until keep the jobs whose last time (when
they ended; else started; else were submitted) is in that range: an RFC 3339
time (2026-11-24T09:00:00Z, 2026-11-24T10:00:00+01:00), a date and time in UTC
(2026-11-24 09:00, 2026-11-24), or a time before now (30m, 2h, 7d, 1d12h).

The table's times are UTC. --json prints one job object per line: the object of
status --json (and of the status page's API), "reaped": true.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(nil, historyStates); err != nil {
				return err
			}
			now := time.Now()
			var err error
			if f.since, err = parseWhen("--since", since, now); err != nil {
				return err
			}
			if f.until, err = parseWhen("--until", until, now); err != nil {
				return err
			}
			if !f.since.IsZero() && !f.until.IsZero() && f.until.Before(f.since) {
				return codef(exitUsage, "--until %s is before --since %s", clock(f.until), clock(f.since))
			}
			sp, err := openSpool(v)
			if err != nil {
				return err
			}
			return writeHistory(cmd.Context(), cmd.OutOrStdout(), sp, f, asJSON)
		},
	}
	f.flags(cmd, "only jobs that ended so: "+strings.Join(historyStates, ", "))
	cmd.Flags().StringVar(&since, "since", "", "only jobs that left at or after `T` (RFC 3339, 2026-11-24 09:00 UTC, or 2h, 7d before now)")
	cmd.Flags().StringVar(&until, "until", "", "only jobs that left at or before `T` (as --since)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON job object per line")
	return cmd
}

// writeHistory prints the records of the accounting log that pass f.
func writeHistory(ctx context.Context, w io.Writer, sp *spool.Spool, f jobFilter, asJSON bool) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	var rows []web.JobView
	var werr error
	err := acct.ReadRecords(ctx, sp.Path(spool.DirDB), func(r acct.Record) bool {
		v := web.ViewRecord(&r)
		if !f.match(v, endedAs(r)) || !f.inTime(r.Latest()) {
			return true
		}
		if asJSON {
			werr = enc.Encode(v) // one object per line: the log may be long
			return werr == nil
		}
		rows = append(rows, v)
		return true
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	if !asJSON {
		if len(rows) == 0 {
			fmt.Fprintln(bw, "no job in the accounting log matches")
		} else if err := writeJobTable(bw, rows, true); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// endedAs is how r's job ended, in sacct's words: completed, cancelled or
// failed (killed, or rejected: it never ran).
func endedAs(r acct.Record) string {
	switch e := r.End(); e {
	case acct.EndCompleted, acct.EndCancelled:
		return string(e)
	}
	return "failed"
}

// inTime reports whether t is in f's time range (a zero t is in none that
// is bounded).
func (f jobFilter) inTime(t time.Time) bool {
	if f.since.IsZero() && f.until.IsZero() {
		return true
	}
	if t.IsZero() {
		return false
	}
	return !t.Before(f.since) && (f.until.IsZero() || !t.After(f.until))
}

// whenForms are the forms parseWhen reads, for its error.
const whenForms = "an RFC 3339 time (2026-11-24T09:00:00Z), a UTC date and time (2026-11-24 09:00, 2026-11-24), or a time before now (30m, 2h, 7d, 1d12h)"

// parseWhen reads a time given to flag: an absolute one (RFC 3339, or a
// date and time without a zone, taken as UTC as every time msched prints
// is), or a duration before now, with its unit (2h; spool.ParseWalltime's
// forms, days too). "" is no bound. A bare number or a clock time (10:00)
// is refused: seconds or a time of day, it would be a guess.
func parseWhen(flag, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	if r := []rune(s); unicode.IsLetter(r[len(r)-1]) && !strings.Contains(s, ":") {
		if d, err := spool.ParseWalltime(s); err == nil && d >= 0 {
			return now.Add(-d).UTC(), nil
		}
	}
	return time.Time{}, codef(exitUsage, "%s %q: want %s", flag, s, whenForms)
}
