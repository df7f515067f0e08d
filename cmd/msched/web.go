package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cgi"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"msched/spool"
	"msched/web"
)

// webHandler opens the spool read-only and builds the status page's
// handler, mounted at base ("" for the root), for a server listening on
// listen ("": a CGI program).
func webHandler(v *viper.Viper, base, listen string) (http.Handler, error) {
	cfg, err := readConfig(v)
	if err != nil {
		return nil, err
	}
	sp, err := spool.Open(cfg.Spool)
	if err != nil {
		return nil, fmt.Errorf("%w (`msched up` creates a spool)", err)
	}
	hosts, err := webHosts(v, listen)
	if err != nil {
		return nil, err
	}
	return web.New(web.Config{Spool: sp, HostsFile: cfg.HostsFile, Token: v.GetString("web.token"),
		Base: base, Hosts: hosts, Log: slog.Default()}), nil
}

// webHosts is the Host header check of a server listening on listen:
// web.addr's names and web.hosts. A CGI program (listen "") checks only
// when web.hosts is set; else its web server's virtual hosts decide.
func webHosts(v *viper.Viper, listen string) (*web.HostNames, error) {
	names := v.GetStringSlice("web.hosts")
	if listen == "" && len(names) == 0 {
		return nil, nil
	}
	hosts, err := web.AllowHosts(listen, names)
	if err != nil {
		return nil, fmt.Errorf("config: web.hosts: %w", err)
	}
	return hosts, nil
}

func newWebCmd(v *viper.Viper) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "web",
		Short: "Serve the status page, JSON API and metrics over HTTP",
		Long: `web serves the status page (jobs, hosts, the schedule as a Gantt chart, model
accuracy), the JSON API (/api/jobs, /api/jobs/JID, /api/hosts, /api/schedule)
and Prometheus metrics (/metrics) on --addr until interrupted. It only reads
the spool, unless web.token is configured: then whoever logs in with the token
may cancel and resubmit jobs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("addr") {
				a, _ := cmd.Flags().GetString("addr")
				v.Set("web.addr", a)
			}
			addr := v.GetString("web.addr")
			h, err := webHandler(v, "", addr)
			if err != nil {
				return err
			}
			return web.ListenAndServe(cmd.Context(), addr, h, slog.Default(), func(a net.Addr) {
				fmt.Fprintf(cmd.OutOrStdout(), "msched: status page on http://%s/\n", a)
			})
		},
	}
	cmd.Flags().String("addr", "127.0.0.1:8080", "address to listen on (config key web.addr)")
	return cmd
}

// startWeb serves the status page beside the daemons of `msched up`, on
// web.addr ("off" or "": none), until ctx is done or the returned function
// is called, which stops the server and waits for it. A server that cannot listen (the port is
// taken) is logged, not fatal: the daemons matter more than their page.
func startWeb(ctx context.Context, out io.Writer, sys *system, v *viper.Viper) (wait func()) {
	addr := v.GetString("web.addr")
	if addr == "" || addr == "off" {
		return func() {}
	}
	hosts, err := webHosts(v, addr)
	if err != nil {
		sys.log.Error("status page not served; the daemons go on", "addr", addr, "err", err)
		return func() {}
	}
	h := web.New(web.Config{Spool: sys.sp, HostsFile: sys.cfg.HostsFile, Token: v.GetString("web.token"), Hosts: hosts, Log: sys.log})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := web.ListenAndServe(ctx, addr, h, sys.log, func(a net.Addr) {
			fmt.Fprintf(out, "msched: status page on http://%s/\n", a)
		})
		if err != nil {
			sys.log.Error("status page not served; the daemons go on", "addr", addr, "err", err)
		}
	}()
	return func() { cancel(); <-done }
}

func newCGICmd(v *viper.Viper) *cobra.Command {
	return &cobra.Command{
		Use:   "cgi",
		Short: "Serve one request of the status page as a CGI program",
		Long: `cgi answers one CGI request (RFC 3875) with the status page's handler: the
web server sets GATEWAY_INTERFACE, REQUEST_METHOD, PATH_INFO, … and msched
answers on stdout. msched does this by itself whenever GATEWAY_INTERFACE is
set, so the binary can be installed as the CGI program directly. Set
MSCHED_SPOOL in the server's environment to say where the spool is.`,
		Args: cobra.ArbitraryArgs, // a server may pass query words as arguments (RFC 3875 4.4)
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := webHandler(v, os.Getenv("SCRIPT_NAME"), "")
			if err != nil {
				// Answer the browser without absolute paths, and the
				// server's error log (stderr) in full; the request itself
				// was answered, so the program succeeded.
				fmt.Printf("Status: 500 Internal Server Error\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nmsched: %s\n", web.PublicMessage(err, v.GetString("spool")))
				slog.Error("cgi", "err", err)
				return nil
			}
			return cgi.Serve(h)
		},
	}
}
