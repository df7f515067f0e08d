package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"msched/daemons"
	"msched/hoststat"
	"msched/policy"
	"msched/spool"
)

// openSpool opens the spool loadConfig found; one that is not there is
// exitNotFound, with where msched looked and how to make one.
func openSpool(v *viper.Viper) (*spool.Spool, error) {
	sp, err := spool.Open(v.GetString("spool"))
	if isNoSpool(err) {
		return nil, noSpool(v, err)
	} else if err != nil {
		return nil, spoolHint(err)
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
			fmt.Fprintln(tw, "NAME\tSTATE\tARCH\tCLUSTER\tADDRESS\tLOAD(1,5,15)\tUPTIME\tUSER IDLE\tSAMPLED (UTC)")
			now := time.Now()
			var reasons []string
			for _, r := range rows {
				state, cluster := r.State, r.Cluster
				if d := r.Down; d != nil {
					state = "down " + now.Sub(d.Since).Round(time.Second).String()
					reasons = append(reasons, fmt.Sprintf("%s: down since %s: %s", r.Name, clock(d.Since), d.Reason))
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
					at = tableTime(s.Time)
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
