package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"msched/acct"
	"msched/learn"
	"msched/spool"
)

func newModelAccuracyCmd(v *viper.Viper) *cobra.Command {
	var logFile string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "accuracy",
		Short: "Per-model error statistics of finished jobs (from the accounting log)",
		Long: `Reads the accounting log (<spool>/db/accounting.jsonl, or --log) and prints,
per performance model and architecture of the job's hosts (from the hosts
file, or without one this machine's CPUs, as the daemons use), over the
jobs that completed (exit status 0) with a prediction: the count, the mean
error (predicted − actual, seconds: positive when the model over-predicts),
the mean absolute error and the mean absolute percentage error. Jobs without a model (predicted by the profiler or their walltime)
are listed as ` + learn.NoModel + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := readConfig(v)
			if err != nil {
				return err
			}
			if logFile == "" {
				logFile = filepath.Join(cfg.Spool, spool.DirDB, acct.JSONL)
			}
			if _, err := os.Stat(logFile); err != nil {
				return err
			}
			var recs []acct.Record
			err = acct.ReadFile(cmd.Context(), logFile, nil, func(r acct.Record) bool {
				recs = append(recs, r)
				return true
			})
			if err != nil {
				return err
			}
			// The hosts the daemons ran on: the hosts file, or without
			// one this machine's CPUs, as in loadHosts for the daemons.
			hs, err := loadHosts(cfg)
			if err != nil {
				return err
			}
			arch := map[string]string{}
			for _, h := range hs {
				arch[h.Name] = h.Arch
			}
			stats := learn.Accuracy(recs, func(h string) string { return arch[h] })
			if asJSON {
				return writeAccuracyJSON(cmd.OutOrStdout(), stats)
			}
			return writeAccuracyTable(cmd.OutOrStdout(), stats)
		},
	}
	cmd.Flags().StringVar(&logFile, "log", "", "accounting log (default <spool>/db/accounting.jsonl)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per model and architecture and line")
	return cmd
}

func writeAccuracyJSON(w io.Writer, stats []learn.Stat) error {
	enc := json.NewEncoder(w)
	for _, s := range stats {
		if err := enc.Encode(s); err != nil {
			return err
		}
	}
	return nil
}

func writeAccuracyTable(w io.Writer, stats []learn.Stat) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "model\tarch\tjobs\tmean error s\tmean |error| s\tmean |error| %\t")
	for _, s := range stats {
		arch := s.Arch
		if arch == "" {
			arch = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%+.1f\t%.1f\t%.1f\t\n", s.Model, arch, s.Count, s.MeanError, s.MeanAbsError, s.MAPE)
	}
	return tw.Flush()
}
