package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
)

// Finding the spool (README, "Finding the spool"), first that answers:
//
//  1. --spool DIR;
//  2. MSCHED_SPOOL;
//  3. the spool key of the configuration file --config names;
//  4. on an installed system (places.SystemConfig or places.SystemSpool
//     exists): the spool key of /etc/msched/msched.yaml, else
//     /var/spool/msched;
//  5. ./var/spool, where the first `msched up` in a checkout makes one.
//
// The configuration file is --config, else /etc/msched/msched.yaml when the
// spool was found as the system's (4), else <spool>/msched.yaml if it
// exists. A user's command on an installed system thus finds the daemons'
// spool wherever it runs, as squeue finds Slurm's, and a checkout without
// one keeps its own.

// places are where msched looks when neither --spool nor MSCHED_SPOOL
// names a spool; tests give their own.
type places struct {
	SystemConfig string // the configuration of an installed msched
	SystemSpool  string // its spool, unless that configuration names another
	LocalSpool   string // a checkout's spool, made by its first `msched up`
}

var defaultPlaces = places{
	SystemConfig: "/etc/msched/msched.yaml",
	SystemSpool:  "/var/spool/msched",
	LocalSpool:   "./var/spool",
}

// located is where loadConfig found the spool and its configuration, and
// what it looked at on the way, for the error of a spool that is not
// there.
type located struct {
	Spool  string
	Config string   // the file read; "" when none
	How    string   // "--spool", "MSCHED_SPOOL", "spool in FILE", "installed", "default"
	Looked []string // each place looked at and what was there, in order
}

// locate finds the spool and reads the configuration file into v, then
// sets v's spool to what it found.
func locate(v *viper.Viper, cmd *cobra.Command, pl places) (located, error) {
	var loc located
	named, _ := cmd.Flags().GetString("config")
	if cmd.Flags().Changed("spool") {
		loc.Spool, loc.How = cmd.Flag("spool").Value.String(), "--spool"
		if loc.Spool == "" {
			return loc, codef(exitUsage, "--spool: empty")
		}
	} else {
		loc.Looked = append(loc.Looked, "--spool (not given)")
		if s := os.Getenv("MSCHED_SPOOL"); s != "" {
			loc.Spool, loc.How = s, "MSCHED_SPOOL"
		} else {
			loc.Looked = append(loc.Looked, "MSCHED_SPOOL (not set)")
		}
	}
	var err error
	if named != "" {
		if loc.Config, err = readConfigFile(v, named, false); err != nil {
			return loc, err
		}
		if loc.Spool == "" && v.InConfig("spool") && v.GetString("spool") != "" {
			loc.Spool, loc.How = v.GetString("spool"), "spool in "+named
		} else if loc.Spool == "" {
			loc.Looked = append(loc.Looked, named+" (no spool key)")
		}
	}
	if loc.Spool == "" {
		sysConf, sysSpool := fileExists(pl.SystemConfig), isDir(pl.SystemSpool)
		switch {
		case sysConf || sysSpool:
			loc.How = "installed"
			if sysConf && named == "" {
				if loc.Config, err = readConfigFile(v, pl.SystemConfig, true); err != nil {
					return loc, err
				}
			}
			if loc.Config == pl.SystemConfig && v.InConfig("spool") && v.GetString("spool") != "" {
				loc.Spool = v.GetString("spool")
				loc.Looked = append(loc.Looked, pl.SystemConfig+" (its spool key)")
			} else {
				loc.Spool = pl.SystemSpool
				loc.Looked = append(loc.Looked, pl.SystemSpool+" (the installed system's)")
			}
		default:
			loc.Looked = append(loc.Looked, pl.SystemConfig+" and "+pl.SystemSpool+" (not installed)")
			loc.Spool, loc.How = pl.LocalSpool, "default"
			loc.Looked = append(loc.Looked, pl.LocalSpool)
		}
	}
	if named == "" && loc.Config == "" {
		if p := filepath.Join(loc.Spool, "msched.yaml"); fileExists(p) {
			if loc.Config, err = readConfigFile(v, p, true); err != nil {
				return loc, err
			}
		}
	}
	// Found once, here: every reader of the configuration asks v.
	v.Set("spool", loc.Spool)
	return loc, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// found remembers, per configuration, how loadConfig found the spool:
// openSpool's error says it when the spool is not there.
var found sync.Map // *viper.Viper → located

func remember(v *viper.Viper, loc located) { found.Store(v, loc) }

// noSpool is the error of a command that needs a spool that is not there:
// where msched looked, and how to make one. It is exitNotFound.
func noSpool(v *viper.Viper, err error) error {
	dir := v.GetString("spool")
	abs, _ := filepath.Abs(dir)
	how := "make one with `msched create " + dir + "` (or `msched up`, which makes it on its first run)"
	l, ok := found.Load(v)
	if !ok {
		return codef(exitNotFound, "no spool at %s: %v; %s", abs, err, how)
	}
	loc := l.(located)
	switch loc.How {
	case "--spool", "MSCHED_SPOOL":
		return codef(exitNotFound, "no spool at %s (named by %s); %s", abs, loc.How, how)
	case "default":
		how = "make one with `msched create` (or `msched up`, which makes it on its first run), or name one with --spool or MSCHED_SPOOL"
	}
	if strings.HasPrefix(loc.How, "spool in ") {
		return codef(exitNotFound, "no spool at %s (the %s); %s", abs, loc.How, how)
	}
	return codef(exitNotFound, "no spool: looked at %s: none is a spool (%s is not); %s", strings.Join(loc.Looked, ", "), abs, how)
}

// isNoSpool reports whether err from spool.Open means the directory (or
// one of its parts) does not exist.
func isNoSpool(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// spoolHint is the trailer of an error about a spool that exists but
// cannot be opened.
func spoolHint(err error) error {
	return fmt.Errorf("%w (`msched create DIR` makes a spool; --spool or MSCHED_SPOOL names another)", err)
}
