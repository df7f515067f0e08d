package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
)

// newRoot builds the command tree. Configuration comes, in rising order of
// precedence, from defaults, msched.yaml (in the spool directory, or
// --config), MSCHED_* environment variables and flags.
func newRoot() *cobra.Command {
	v := viper.New()
	root := &cobra.Command{
		Use:   "msched",
		Short: "msched: a meta-scheduler for sequential and parallel jobs on heterogeneous hosts",
		Long: `msched schedules jobs on a heterogeneous set of hosts after the Warwick MS system:
users drop job files into spool/submitted; five daemons (init, sched, run, reaper,
stats) move each job through spool directories; a genetic algorithm chooses the
order of jobs and the hosts of each, from run times predicted by performance
models through a cached evaluator.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if err := loadConfig(v, cmd); err != nil {
				return err
			}
			return startProfile(cmd)
		},
		PersistentPostRun: func(cmd *cobra.Command, args []string) { pprof.StopCPUProfile() },
	}
	root.PersistentFlags().String("config", "", "config file (default: msched.yaml in the spool directory, if present)")
	// Not ./spool: in msched's own tree that is the spool package's source.
	root.PersistentFlags().String("spool", "./var/spool", "spool directory")
	root.PersistentFlags().String("log-level", "info", "log level: debug, info, warn, error")
	root.PersistentFlags().String("cpuprofile", "", "write a CPU profile of the command to `FILE` (read it with go tool pprof)")
	_ = v.BindPFlag("spool", root.PersistentFlags().Lookup("spool"))
	_ = v.BindPFlag("log_level", root.PersistentFlags().Lookup("log-level"))
	setDefaults(v)

	root.AddCommand(newUpCmd(v), newDaemonCmd(v), newSubmitCmd(v), newStatusCmd(v),
		newCancelCmd(v), newHostsCmd(v), newShepherdCmd(), newBenchCmd(v))
	root.AddCommand(newSimulateCmd(v))
	root.AddCommand(newWorkloadCmd())
	root.AddCommand(newWebCmd(v), newCGICmd(v))
	root.AddCommand(newModelCmd(v))
	return root
}

// loadConfig reads the config file and environment into v and sets up
// logging.
func loadConfig(v *viper.Viper, cmd *cobra.Command) error {
	v.SetEnvPrefix("MSCHED")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_", "-", "_"))
	v.AutomaticEnv()
	file, _ := cmd.Flags().GetString("config")
	found := false
	if file == "" {
		if p := filepath.Join(v.GetString("spool"), "msched.yaml"); fileExists(p) {
			file, found = p, true
		}
	}
	if file != "" {
		v.SetConfigFile(file)
		err := v.ReadInConfig()
		switch {
		case err != nil && found && errors.Is(err, fs.ErrPermission):
			// The daemons' file, 0600 because it holds secrets: a user's
			// msched submit or status goes on without it.
			file = ""
		case err != nil:
			return fmt.Errorf("config %s: %w", file, err)
		}
	}
	if err := checkConfig(v, file); err != nil {
		return err
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(v.GetString("log_level"))); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})))
	return nil
}

// startProfile starts CPU profiling when --cpuprofile is given; the root's
// PersistentPostRun stops it.
func startProfile(cmd *cobra.Command) error {
	path, _ := cmd.Flags().GetString("cpuprofile")
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	return pprof.StartCPUProfile(f)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
