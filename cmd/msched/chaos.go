package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"msched/chaos"
)

func newBenchChaosCmd() *cobra.Command {
	var cfg chaos.Config
	var keep bool
	var settings map[string]string
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Kill daemons and shepherds, fill the disk and drop hostile files; check that no job is lost or run twice",
		Long: `chaos checks README's guarantees after a crash from the outside. It runs the
five daemons as separate "msched daemon X" processes (this binary) on a new
spool under $TMPDIR with --slots local hosts, and submits --jobs jobs at --rate
per second, each of which appends "JID name" to a log when it runs and sleeps
up to --job-time. Among them it drops --bad hostile files into submitted/: a
symbolic link, a FIFO, a directory, a 4 MiB file, a 10,000-deep nesting, bad
YAML, random bytes, an empty file, a merge key that made yaml.v3 panic, a
billion laughs of aliases, a job without a command, one naming a user, a
240-byte name, and a job written in place in pieces (which must still run).

Meanwhile it sends --kills SIGKILLs at random instants, each to a random
daemon, a random running job's shepherd, or run and a shepherd together; a
killed daemon is restarted after up to --max-down. With --full D the spool is
a tmpfs of --disk bytes (this needs root) that is filled for D a third of the
way through the submissions. The reaper rotates the accounting log at each of
its starts once it is over 2 KiB, keeping every generation (change it with
--set retention.accounting_bytes=… and retention.accounting_keep=…).

When every submission has its accounting record (or --timeout), the daemons
are stopped and the outcome printed as one JSON object:
  jobs              submissions (good jobs and hostile files)
  reported_once     with exactly one accounting record and a report file
  lost              with no accounting record
  ran_twice         good jobs that ran more than once
  ran_twice_allowed of them, those whose shepherd was killed (README allows
                    a re-run only then)
  records           whole accounting records; torn_records lines that are not
  left_in_spool     job files and claims left in the spool
  left_running      processes still running that good jobs started in a
                    session of their own (each job starts one)
  rotations         rotated accounting logs; the counts above read them all
  completed         records of jobs that completed on hosts; profiled the
                    runs the historical profiler counted from the log (the
                    sched daemon's feed, caught up at the end): must be
                    equal, and so must their run times, completed_s and
                    profiled_s
and not_run, failed (a good job not reported as exit 0), wrong_outcome (a
hostile file not rejected), duplicated, kills by victim, full_s,
submit_retries, problems (the first few submissions that broke a guarantee).
The exit status is 1 if any guarantee failed. Every random choice comes from
--seed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			cfg.Exe = exe
			dir, err := os.MkdirTemp("", "msched-chaos-")
			if err != nil {
				return err
			}
			if keep {
				fmt.Fprintf(cmd.ErrOrStderr(), "msched bench chaos: working directory %s (kept)\n", dir)
			} else {
				defer os.RemoveAll(dir)
			}
			cfg.Dir = dir
			cfg.Settings = settings
			cfg.Progress = cmd.ErrOrStderr()
			res, err := chaos.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			if err := enc.Encode(res); err != nil {
				return err
			}
			if !res.OK() {
				cmd.SilenceUsage = true
				return fmt.Errorf("bench chaos: a guarantee failed (see problems; rerun with --keep and the same --seed to look at the spool and daemons.log)")
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Jobs, "jobs", 500, "good jobs")
	f.Float64Var(&cfg.Rate, "rate", 20, "submissions per second")
	f.DurationVar(&cfg.JobTime, "job-time", time.Second, "each job sleeps a random time up to this")
	f.IntVar(&cfg.Bad, "bad", 24, "hostile files among the jobs (every kind in turn)")
	f.IntVar(&cfg.Kills, "kills", 20, "SIGKILLs of daemons and shepherds")
	f.DurationVar(&cfg.MaxDown, "max-down", 1500*time.Millisecond, "a killed daemon is restarted after up to this")
	f.IntVar(&cfg.Slots, "slots", 8, "local hosts")
	f.DurationVar(&cfg.Full, "full", 0, "fill the spool's file system (a tmpfs; needs root) for this long; 0: no full phase")
	f.Int64Var(&cfg.DiskBytes, "disk", 32<<20, "size of the tmpfs with --full, bytes")
	f.DurationVar(&cfg.Timeout, "timeout", 10*time.Minute, "give up waiting for the reports after this")
	f.Int64Var(&cfg.Seed, "seed", 1, "seed of every random choice")
	f.BoolVar(&keep, "keep", false, "keep the working directory (spool, daemons.log, ran.log)")
	f.StringToStringVar(&settings, "set", nil, "configuration for the daemons, key=value (e.g. --set run.max_attempts=5)")
	return cmd
}
