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
		out[i] = policy.Host{Name: h.Name, Arch: h.Arch, Cluster: h.Cluster, Via: h.Launcher()}
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
