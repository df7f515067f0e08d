package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"msched/spool"
	"msched/web"
)

// cancelStates are the states a job can be cancelled in (--state), and
// "pending" for the first four.
var cancelStates = []string{string(spool.Submitted), string(spool.Queued), string(spool.Scheduling),
	string(spool.Runnable), string(spool.Running), "pending"}

func newCancelCmd(v *viper.Viper) *cobra.Command {
	var f jobFilter
	cmd := &cobra.Command{
		Use:   "cancel [JID…] [--user U] [--name N] [--state S]",
		Short: "Ask the daemons to cancel jobs: by JID, or by user, name and state",
		Long: `cancel writes a request into control/ for each job named. A job that has not
started is rejected with reason "cancelled"; a running job's process group gets
SIGTERM (SIGKILL after run.kill_grace) and the job is reported with its partial
output. JIDs may be written J000010, J10 or 10.

--user, --name and --state choose jobs instead, as scancel does (each takes a
comma-separated list; users and names may be shell patterns such as 'sim-*';
--state pending is submitted, queued, scheduling and runnable); together they
must all match, and with JIDs they narrow those. Without --user, the jobs
chosen are your own (root's: everyone's).

Only a job's owner or root may cancel it. cancel says what it asked to cancel
and what it refused, and why; it exits 0 when every job named was asked to
cancel, 3 when one was not found, 4 when one was refused (another user's job,
or one that has ended).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			jids, err := jidArgs(args)
			if err != nil {
				return err
			}
			if err := f.check(pendingStates, cancelStates); err != nil {
				return err
			}
			if len(jids) == 0 && !f.any() {
				return codef(exitUsage, "name the jobs to cancel: JIDs, or --user, --name or --state")
			}
			sp, err := openSpool(v)
			if err != nil {
				return err
			}
			return cancelJobs(cmd.OutOrStdout(), cmd.ErrOrStderr(), sp, jids, f, os.Geteuid())
		},
	}
	f.flags(cmd, "only jobs in these states: "+strings.Join(cancelStates, ", "))
	return cmd
}

// cancelJobs asks for the cancellation of the jobs named by jids (all of
// them when none) that pass f, as user uid; it prints each request on out
// and each refusal on errOut, and returns an error with the exit code of
// the first failure.
func cancelJobs(out, errOut io.Writer, sp *spool.Spool, jids []string, f jobFilter, uid int) error {
	type target struct {
		jid   string
		st    spool.State
		job   *spool.Job
		found bool
	}
	var targets []target
	if len(jids) > 0 {
		for _, jid := range jids {
			st, j, err := sp.Find(jid)
			if err != nil && !errors.Is(err, spool.ErrNotFound) {
				return err
			}
			targets = append(targets, target{jid, st, j, err == nil})
		}
	} else {
		for _, st := range spool.States {
			if !slices.Contains(cancelStates, string(st)) || (len(f.states) > 0 && !slices.Contains(f.states, string(st))) {
				continue
			}
			es, err := sp.List(st)
			if err != nil {
				return err
			}
			for _, e := range es {
				if !spool.ValidJID(e.Name) {
					continue // a submission init has not taken: no JID to cancel yet
				}
				j, err := sp.Read(st, e.Name)
				if err != nil {
					continue // moved on since List, or unreadable: not a job to cancel
				}
				// Without --user, one's own jobs (root: everyone's).
				if len(f.users) == 0 && ask(j, uid) != nil {
					continue
				}
				targets = append(targets, target{j.JID, st, j, true})
			}
		}
	}
	var errs []error
	asked, refused := 0, 0
	fail := func(err error) {
		if len(targets) > 1 {
			fmt.Fprintln(errOut, err) // a single job's is the command's error
		}
		errs = append(errs, err)
	}
	for _, t := range targets {
		switch {
		case !t.found:
			fail(codef(exitNotFound, "%s: no such job in the spool (`msched history` lists the jobs that have left it)", t.jid))
			continue
		case !f.match(web.ViewJob(t.st, t.job)): // without filters every job matches
			continue
		case t.st == spool.Finished || t.st == spool.Rejected:
			refused++
			fail(codef(exitRefused, "%s: refused: it has already ended (%s)", t.jid, t.st))
			continue
		}
		// The daemons would refuse it (and log the attempt); say so now.
		if err := ask(t.job, uid); err != nil {
			refused++
			fail(withCode(exitRefused, fmt.Errorf("%s: refused: %w", t.jid, err)))
			continue
		}
		if err := sp.RequestCancel(t.jid); err != nil {
			return errors.Join(append(errs, err)...)
		}
		asked++
		again := ""
		if t.job.CancelRequested {
			again = ", asked before"
		}
		fmt.Fprintf(out, "%s: cancel requested (%s%s)\n", t.jid, t.st, again)
	}
	if len(jids) == 0 && asked+refused == 0 {
		return codef(exitNotFound, "no job to cancel matches")
	}
	if len(targets) > 1 || refused > 0 {
		fmt.Fprintf(out, "cancel requested for %d job(s), %d refused\n", asked, refused)
	}
	switch {
	case len(errs) == 1 && len(targets) == 1:
		return errs[0]
	case len(errs) > 0:
		return withCode(exitCode(errs[0]), fmt.Errorf("%d of the jobs named not cancelled", len(errs)))
	}
	return nil
}

// ask is whether user uid may cancel j (spool.Control.Allowed: its owner
// or root).
func ask(j *spool.Job, uid int) error {
	return spool.Control{Kind: spool.Cancel, JID: j.JID, UID: uid}.Allowed(j)
}
