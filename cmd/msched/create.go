package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
)

func newCreateCmd(v *viper.Viper) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create [DIR]",
		Short: "Make a spool, its configuration, hosts file and models, as the first msched up does",
		Long: `create makes what the first msched up makes, and starts nothing:
  - the spool DIR (default: where msched looks for one: --spool, MSCHED_SPOOL,
    /var/spool/msched on an installed system, else ./var/spool),
  - DIR/msched.yaml, every key at its default with its comment (unless
    --config names the configuration file),
  - the hosts file DIR/db/hosts.yaml with this machine's CPUs (unless --hosts
    or the configuration names one),
  - DIR/models with the example models.
What exists already is left as it is. Run as root, the spool's submitted/ and
control/ are made mode 1777, so that every user may submit.`,
		Args: cobra.MaximumNArgs(1),
		// DIR is the spool: loadConfig finds it as --spool, with its
		// msched.yaml if it has one.
		Annotations: map[string]string{spoolArg: "DIR"},
		RunE: func(cmd *cobra.Command, args []string) error {
			// Not bound to the key: up's --hosts is (viper keeps one flag
			// per key).
			if cmd.Flags().Changed("hosts") {
				h, _ := cmd.Flags().GetString("hosts")
				v.Set("hosts", h)
			}
			cfg, err := readConfig(v)
			if err != nil {
				return err
			}
			named, _ := cmd.Flags().GetString("config")
			out := cmd.OutOrStdout()
			if err := prepare(out, cfg, named); err != nil {
				return err
			}
			dir, _ := filepath.Abs(cfg.Spool)
			fmt.Fprintf(out, "  start:   msched up --spool %s (or MSCHED_SPOOL=%s)\n", dir, dir)
			return nil
		},
	}
	cmd.Flags().String("hosts", "", "hosts file (default: <spool>/db/hosts.yaml, created with this machine's CPUs)")
	return cmd
}
