package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"msched/models"
)

func newModelCmd(v *viper.Viper) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Performance models: list them, evaluate one, or talk to one in the session protocol",
		Long: `Performance models predict a job's run time from its parameters and the hosts it
would run on. They are the files of the models directory (--models; default the
configuration's "models", <spool>/models): built-in kinds (warwick, amdahl,
downey, table) and "external" model programs that speak the session protocol
(list, set NAME VALUE, hrduse ARCH[:hardware/CPU_LOAD=L]..., eval, quit; see
models/protocol.go).`,
	}
	// Each sub-command sees the persistent --models flag; openModels reads it.
	cmd.PersistentFlags().String("models", "", "models directory (default: the configuration's models, <spool>/models)")
	cmd.AddCommand(newModelListCmd(v), newModelEvalCmd(v), newModelServeCmd(v), newModelAccuracyCmd(v))
	return cmd
}

// openModels loads the models directory of --models or the configuration,
// with the configured hardware database. The caller must Close the library:
// external models hold processes.
func openModels(v *viper.Viper, cmd *cobra.Command) (*models.Library, error) {
	cfg, err := readConfig(v)
	if err != nil {
		return nil, err
	}
	dir := cfg.ModelsDir
	if f := cmd.Flag("models"); f != nil && f.Value.String() != "" {
		dir = f.Value.String()
	}
	hw, err := cfg.hardware()
	if err != nil {
		return nil, err
	}
	return models.LoadDir(dir, hw)
}

func newModelListCmd(v *viper.Viper) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the models with their kind and default parameters",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lib, err := openModels(v, cmd)
			if err != nil {
				return err
			}
			defer lib.Close()
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tKIND\tPARAMS\tDESCRIPTION")
			for _, n := range lib.Names() {
				spec, _ := lib.Spec(n)
				var ps []string
				for _, p := range slices.Sorted(maps.Keys(spec.Params)) {
					ps = append(ps, p+"="+strconv.FormatFloat(spec.Params[p], 'g', -1, 64))
				}
				params := strings.Join(ps, " ")
				if params == "" {
					params = "-"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", n, spec.Kind, params, spec.Description)
			}
			return w.Flush()
		},
	}
}

func newModelEvalCmd(v *viper.Viper) *cobra.Command {
	var params []string
	var hosts string
	cmd := &cobra.Command{
		Use:   "eval NAME --hosts ARCH[:LOAD],... [--param K=V]...",
		Short: "Predict one run time, in seconds, with a model",
		Long: `eval asks the named model once, without the evaluator's caches, and prints the
predicted run time in seconds. --param overrides the model file's defaults;
--hosts lists one architecture per host (a hardware database name), each with
an optional load: --hosts SunUltra1,SunUltra1:1 or
--hosts SunUltra1:hardware/CPU_LOAD=0,x86_64.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := map[string]float64{}
			for _, kv := range params {
				k, val, ok := strings.Cut(kv, "=")
				x, err := strconv.ParseFloat(val, 64)
				if !ok || !models.ValidName(k) || err != nil {
					return fmt.Errorf("--param %q: want NAME=NUMBER", kv)
				}
				p[k] = x
			}
			var hs []models.HostSpec
			for _, w := range strings.Split(hosts, ",") {
				h, err := models.ParseHost(strings.TrimSpace(w))
				if err != nil {
					return fmt.Errorf("--hosts: %w", err)
				}
				hs = append(hs, h)
			}
			lib, err := openModels(v, cmd)
			if err != nil {
				return err
			}
			defer lib.Close()
			m, err := lib.Get(args[0])
			if err != nil {
				return err
			}
			for _, h := range hs {
				if _, err := lib.Hardware().Lookup(h.Arch); err != nil {
					return fmt.Errorf("--hosts: %w (known: %s)", err, strings.Join(lib.Hardware().Names(), " "))
				}
			}
			secs, err := m.Predict(cmd.Context(), models.Scenario{Params: p, Hosts: hs})
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), strconv.FormatFloat(secs, 'g', -1, 64))
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&params, "param", nil, "a parameter, NAME=VALUE (repeatable)")
	cmd.Flags().StringVar(&hosts, "hosts", "", "the hosts, ARCH[:LOAD] separated by commas (required)")
	_ = cmd.MarkFlagRequired("hosts")
	return cmd
}

func newModelServeCmd(v *viper.Viper) *cobra.Command {
	return &cobra.Command{
		Use:   "serve NAME",
		Short: "Speak the session protocol for a model on stdin and stdout",
		Long: `serve lets you try a model by hand, as PACE users did (the MS paper's Fig. 5),
whatever its kind: msched answers the session protocol on stdin and stdout,
one request per line, until quit or end of input.

  list                 the parameters and their values, then a line "."
  set NAME VALUE       reply ok
  hrduse HOST...       one hardware model per host: ARCH[:hardware/CPU_LOAD=L]
  eval                 the predicted run time in seconds
  quit

A failed request gets one line starting "error:". For example:

  $ msched model serve eq2
  hrduse generic generic
  ok
  eval
  4.5`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			lib, err := openModels(v, cmd)
			if err != nil {
				return err
			}
			defer lib.Close()
			s, err := lib.Session(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return s.Serve(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
}
