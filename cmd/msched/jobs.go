package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
	"gopkg.in/yaml.v3"

	"msched/daemons"
	"msched/hoststat"
	"msched/policy"
	"msched/spool"
)

func openSpool(v *viper.Viper) (*spool.Spool, error) {
	sp, err := spool.Open(v.GetString("spool"))
	if err != nil {
		return nil, fmt.Errorf("%w (`msched up` creates a spool; --spool names another)", err)
	}
	if err := sp.SetMaxJobFile(v.GetInt64("init.max_job_bytes")); err != nil {
		return nil, fmt.Errorf("config: init.max_job_bytes: %w", err)
	}
	// The bound init claims with, as it published it at its start: a
	// user's msched submit may not read the daemons' configuration.
	if _, err := sp.UsePublishedLimits(); err != nil {
		return nil, err
	}
	return sp, nil
}

func newSubmitCmd(v *viper.Viper) *cobra.Command {
	return &cobra.Command{
		Use:   "submit FILE…",
		Short: "Validate job files and place them in the spool's submitted/ directory",
		Long: `submit checks every job file first, exactly as the init daemon will (strict
YAML: unknown fields, wrong types, a missing command, impossible host counts,
the bounds on size, arguments and environment); if any file is invalid it
prints its problems with their lines and submits nothing. Otherwise each file
is written atomically into submitted/ and its ticket (its name there) is
printed. Each file gets submit_dir: the directory submit ran in (relative
paths in the job resolve against it), unless it sets submit_dir itself. A job
file must be a regular file (a symbolic link is not followed, a FIFO not read)
of at most init.max_job_bytes (1 MiB). A job with components (co-allocation)
is also checked against the hosts file: one that no state of its clusters
could ever hold is refused. The init daemon then gives the job its
JID and runs it as you (the file's owner): see it with msched status.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, err := openSpool(v)
			if err != nil {
				return err
			}
			cwd, err := os.Getwd()
			if err != nil {
				return fmt.Errorf("submit: the current directory, recorded as submit_dir: %w", err)
			}
			datas := make([][]byte, len(args))
			var hosts []policy.Host // the hosts file's, read for the first job with components
			bad := 0
			invalid := func(f, how string, err error) {
				var pe *spool.ParseError
				msg := err.Error()
				if errors.As(err, &pe) {
					msg = pe.Detail()
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: invalid%s:\n  %s\n", f, how, strings.ReplaceAll(msg, "\n", "\n  "))
				bad++
			}
			for i, f := range args {
				if datas[i], err = spool.ReadJobFile(f, sp.JobFileLimit()); err != nil {
					return fmt.Errorf("%w; nothing submitted", err)
				}
				// The problems of the file as the user wrote it (its lines).
				j, err := spool.ParseSubmission(filepath.Base(f), datas[i])
				if err != nil {
					invalid(f, "", err)
					continue
				}
				if len(j.Components) > 0 {
					// A component request no cluster state could ever hold
					// would wait for nothing; the scheduler would reject it.
					if hosts == nil {
						if hosts, err = submitHosts(v); err != nil {
							return fmt.Errorf("%w; nothing submitted", err)
						}
					}
					q := daemons.QueuedJob(j, len(hosts))
					if err := policy.CanHold(&q, hosts); err != nil {
						fmt.Fprintf(cmd.ErrOrStderr(), "%s: components: the hosts file can never hold it: %v\n", f, err)
						bad++
						continue
					}
				}
				// What init will judge: the file with submit_dir added.
				if datas[i], err = spool.SetSubmitDir(datas[i], cwd); err != nil {
					return fmt.Errorf("%s: %w; nothing submitted", f, err)
				}
				if _, err := sp.CheckSubmission(filepath.Base(f), datas[i]); err != nil {
					invalid(f, " with submit_dir added", err)
				}
			}
			if bad > 0 {
				return fmt.Errorf("%d of %d job files invalid; nothing submitted", bad, len(args))
			}
			for i, f := range args {
				name, err := sp.Submit(filepath.Base(f), datas[i])
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: submitted as %s\n", f, filepath.Join(sp.Dir(spool.Submitted), name))
			}
			return nil
		},
	}
}

// submitHosts is the configured hosts as policies see them, for submit's
// check of component requests.
func submitHosts(v *viper.Viper) ([]policy.Host, error) {
	cfg, err := readConfig(v)
	if err != nil {
		return nil, err
	}
	hs, err := loadHosts(cfg)
	if err != nil {
		return nil, fmt.Errorf("the hosts file, to check components against: %w", err)
	}
	out := make([]policy.Host, len(hs))
	for i, h := range hs {
		out[i] = policy.Host{Name: h.Name, Arch: h.Arch, Cluster: h.Cluster}
	}
	return out, nil
}

func newCancelCmd(v *viper.Viper) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel JID",
		Short: "Ask the daemons to cancel a job",
		Long: `cancel writes a request into control/. A job that has not started is rejected
with reason "cancelled"; a running job's process group gets SIGTERM (SIGKILL
after run.kill_grace) and the job is reported with its partial output. Only the
job's owner or root may cancel it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, err := openSpool(v)
			if err != nil {
				return err
			}
			st, j, err := sp.Find(args[0])
			if errors.Is(err, spool.ErrNotFound) {
				return fmt.Errorf("no job %s in the spool (a finished job's report is in %s)", args[0], sp.Path(spool.DirReports))
			} else if err != nil {
				return err
			}
			if st == spool.Finished || st == spool.Rejected {
				return fmt.Errorf("job %s is already %s", args[0], st)
			}
			// The daemons would refuse it (and log the attempt); say so now.
			if err := (spool.Control{Kind: spool.Cancel, JID: j.JID, UID: os.Geteuid()}).Allowed(j); err != nil {
				return err
			}
			if err := sp.RequestCancel(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: cancel requested (job is %s)\n", args[0], st)
			return nil
		},
	}
}

// jobRow is one line of `msched status`.
type jobRow struct {
	JID       string    `json:"jid,omitempty"`
	File      string    `json:"file,omitempty"` // the ticket, in submitted/
	State     string    `json:"state"`
	Name      string    `json:"name,omitempty"`
	User      string    `json:"user,omitempty"`
	Hosts     []string  `json:"hosts,omitempty"`
	Request   string    `json:"request,omitempty"`
	Submitted time.Time `json:"submitted_at,omitzero"`
	Started   time.Time `json:"started_at,omitzero"`
	Attempts  int       `json:"attempts,omitempty"`
	Reason    string    `json:"reason,omitempty"`
}

func newStatusCmd(v *viper.Viper) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [JID]",
		Short: "Show all jobs by state, or one job's file and history",
		Long: `Without a JID, status lists every job in the spool by state (submitted,
queued, scheduling, runnable, running, finished, exited, rejected). With a JID
it prints that job's state and its whole job file (request, schedule, run,
history); a job that has left the spool is shown by its report.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, err := openSpool(v)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				return showJob(cmd.OutOrStdout(), sp, args[0], asJSON)
			}
			return listJobs(cmd.OutOrStdout(), sp, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func listJobs(w io.Writer, sp *spool.Spool, asJSON bool) error {
	var rows []jobRow
	for _, st := range spool.States {
		es, err := sp.List(st)
		if err != nil {
			return err
		}
		for _, e := range es {
			r := jobRow{State: string(st)}
			if st == spool.Submitted {
				r.File = e.Name
				r.Submitted = e.ModTime.UTC()
			} else {
				r.JID = e.Name
			}
			j, err := sp.Read(st, e.Name)
			if errors.Is(err, spool.ErrNotFound) {
				continue // moved on since List
			} else if err != nil {
				r.Reason = "unreadable: " + err.Error()
				rows = append(rows, r)
				continue
			}
			r.Name, r.User, r.Reason = j.Name, j.User, j.Reason
			if !j.SubmittedAt.IsZero() {
				r.Submitted = j.SubmittedAt
			}
			if min, max := j.HostRange(); min == max {
				r.Request = fmt.Sprint(min)
			} else if max == 0 {
				r.Request = fmt.Sprintf("%d..", min)
			} else {
				r.Request = fmt.Sprintf("%d..%d", min, max)
			}
			if j.Schedule != nil {
				r.Hosts = j.Schedule.Hosts
			}
			if j.Run != nil {
				r.Started, r.Attempts = j.Run.StartedAt, j.Run.Attempts
			}
			rows = append(rows, r)
		}
	}
	health, err := sp.Health(time.Now())
	if err != nil {
		return err
	}
	if asJSON {
		if rows == nil {
			rows = []jobRow{}
		}
		ds := make([]daemonRow, len(health))
		for i, h := range health {
			ds[i] = daemonRow{Daemon: h.Daemon, State: h.State}
			if h.Beat != nil {
				ds[i].PID, ds[i].Host, ds[i].LastBeat = h.Beat.PID, h.Beat.Host, h.Beat.At
			}
		}
		return json.NewEncoder(w).Encode(map[string]any{"daemons": ds, "jobs": rows})
	}
	writeHealth(w, health)
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no jobs in the spool")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATE\tJID\tNAME\tUSER\tHOSTS\tSUBMITTED\tNOTE")
	for _, r := range rows {
		id, hosts := r.JID, r.Request
		if id == "" {
			id = "(" + r.File + ")"
		}
		if len(r.Hosts) > 0 {
			hosts = strings.Join(r.Hosts, ",")
		}
		note := r.Reason
		if note == "" && !r.Started.IsZero() {
			note = "started " + r.Started.Local().Format("15:04:05")
		}
		if r.Attempts > 1 {
			note += fmt.Sprintf(" (attempt %d)", r.Attempts)
		}
		if i := strings.IndexByte(note, '\n'); i >= 0 {
			note = note[:i] + " …"
		}
		sub := ""
		if !r.Submitted.IsZero() {
			sub = r.Submitted.Local().Format("2006-01-02 15:04:05")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.State, id, r.Name, r.User, hosts, sub, note)
	}
	return tw.Flush()
}

func showJob(w io.Writer, sp *spool.Spool, jid string, asJSON bool) error {
	st, j, err := sp.Find(jid)
	if errors.Is(err, spool.ErrNotFound) {
		// Reaped: the report is what is left.
		report := filepath.Join(sp.Path(spool.DirReports), jid+".txt")
		b, rerr := os.ReadFile(report)
		if errors.Is(rerr, fs.ErrPermission) {
			return fmt.Errorf("permission denied: %s belongs to %s; its report %s is for its owner only", jid, fileOwner(report), report)
		} else if rerr != nil {
			return fmt.Errorf("no job %s in the spool and no report %s", jid, report)
		}
		if asJSON {
			return json.NewEncoder(w).Encode(map[string]any{"jid": jid, "state": "reported", "report_file": report, "report": string(b)})
		}
		fmt.Fprintf(w, "%s: reported (%s)\n\n", jid, report)
		_, err := w.Write(b)
		return err
	} else if err != nil {
		return err
	}
	data, err := j.Marshal()
	if err != nil {
		return err
	}
	if asJSON {
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			return err
		}
		return json.NewEncoder(w).Encode(map[string]any{"jid": jid, "state": st, "job": m})
	}
	fmt.Fprintf(w, "%s: %s\n\n", jid, st)
	_, err = w.Write(data)
	return err
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

// hostRow is one line of `msched hosts`.
type hostRow struct {
	hoststat.Host
	Kind  string             `json:"kind"`  // how jobs reach it: local, ssh or slurm
	State string             `json:"state"` // up, or down while db/health/ records it
	Down  *hoststat.DownInfo `json:"down,omitempty"`
	Stats *hoststat.Stats    `json:"stats,omitempty"` // latest sample; nil before the first
}

func newHostsCmd(v *viper.Viper) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "hosts",
		Short: "List the hosts, whether each is up, and their latest statistics",
		Long: `hosts lists the hosts jobs are scheduled on (the hosts file, or this machine's
CPUs when there is none), whether each is up or down (a host that did not
answer the stats daemon's probe or a job's start; nothing is placed on it until
it answers again), and the latest sample the stats daemon recorded for each:
load averages, uptime and user idle time. The reasons of down hosts follow the
table. The nodes of a Slurm cluster show as such in the CLUSTER column.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := readConfig(v)
			if err != nil {
				return err
			}
			hs, err := loadHosts(cfg)
			if err != nil {
				return err
			}
			db := filepath.Join(cfg.Spool, spool.DirDB)
			latest, err := hoststat.ReadLatest(db)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			down, err := hoststat.Down(db)
			if err != nil {
				return err
			}
			rows := make([]hostRow, len(hs))
			for i, h := range hs {
				rows[i].Host, rows[i].State = h, "up"
				if a, err := h.Addr(); err == nil {
					rows[i].Kind = a.Kind
				}
				if s, ok := latest[h.Name]; ok {
					rows[i].Stats = &s
				}
				if d, ok := down[h.Name]; ok {
					rows[i].State, rows[i].Down = "down", &d
				}
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(w).Encode(map[string]any{"hosts": rows})
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSTATE\tARCH\tCLUSTER\tADDRESS\tLOAD(1,5,15)\tUPTIME\tUSER IDLE\tSAMPLED")
			now := time.Now()
			var reasons []string
			for _, r := range rows {
				state, cluster := r.State, r.Cluster
				if d := r.Down; d != nil {
					state = "down " + now.Sub(d.Since).Round(time.Second).String()
					reasons = append(reasons, fmt.Sprintf("%s: down since %s: %s", r.Name, d.Since.Local().Format(time.DateTime), d.Reason))
				}
				if r.Kind == hoststat.KindSlurm {
					cluster += " (Slurm)"
				}
				load, up, idle, at := "-", "-", "-", "no sample yet"
				if s := r.Stats; s != nil {
					load = fmt.Sprintf("%.2f %.2f %.2f", s.Load1, s.Load5, s.Load15)
					up = (time.Duration(s.Uptime) * time.Second).String()
					if d, ok := s.UserIdle(); ok {
						idle = d.Round(time.Second).String()
					} else {
						idle = "no user"
					}
					at = s.Time.Local().Format("2006-01-02 15:04:05")
				}
				addr := r.Address
				if addr == "" {
					addr = "local"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, state, r.Arch, cluster, addr, load, up, idle, at)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(reasons) > 0 {
				fmt.Fprintf(w, "\n%s\n", strings.Join(reasons, "\n"))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
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
