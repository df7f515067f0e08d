package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cast"
	"github.com/spf13/viper"
)

// The configuration is strict. viper takes any key and reads a value of the
// wrong kind as its zero (GetInt of "ten" is 0), so checkConfig refuses,
// before readConfig reads the values:
//   - a key that is none of configKeys (a typo such as "polcy:" would leave
//     the policy at its default without a word);
//   - a value of the wrong kind, in the file or in an MSCHED_ variable: a
//     number where a number is meant (and a whole one for a count), true or
//     false for a switch, a string for a string, a list for a list.
// It uses spf13/cast, the converter behind viper's getters, so that what it
// accepts is exactly what they read.

// secretKeys are the keys whose value must not be readable by other users.
var secretKeys = []string{"web.token", "smtp.password"}

// checkConfig checks the configuration in v; file is the configuration
// file read ("" when none).
func checkConfig(v *viper.Viper, file string) error {
	known := map[string]configKey{"spool": {Key: "spool", Default: ""}}
	for _, k := range configKeys {
		known[k.Key] = k
	}
	var unknown []string
	for _, k := range v.AllKeys() {
		if _, ok := known[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("config %s: unknown key %s (the keys are those of README's configuration table, and of the file the first `msched up` writes)",
			orEnv(file), strings.Join(quoteAll(unknown), ", "))
	}
	keys := make([]string, 0, len(known))
	for k := range known {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := checkKind(k, known[k].Default, v.Get(k)); err != nil {
			return fmt.Errorf("config %s: %s: %w", orEnv(file), k, err)
		}
	}
	return checkSecrets(v, file)
}

func orEnv(file string) string {
	if file == "" {
		return "(environment)"
	}
	return file
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// checkKind checks that val is of the kind of the key's default.
func checkKind(key string, def, val any) error {
	if val == nil {
		return nil // "key:" with nothing: viper then gives the zero value, as the default does for ""
	}
	switch def.(type) {
	case int, int64:
		f, err := cast.ToFloat64E(val)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return fmt.Errorf("%v is not a whole number", val)
		}
	case float64:
		if f, err := cast.ToFloat64E(val); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%v is not a number", val)
		}
	case bool:
		if _, err := cast.ToBoolE(val); err != nil {
			return fmt.Errorf("%v is not true or false", val)
		}
	case string:
		switch val.(type) {
		case map[string]any, []any:
			return fmt.Errorf("want a single value, got %v", val)
		}
		if _, err := cast.ToStringE(val); err != nil {
			return fmt.Errorf("%v is not a string", val)
		}
	case []string:
		if _, err := cast.ToStringSliceE(val); err != nil {
			return fmt.Errorf("%v is not a list of strings", val)
		}
	default:
		return fmt.Errorf("no check for a key of type %T", def)
	}
	return nil
}

// checkSecrets refuses a configuration file that holds a secret and that
// other users may read (its mode must be 0600 or 0400, or at least not
// readable by group and others).
func checkSecrets(v *viper.Viper, file string) error {
	if file == "" {
		return nil
	}
	fi, err := os.Stat(file)
	if err != nil {
		return fmt.Errorf("config %s: %w", file, err)
	}
	if fi.Mode().Perm()&0o044 == 0 {
		return nil
	}
	in := fileKeys(file)
	for _, k := range secretKeys {
		if v.GetString(k) != "" && slices.Contains(in, k) {
			return fmt.Errorf("config %s: it holds %s and other users may read it (mode %04o): chmod 600 %s", file, k, fi.Mode().Perm(), file)
		}
	}
	return nil
}

// fileKeys are the keys set in the configuration file itself (not by the
// environment or defaults).
func fileKeys(file string) []string {
	f := viper.New()
	f.SetConfigFile(file)
	if err := f.ReadInConfig(); err != nil {
		return nil
	}
	return f.AllKeys()
}
