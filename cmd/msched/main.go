// Command msched is the one binary of the msched meta-scheduler: the
// daemons, the user commands, the simulator and the benchmarks. It only
// wires packages together; the logic lives in them.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"msched/launch"
)

func main() {
	// The shepherd is on every job's start path: it must pay for nothing
	// else (no cobra, no viper, no config file), so it is handled first.
	if len(os.Args) > 1 && os.Args[1] == "shepherd" {
		os.Exit(launch.ShepherdMain())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot()
	if os.Getenv("GATEWAY_INTERFACE") != "" {
		// Started by a web server as a CGI program: whatever the arguments
		// (a server may pass query words), answer one request.
		root.SetArgs([]string{"cgi"})
	}
	if code := execute(ctx, root); code != exitOK {
		stop()
		os.Exit(code)
	}
}
