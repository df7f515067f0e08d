package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
)

// newRoot builds the command tree, finding the spool in the system's
// places (defaultPlaces).
func newRoot() *cobra.Command { return newRootAt(defaultPlaces) }

// newRootAt builds the command tree, finding the spool in pl when neither
// --spool nor MSCHED_SPOOL names one (locate.go). Configuration comes, in
// rising order of precedence, from defaults, msched.yaml (in the spool
// directory, /etc/msched/msched.yaml on an installed system, or --config),
// MSCHED_* environment variables and flags.
func newRootAt(pl places) *cobra.Command {
	v := viper.New()
	root := &cobra.Command{
		Use:   "msched",
		Short: "msched: a meta-scheduler for sequential and parallel jobs on heterogeneous hosts",
		Long: `msched schedules jobs on a heterogeneous set of hosts after the Warwick MS system:
users drop job files into spool/submitted; five daemons (init, sched, run, reaper,
stats) move each job through spool directories; a genetic algorithm chooses the
order of jobs and the hosts of each, from run times predicted by performance
models through a cached evaluator.

The spool is --spool, else $MSCHED_SPOOL, else /var/spool/msched on an installed
system (/etc/msched/msched.yaml its configuration), else ./var/spool.
Exit codes: 0 done, 1 error, 2 wrong flags or arguments, 3 no such job or
spool, 4 refused (another user's job, an invalid job file, a state that does
not allow it).`,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if cmd.HasSubCommands() {
				return nil // a group (msched bench …) only prints its help
			}
			if err := spoolFromArg(cmd, args); err != nil {
				return err
			}
			if err := loadConfigAt(v, cmd, pl); err != nil {
				return err
			}
			return startProfile(cmd)
		},
		PersistentPostRun: func(cmd *cobra.Command, args []string) { pprof.StopCPUProfile() },
	}
	root.SetVersionTemplate("msched {{.Version}}\n")
	root.PersistentFlags().String("config", "", "config file (default: msched.yaml in the spool directory, if present; /etc/msched/msched.yaml on an installed system)")
	// Not ./spool: in msched's own tree that is the spool package's source.
	root.PersistentFlags().String("spool", "", "spool directory (default: $MSCHED_SPOOL, else /var/spool/msched when installed, else ./var/spool)")
	root.PersistentFlags().String("log-level", "info", "log level: debug, info, warn, error")
	root.PersistentFlags().String("cpuprofile", "", "write a CPU profile of the command to `FILE` (read it with go tool pprof)")
	_ = v.BindPFlag("log_level", root.PersistentFlags().Lookup("log-level"))
	setDefaults(v)

	root.AddCommand(newUpCmd(v), newCreateCmd(v), newDaemonCmd(v), newSubmitCmd(v), newStatusCmd(v),
		newCancelCmd(v), newHistoryCmd(v), newHostsCmd(v), newShepherdCmd(), newBenchCmd(v))
	root.AddCommand(newSimulateCmd(v))
	root.AddCommand(newWorkloadCmd())
	root.AddCommand(newWebCmd(v), newCGICmd(v))
	root.AddCommand(newModelCmd(v))
	usageErrors(root)
	return root
}

// usageErrors makes every wrong flag or argument of the tree an error with
// exitUsage: flag errors through the root's FlagErrorFunc (inherited by
// every command), argument errors by wrapping each command's Args. A group
// of commands (msched, msched bench, …) gets an Args that refuses an
// unknown sub-command, and a RunE that prints its help, so that `msched
// bench nonsense` is a usage error rather than the help and success.
func usageErrors(root *cobra.Command) {
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(exitUsage, err) })
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		switch {
		case c.HasSubCommands() && !c.Runnable():
			c.Args = unknownCommand
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		case c.HasSubCommands() && c.Args == nil:
			c.Args = unknownCommand
		case c.Args != nil:
			check := c.Args
			c.Args = func(c *cobra.Command, args []string) error { return withCode(exitUsage, check(c, args)) }
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// unknownCommand is the Args of a group: any argument is a sub-command it
// does not have.
func unknownCommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return withCode(exitUsage, errors.New(msg))
}

// spoolArg annotates a command whose argument is the spool (msched create
// DIR): it stands for --spool.
const spoolArg = "msched/spool-arg"

// spoolFromArg sets --spool from the argument of a spoolArg command.
func spoolFromArg(cmd *cobra.Command, args []string) error {
	if cmd.Annotations[spoolArg] == "" || len(args) == 0 {
		return nil
	}
	if cmd.Flags().Changed("spool") && cmd.Flag("spool").Value.String() != args[0] {
		return codef(exitUsage, "--spool %s and %s %s: name the spool once", cmd.Flag("spool").Value, cmd.Annotations[spoolArg], args[0])
	}
	return cmd.Flags().Set("spool", args[0])
}

// execute runs the command line in ctx and returns msched's exit code
// (exitcode.go). It prints the error, and after a usage error the
// command's usage line and where to read more.
func execute(ctx context.Context, root *cobra.Command) int {
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	w := root.ErrOrStderr()
	fmt.Fprintln(w, "msched:", err)
	code := exitCode(err)
	if usageError(err) && cmd != nil {
		use := cmd.UseLine()
		if cmd.HasSubCommands() {
			use = cmd.CommandPath() + " COMMAND [flags]"
		}
		fmt.Fprintf(w, "usage: %s\nRun '%s --help' for more.\n", use, cmd.CommandPath())
	}
	return code
}

// loadConfig is loadConfigAt in the system's places.
func loadConfig(v *viper.Viper, cmd *cobra.Command) error { return loadConfigAt(v, cmd, defaultPlaces) }

// loadConfigAt finds the spool and its configuration file in pl
// (locate.go), reads the file and environment into v, checks them and
// sets up logging.
func loadConfigAt(v *viper.Viper, cmd *cobra.Command, pl places) error {
	v.SetEnvPrefix("MSCHED")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_", "-", "_"))
	v.AutomaticEnv()
	loc, err := locate(v, cmd, pl)
	if err != nil {
		return err
	}
	remember(v, loc)
	// The variables first: checkConfig would blame the file for them.
	if err := checkEnv(v); err != nil {
		return err
	}
	if err := checkConfig(v, loc.Config); err != nil {
		return err
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(v.GetString("log_level"))); err != nil {
		return withCode(exitUsage, fmt.Errorf("--log-level: %w", err))
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})))
	return nil
}

// readConfigFile reads file into v. A file that was found rather than
// named (found) and that this user may not read is skipped: the daemons'
// file, 0600 because it holds secrets; a user's msched submit or status
// goes on without it. It returns the file read, or "".
func readConfigFile(v *viper.Viper, file string, found bool) (string, error) {
	if file == "" {
		return "", nil
	}
	v.SetConfigFile(file)
	err := v.ReadInConfig()
	switch {
	case err != nil && found && errors.Is(err, fs.ErrPermission):
		v.SetConfigFile("") // nothing read: a reload reads nothing either
		return "", nil
	case err != nil:
		return "", fmt.Errorf("config %s: %w", file, err)
	}
	return file, nil
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
