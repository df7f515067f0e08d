package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/viper"
)

// serveDaemons runs the named daemons of sys until ctx ends, and owns sys:
// it closes it, or the system that replaced it, at the end.
//
// On SIGHUP it reads the configuration file and the hosts file again. If
// both are valid it stops the daemons (a clean stop, as on SIGTERM) and
// starts them again with the new ones: each recovers its directories at
// start, so a reload loses nothing, and running jobs stay with their
// shepherds. If either is invalid, or the spool would change, the error is
// logged and the daemons go on as they were.
func serveDaemons(ctx context.Context, v *viper.Viper, sys *system, names []string) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- sys.run(runCtx, names) }()
		var next *system
		for next == nil {
			select {
			case err := <-done:
				cancel()
				sys.close()
				return err
			case <-hup:
			}
			var err error
			if next, err = reopen(v, sys); err != nil {
				sys.log.Error("SIGHUP: configuration not reloaded; the daemons go on as they were", "err", err)
			}
		}
		cancel()
		if err := <-done; err != nil {
			next.close()
			sys.close()
			return err
		}
		sys.close()
		sys = next
		sys.log.Info("SIGHUP: configuration and hosts reloaded; daemons restarted", "hosts", len(sys.hosts), "policy", sys.cfg.Policy)
	}
}

// reopen reads the configuration file (if one was read at start) and the
// environment again, then the hosts file, into a new system on the same
// spool with sys's launcher and notifier.
func reopen(v *viper.Viper, sys *system) (*system, error) {
	f := v.ConfigFileUsed()
	if f != "" {
		if err := v.ReadInConfig(); err != nil { // keeps the old settings on error
			return nil, fmt.Errorf("config %s: %w", f, err)
		}
	}
	if err := checkConfig(v, f); err != nil {
		return nil, err
	}
	cfg, err := readConfig(v)
	if err != nil {
		return nil, err
	}
	if cfg.Spool != sys.cfg.Spool {
		return nil, fmt.Errorf("config: spool: %s is not %s: the spool cannot change without a restart", cfg.Spool, sys.cfg.Spool)
	}
	next, err := openSystem(cfg, sys.log)
	if err != nil {
		return nil, err
	}
	next.launcher, next.notifier = sys.launcher, sys.notifier
	return next, nil
}
