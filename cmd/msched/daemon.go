package main

import (
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"msched/launch"
)

func newDaemonCmd(v *viper.Viper) *cobra.Command {
	return &cobra.Command{
		Use:   "daemon init|sched|run|reaper|stats",
		Short: "Run one daemon alone (the others may run in other processes)",
		Long: `daemon runs one of the five daemons in this process until interrupted. The
daemons share nothing but the spool, so each may run in its own process, be
stopped (even with kill -9) and restarted at any instant: at start it recovers
its own directories (see README, "Guarantees after a crash").

  init    submitted/ → queued/ (JID, submit time) or rejected/ (reason)
  sched   queued/ → scheduling/ → runnable/ (hosts, prediction)
  run     runnable/ → running/ → finished/ (starts jobs under shepherds)
  reaper  finished/, rejected/ → reports/<JID>.txt and db/ accounting; removes the job file
  stats   samples every host into db/hoststats.jsonl

SIGHUP reads the configuration file and the hosts file again and restarts the
daemon with them (an invalid file is logged, and the daemon goes on as it was).
The spool must exist (msched up creates it).`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: daemonNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			tuneGC()
			if !slices.Contains(daemonNames, args[0]) {
				return codef(exitUsage, "unknown daemon %q (known: %s)", args[0], strings.Join(daemonNames, ", "))
			}
			cfg, err := readConfig(v)
			if err != nil {
				return err
			}
			sys, err := openSystem(cfg, slog.Default())
			if err != nil {
				return err
			}
			return serveDaemons(cmd.Context(), v, sys, args)
		},
	}
}

// newShepherdCmd is the hidden sub-command the run daemon's launcher
// re-executes this binary as. main handles it before cobra is set up (see
// main.go); this entry only keeps it listed for `msched shepherd` after
// global flags.
func newShepherdCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "shepherd",
		Short:  "Supervise one job (internal: started by the run daemon)",
		Hidden: true,
		Args:   cobra.ArbitraryArgs,
		Run: func(*cobra.Command, []string) {
			os.Exit(launch.ShepherdMain())
		},
	}
}
