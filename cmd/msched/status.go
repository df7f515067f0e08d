package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"msched/acct"
	"msched/spool"
	"msched/web"
)

// pendingStates are the states `--state pending` stands for: a job that
// has not started.
var pendingStates = []string{string(spool.Submitted), string(spool.Queued), string(spool.Scheduling), string(spool.Runnable)}

func newStatusCmd(v *viper.Viper) *cobra.Command {
	var asJSON bool
	var f jobFilter
	cmd := &cobra.Command{
		Use:   "status [JID…]",
		Short: "Show the daemons' health and every job, or some jobs; or one job's file and history",
		Long: `Without a JID, status prints the daemons' health and lists the jobs in the
spool by state (submitted, queued, scheduling, runnable, running, finished,
rejected), all users' (as squeue does); --user, --state and --name keep some
(each takes a comma-separated list; users and names may be shell patterns such
as 'sim-*'; --state pending is submitted, queued, scheduling and runnable).
A job that has not started says why it waits (pending: init has not taken it,
waiting for hosts, sched is down, …) and, when the schedule sched published
plans it, when it is expected to start (START with ~). Times are UTC.

With JIDs (J000010, J10 and 10 name the same job) it prints each job's state and
whole job file (request, schedule, run, history); a job that has left the spool
is shown by its report (its owner's only), or by its accounting record.

--json prints the job objects (one JSON object, with the daemons, for the list;
the job object itself for one JID, an array for several): the status page's
API objects (/api/jobs), with pending_reason and expected_start.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			jids, err := jidArgs(args)
			if err != nil {
				return err
			}
			if err := f.check(pendingStates, statusStates()); err != nil {
				return err
			}
			if len(jids) > 0 && f.any() {
				return codef(exitUsage, "--user, --state and --name choose jobs from the list; with JIDs give none of them")
			}
			sp, err := openSpool(v)
			if err != nil {
				return err
			}
			if len(jids) > 0 {
				return showJobs(cmd.Context(), cmd.OutOrStdout(), sp, jids, asJSON)
			}
			return listJobs(cmd.OutOrStdout(), sp, f, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: the job objects")
	f.flags(cmd, "only jobs in these states: "+strings.Join(statusStates(), ", "))
	return cmd
}

// statusStates are the names --state takes in status.
func statusStates() []string {
	var out []string
	for _, s := range spool.States {
		out = append(out, string(s))
	}
	return append(out, "pending")
}

// flags adds --user, --state and --name to cmd, into f.
func (f *jobFilter) flags(cmd *cobra.Command, stateHelp string) {
	cmd.Flags().StringSliceVarP(&f.users, "user", "u", nil, "only jobs of these users (names or shell patterns, comma-separated)")
	cmd.Flags().StringSliceVarP(&f.states, "state", "t", nil, stateHelp)
	cmd.Flags().StringSliceVarP(&f.names, "name", "n", nil, "only jobs of these names (shell patterns such as 'sim-*', comma-separated)")
}

// check checks f's states against known and patterns, expanding "pending"
// (status) into pending.
func (f *jobFilter) check(pending, known []string) error {
	f.users, f.states, f.names = splitList(f.users), splitList(f.states), splitList(f.names)
	if err := checkStates("--state", f.states, known); err != nil {
		return err
	}
	if i := slices.Index(f.states, "pending"); i >= 0 && len(pending) > 0 {
		f.states = append(slices.Delete(f.states, i, i+1), pending...)
	}
	if err := checkPatterns("--user", f.users); err != nil {
		return err
	}
	return checkPatterns("--name", f.names)
}

func (f jobFilter) any() bool {
	return len(f.users)+len(f.states)+len(f.names) > 0 || !f.since.IsZero() || !f.until.IsZero()
}

// jidArgs reads JIDs as users type them (spool.ParseJID: J000010, J10,
// j000010, 10), canonical; a malformed one is a usage error.
func jidArgs(args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	for _, a := range args {
		jid, err := spool.ParseJID(a)
		if err != nil {
			return nil, withCode(exitUsage, err)
		}
		if !slices.Contains(out, jid) {
			out = append(out, jid)
		}
	}
	return out, nil
}

// spoolWaitInfo is what explains sp's waiting jobs at now, from the
// daemons' health (returned too) and sched's published schedule.
func spoolWaitInfo(sp *spool.Spool, now time.Time) (waitInfo, []spool.Health, error) {
	health, err := sp.Health(now)
	if err != nil {
		return waitInfo{}, nil, err
	}
	plan, err := sp.ReadSchedule()
	if err != nil {
		return waitInfo{}, nil, err
	}
	return newWaitInfo(plan, health), health, nil
}

// listJobs prints the daemons' health and the jobs in the spool that pass
// f, as a table or as one JSON object.
func listJobs(w io.Writer, sp *spool.Spool, f jobFilter, asJSON bool) error {
	now := time.Now()
	why, health, err := spoolWaitInfo(sp, now)
	if err != nil {
		return err
	}
	rows := []web.JobView{}
	for _, st := range spool.States {
		if len(f.states) > 0 && !slices.Contains(f.states, string(st)) {
			continue
		}
		es, err := sp.List(st)
		if err != nil {
			return err
		}
		for _, e := range es {
			j, err := sp.Read(st, e.Name)
			if errors.Is(err, spool.ErrNotFound) {
				continue // moved on since List
			} else if err != nil {
				r := viewInvalid(st, e.Name, err)
				if st == spool.Submitted {
					r.SubmittedAt = utc(e.ModTime)
				}
				if !f.any() {
					rows = append(rows, r)
				}
				continue
			}
			r := web.ViewJob(st, j)
			r.SetClock(now)
			if st == spool.Submitted && r.SubmittedAt.IsZero() {
				r.SubmittedAt = utc(e.ModTime)
			}
			why.explain(&r, st, j)
			if f.match(r) {
				rows = append(rows, r)
			}
		}
	}
	if asJSON {
		ds := make([]daemonRow, len(health))
		for i, h := range health {
			ds[i] = daemonRow{Daemon: h.Daemon, State: h.State}
			if h.Beat != nil {
				ds[i].PID, ds[i].Host, ds[i].LastBeat = h.Beat.PID, h.Beat.Host, utc(h.Beat.At)
			}
		}
		return json.NewEncoder(w).Encode(map[string]any{"daemons": ds, "jobs": rows})
	}
	writeHealth(w, health)
	if len(rows) == 0 {
		msg := "no jobs in the spool"
		if f.any() {
			msg = "no jobs in the spool match"
		}
		_, err := fmt.Fprintln(w, msg)
		return err
	}
	return writeJobTable(w, rows, false)
}

// writeJobTable prints jobs as a table, times in UTC (the header says so);
// a start with ~ is the one the published schedule expects. history
// (ended) adds when each job ended and how.
func writeJobTable(w io.Writer, rows []web.JobView, ended bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if ended {
		fmt.Fprintln(tw, "STATE\tJID\tNAME\tUSER\tHOSTS\tSUBMITTED (UTC)\tSTARTED\tENDED\tEXIT\tNOTE")
	} else {
		fmt.Fprintln(tw, "STATE\tJID\tNAME\tUSER\tHOSTS\tSUBMITTED (UTC)\tSTART\tNOTE")
	}
	for _, r := range rows {
		id := r.JID
		if id == "" {
			id = "(" + cell(r.File) + ")"
		}
		start := tableTime(r.StartedAt)
		if start == "" && !r.ExpectedStart.IsZero() {
			start = "~" + tableTime(r.ExpectedStart)
		}
		note := r.Reason
		if r.Invalid != "" {
			note = "unreadable: " + r.Invalid
		}
		if r.PendingReason != "" {
			note = r.PendingReason
		}
		if r.Attempts > 1 && r.PendingReason == "" {
			note = strings.TrimSpace(note + fmt.Sprintf(" (attempt %d)", r.Attempts))
		}
		if i := strings.IndexByte(note, '\n'); i >= 0 {
			note = note[:i] + " …"
		}
		name, user, hosts, note := cell(r.Name), cell(r.User), cell(hostsCell(r)), cell(note)
		if ended {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.State, id, name, user, hosts,
				tableTime(r.SubmittedAt), start, tableTime(r.EndedAt), exitText(r), note)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.State, id, name, user, hosts, tableTime(r.SubmittedAt), start, note)
	}
	return tw.Flush()
}

// tableTime is a time in a table whose header says UTC.
func tableTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.DateTime)
}

// exitText is how a job ended, in a word: its exit status, signal,
// "cancelled", or "-" (it never ran).
func exitText(r web.JobView) string {
	switch {
	case r.CancelRequested && r.ExitStatus == nil:
		return "cancelled"
	case r.ExitStatus != nil:
		return fmt.Sprint(*r.ExitStatus)
	case r.Signal != "":
		return r.Signal
	}
	return "-"
}

// showJobs prints each of jids (see showJob): for --json one job's object,
// or an array of several. A JID not found is reported after the others
// (exitNotFound).
func showJobs(ctx context.Context, w io.Writer, sp *spool.Spool, jids []string, asJSON bool) error {
	why, _, err := spoolWaitInfo(sp, time.Now())
	if err != nil {
		return err
	}
	var views []web.JobView
	var errs []error
	for i, jid := range jids {
		if !asJSON && i > 0 {
			fmt.Fprintln(w)
		}
		v, err := showJob(ctx, w, sp, why, jid, asJSON)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		views = append(views, v)
	}
	if asJSON && len(views) > 0 {
		var out any = views
		if len(jids) == 1 {
			out = views[0]
		}
		if err := json.NewEncoder(w).Encode(out); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// showJob prints one job: in the spool, its state, why it waits and its
// job file; gone, its report, or its accounting record when the report is
// gone (retention) too. With asJSON it prints nothing and returns the
// job's object.
func showJob(ctx context.Context, w io.Writer, sp *spool.Spool, why waitInfo, jid string, asJSON bool) (web.JobView, error) {
	st, j, err := sp.Find(jid)
	if err == nil {
		v := web.ViewJob(st, j)
		v.SetClock(time.Now())
		why.explain(&v, st, j)
		if asJSON {
			return v, nil
		}
		data, err := j.Marshal()
		if err != nil {
			return v, err
		}
		fmt.Fprintf(w, "%s: %s\n", jid, st)
		if v.PendingReason != "" {
			fmt.Fprintf(w, "pending: %s\n", v.PendingReason)
		}
		if !v.ExpectedStart.IsZero() {
			fmt.Fprintf(w, "expected start: %s\n", clock(v.ExpectedStart))
		}
		fmt.Fprintln(w)
		_, err = w.Write(data)
		return v, err
	} else if !errors.Is(err, spool.ErrNotFound) {
		return web.JobView{}, err
	}
	// Reaped: its report (its owner's only), else its accounting record.
	report := filepath.Join(sp.Path(spool.DirReports), jid+".txt")
	if !asJSON {
		b, err := os.ReadFile(report)
		if errors.Is(err, fs.ErrPermission) {
			return web.JobView{}, codef(exitRefused, "permission denied: %s belongs to %s; its report %s is for its owner only", jid, fileOwner(report), report)
		} else if err == nil {
			// Its owner can edit the report; root may be the one reading.
			fmt.Fprintf(w, "%s: reported (%s)\n\n", jid, report)
			_, err := io.WriteString(w, visibleText(string(b)))
			return web.JobView{}, err
		}
	}
	rec, found, err := acct.FindRecord(ctx, sp.Path(spool.DirDB), jid)
	if err != nil {
		return web.JobView{}, err
	}
	if !found {
		return web.JobView{}, codef(exitNotFound, "no job %s: not in the spool, no report %s, not in the accounting log", jid, report)
	}
	v := web.ViewRecord(&rec)
	if asJSON {
		return v, nil
	}
	// The report is gone (retention.reports_age); the record stays.
	fmt.Fprintf(w, "%s: %s (left the spool; its report is gone, this is its accounting record)\n\n", jid, rec.State)
	return v, writeRecord(w, v)
}

// writeRecord prints a reaped job's object as "key: value" lines.
func writeRecord(w io.Writer, v web.JobView) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	line := func(k, val string) {
		if val != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, cell(val))
		}
	}
	line("name", v.Name)
	line("user", v.User)
	if len(v.Command) > 0 {
		line("executable", v.Command[0])
	}
	line("hosts", strings.Join(v.Hosts, ","))
	line("submitted", clock(v.SubmittedAt))
	line("started", clock(v.StartedAt))
	line("ended", clock(v.EndedAt))
	line("exit", exitText(v))
	if v.PredictedSeconds != nil {
		line("predicted", fmt.Sprintf("%.1f s", *v.PredictedSeconds))
	}
	if v.ActualSeconds != nil {
		line("actual", fmt.Sprintf("%.1f s", *v.ActualSeconds))
	}
	line("reason", v.Reason)
	return tw.Flush()
}

// fileOwner names the owner of path, for messages; "someone else" if it
// cannot be examined.
func fileOwner(path string) string {
	fi, err := os.Lstat(path)
	if err != nil {
		return "someone else"
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return spool.UserName(int(st.Uid))
	}
	return "someone else"
}

// daemonRow is one daemon's health in status --json.
type daemonRow struct {
	Daemon   string    `json:"daemon"`
	State    string    `json:"state"`
	PID      int       `json:"pid,omitempty"`
	Host     string    `json:"host,omitempty"`
	LastBeat time.Time `json:"last_beat,omitzero"`
}

// writeHealth prints the daemons' health on one line, and a warning for
// each that is not up: jobs do not move past it.
func writeHealth(w io.Writer, hs []spool.Health) {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = h.Daemon + " " + h.State
	}
	fmt.Fprintf(w, "daemons: %s\n", strings.Join(parts, ", "))
	for _, h := range hs {
		if h.State == spool.HealthUp {
			continue
		}
		why := map[string]string{
			spool.HealthStale:   "no heartbeat for " + h.Age.Round(time.Second).String() + " (hung, or its host is down)",
			spool.HealthDown:    "its process is gone",
			spool.HealthStopped: "stopped",
			spool.HealthNever:   "never started on this spool",
		}[h.State]
		fmt.Fprintf(w, "warning: %s is %s: %s; jobs do not move past it\n", h.Daemon, h.State, why)
	}
}
