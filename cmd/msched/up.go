package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"msched/hoststat"
	"msched/models"
	"msched/spool"
)

func newUpCmd(v *viper.Viper) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run all five daemons (init, sched, run, reaper, stats) in one process",
		Long: `up runs the five daemons in this process until interrupted (Ctrl-C or
SIGTERM stops them cleanly; running jobs keep running under their shepherds and
are adopted by the next start). SIGHUP reads the configuration file and the
hosts file again and restarts the daemons with them; if either is invalid the
error is logged and the daemons go on as they were.

The first run creates what msched needs and says where it is:
  - the spool (default ./var/spool; --spool changes it),
  - <spool>/msched.yaml, the configuration with every key at its default and a
    comment saying what it does,
  - a hosts file, <spool>/db/hosts.yaml, listing this machine's CPUs as hosts
    (one host per CPU slot), unless --hosts names one,
  - <spool>/models with the example model files (examples/models).
Later runs leave all of these as they are.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tuneGC()
			cfg, err := readConfig(v)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			named, _ := cmd.Flags().GetString("config")
			if err := prepare(out, cfg, named); err != nil {
				return err
			}
			if cfg.Web != "off" && cfg.Web != "" {
				say(out, "web", "http://"+cfg.Web+"/", "")
			}
			fmt.Fprintln(out, "  submit:  msched submit examples/jobs/sleep.yaml")
			sys, err := openSystem(cfg, slog.Default())
			if err != nil {
				return err
			}
			// Whatever can be checked before the daemons start is, so
			// that "running" is not followed by a daemon's failure.
			if err := preflight(cfg, v); err != nil {
				sys.close()
				return err
			}
			fmt.Fprintf(out, "msched: running init, sched, run, reaper and stats on %d hosts; Ctrl-C stops them, SIGHUP reloads the configuration and hosts\n", len(sys.hosts))
			stopWeb := startWeb(cmd.Context(), out, sys, v)
			defer stopWeb()
			return serveDaemons(cmd.Context(), v, sys, daemonNames)
		},
	}
	cmd.Flags().String("hosts", "", "hosts file (default: <spool>/db/hosts.yaml, created with this machine's CPUs)")
	cmd.Flags().String("web", "127.0.0.1:8080", `address of the status page ("off": none)`)
	_ = v.BindPFlag("hosts", cmd.Flags().Lookup("hosts"))
	_ = v.BindPFlag("web.addr", cmd.Flags().Lookup("web"))
	return cmd
}

// preflight checks what the daemons would find wrong only once started:
// the hardware database and the model files load (sched's), and the status
// page's host names are valid. The configuration's values (readConfig) and
// the hosts file (openSystem) are checked before it.
func preflight(cfg config, v *viper.Viper) error {
	hw, err := cfg.hardware()
	if err != nil {
		return fmt.Errorf("config: hardware: %w", err)
	}
	lib, err := models.LoadDir(cfg.ModelsDir, hw)
	if err != nil {
		return fmt.Errorf("config: models %s: %w", cfg.ModelsDir, err)
	}
	lib.Close()
	if cfg.Web != "off" && cfg.Web != "" {
		if _, err := webHosts(v, cfg.Web); err != nil {
			return err
		}
	}
	return nil
}

// say prints one line of what prepare made or found: what, where, a note.
func say(w io.Writer, what, path, note string) {
	fmt.Fprintf(w, "  %-8s %s%s\n", what+":", path, note)
}

// prepare creates, on the first run, the spool, the config file, the hosts
// file and the models directory, and prints where each is: `msched up` on
// its first run, and `msched create`. The config file is <spool>/msched.yaml,
// unless named (--config): a named file is the user's, and is not written.
func prepare(w io.Writer, cfg config, named string) error {
	_, statErr := os.Stat(filepath.Join(cfg.Spool, string(spool.Submitted)))
	sp, err := spool.Create(cfg.Spool)
	if err != nil {
		return err
	}
	state := ""
	if statErr != nil {
		state = " (created)"
	}
	fmt.Fprintf(w, "msched: spool %s%s\n", sp.Root(), state)

	note := ""
	conf := named
	if conf == "" {
		conf = filepath.Join(sp.Root(), "msched.yaml")
		if _, err := os.Stat(conf); errors.Is(err, fs.ErrNotExist) {
			if err := spool.WriteAtomic(sp.Root(), "msched.yaml", defaultConfigFile()); err != nil {
				return err
			}
			note = " (created: every key at its default)"
		}
	}
	say(w, "config", conf, note)

	hostsFile, _ := filepath.Abs(cfg.HostsFile)
	note = ""
	if _, err := os.Stat(hostsFile); errors.Is(err, fs.ErrNotExist) && !cfg.HostsGiven {
		hs, err := hoststat.LocalHosts()
		if err != nil {
			return err
		}
		if err := hoststat.WriteHosts(hostsFile, hs); err != nil {
			return err
		}
		note = fmt.Sprintf(" (created: this machine's %d CPUs, one host per CPU slot)", len(hs))
	}
	say(w, "hosts", hostsFile, note)

	modelsDir, _ := filepath.Abs(cfg.ModelsDir)
	note = ""
	if _, err := os.Stat(modelsDir); errors.Is(err, fs.ErrNotExist) {
		if err := installModels(modelsDir); err != nil {
			return err
		}
		names, _ := filepath.Glob(filepath.Join(modelsDir, "*.yaml"))
		for i := range names {
			names[i] = strings.TrimSuffix(filepath.Base(names[i]), ".yaml")
		}
		note = " (created: example models " + strings.Join(names, ", ") + ")"
	}
	say(w, "models", modelsDir, note)
	say(w, "reports", sp.Path(spool.DirReports), "")
	return nil
}
