package daemons

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"msched/hoststat"
	"msched/launch"
)

// probeTarget is what one probe reaches: this machine, one ssh address, or
// one Slurm cluster's controller, and the hosts it answers for.
type probeTarget struct {
	addr  hoststat.Address
	name  string   // for the log: "local", user@host:port, or the slurm.conf
	hosts []string // in hosts-file order
}

// probeTargets groups hosts by what answers for them.
func probeTargets(hosts []hoststat.Host) ([]*probeTarget, error) {
	var ts []*probeTarget
	byKey := map[string]*probeTarget{}
	for _, h := range hosts {
		a, err := h.Addr()
		if err != nil {
			return nil, fmt.Errorf("host %s: %w", h.Name, err)
		}
		key := a.String()
		t := byKey[key]
		if t == nil {
			t = &probeTarget{addr: a, name: key}
			if a.Kind == hoststat.KindSSH {
				t.name = sshName(a.User, a.Host, a.Port)
			}
			byKey[key] = t
			ts = append(ts, t)
		}
		t.hosts = append(t.hosts, h.Name)
	}
	return ts, nil
}

// sshName is [user@]host[:port], for logs and reasons.
func sshName(user, host string, port int) string {
	s := host
	if user != "" {
		s = user + "@" + s
	}
	if port != 0 {
		s += ":" + strconv.Itoa(port)
	}
	return s
}

// probeResult is what a probe found.
type probeResult struct {
	at time.Time // when the probe began (hoststat.MarkUp's probedAt)
	// down, when not "", is why the target did not answer: all its hosts
	// are down.
	down string
	// nodeDown holds the hosts a cluster that answered reports out of
	// service, and why.
	nodeDown map[string]string
	samples  map[string]hoststat.Stats // by host
	// err is a probe that reached the target but got no sample (an ssh
	// host without /proc, say): the hosts are up, the sample is missing.
	err error
}

// prober runs probes and records their results.
type prober struct {
	log      *slog.Logger
	store    *hoststat.Store
	db       string // the spool's db/ (hoststat's health records)
	ssh      launch.SSHConfig
	slurmBin string
	timeout  time.Duration
	user     string // this daemon's user: the ssh login without one in the address
}

func (p *prober) probe(ctx context.Context, t *probeTarget) probeResult {
	r := probeResult{at: time.Now()}
	switch t.addr.Kind {
	case hoststat.KindLocal:
		st, err := hoststat.Local()
		if err != nil {
			r.err = err
			return r
		}
		r.samples = map[string]hoststat.Stats{}
		for _, h := range t.hosts {
			r.samples[h] = st
		}
	case hoststat.KindSSH:
		p.probeSSH(ctx, t, &r)
	case hoststat.KindSlurm:
		p.probeSlurm(ctx, t, &r)
	}
	return r
}

// probeSSH logs in to t and runs hoststat.RemoteCommand. ssh exits with
// 255 when it fails itself (connection refused, host key refused,
// authentication failed), else with the remote command's status. All but a
// refused login ("Permission denied") mark the hosts down.
func (p *prober) probeSSH(ctx context.Context, t *probeTarget, r *probeResult) {
	dest := launch.SSHDest{Host: t.addr.Host, Port: t.addr.Port, User: t.addr.User}
	login := dest.User
	if login == "" {
		login = p.user
	}
	argv := p.ssh.Spec([]launch.SSHDest{dest}).Command(dest, login, hoststat.RemoteCommand)
	out, errOut, late, err := p.run(ctx, argv, nil)
	var ee *exec.ExitError
	switch {
	case err == nil:
		st, perr := hoststat.ParseRemote(bytes.NewReader(out))
		if perr != nil {
			r.err = perr
			return
		}
		st.Time = time.Now()
		r.samples = map[string]hoststat.Stats{}
		for _, h := range t.hosts {
			r.samples[h] = st
		}
	case errors.As(err, &ee) && ee.ExitCode() != 255 && !late:
		r.err = fmt.Errorf("ssh %s: the stats command failed (%v): %s", t.name, err, lastLine(errOut))
	case errors.As(err, &ee) && !late && bytes.Contains(errOut, []byte("Permission denied (")):
		// sshd answered and refused this login (root's, say, where
		// PermitRootLogin is no): the host is up for the jobs, which log
		// in as their own users. The run daemon judges a job's refused
		// login so too (launch: Result.Unreachable).
		r.err = fmt.Errorf("ssh %s: login refused, no sample: %s", sshName(login, dest.Host, dest.Port), lastLine(errOut))
	default:
		r.down = "ssh " + sshName(login, dest.Host, dest.Port) + ": " + strings.TrimPrefix(p.failure(err, errOut, late), "ssh: ")
	}
}

// probeSlurm asks t's controller whether it answers, then for its nodes.
func (p *prober) probeSlurm(ctx context.Context, t *probeTarget, r *probeResult) {
	env := append(os.Environ(), "SLURM_CONF="+t.addr.SlurmConf)
	scontrol := "scontrol"
	if p.slurmBin != "" {
		scontrol = filepath.Join(p.slurmBin, "scontrol")
	}
	out, errOut, late, err := p.run(ctx, []string{scontrol, "ping"}, env)
	up, detail, perr := hoststat.ParseSlurmPing(bytes.NewReader(out))
	switch {
	case perr == nil && up:
	case perr == nil && !late:
		r.down = "slurm: the controller does not answer: " + detail
		return
	default:
		r.down = "slurm: scontrol ping: " + p.failure(err, errOut, late)
		return
	}
	out, errOut, late, err = p.run(ctx, []string{scontrol, "show", "node", "-o"}, env)
	if err != nil {
		r.err = fmt.Errorf("slurm %s: scontrol show node: %s", t.name, p.failure(err, errOut, late))
		return
	}
	nodes, err := hoststat.ParseSlurmNodes(bytes.NewReader(out), nil)
	if err != nil {
		r.err = fmt.Errorf("slurm %s: %w", t.name, err)
		return
	}
	now := time.Now()
	byName := make(map[string]hoststat.SlurmNode, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	r.samples, r.nodeDown = map[string]hoststat.Stats{}, map[string]string{}
	for _, h := range t.hosts {
		// A host named after a node is that node; other hosts are slots
		// of the cluster, which Slurm places itself: no sample of theirs.
		n, ok := byName[h]
		if !ok {
			continue
		}
		if down, why := n.Down(); down {
			r.nodeDown[h] = why
		} else if st, ok := n.Stats(now); ok {
			r.samples[h] = st
		}
	}
}

// maxProbeOutput bounds what a probe keeps of a command's output: the
// stats command prints a few lines, scontrol a line per node.
const maxProbeOutput = 1 << 20

// run runs argv with the probe timeout and returns its stdout and stderr,
// and whether it was killed for taking too long.
func (p *prober) run(ctx context.Context, argv []string, env []string) (stdout, stderr []byte, late bool, err error) {
	tctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	ctx = tctx
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env // nil: this process's environment
	var out, errOut capped
	out.max, errOut.max = maxProbeOutput, 64<<10
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// Killed at the timeout, ssh may leave a child holding the pipes
	// (a ProxyCommand): stop waiting for them a moment later.
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	return out.Bytes(), errOut.Bytes(), err != nil && errors.Is(tctx.Err(), context.DeadlineExceeded), err
}

// capped is a buffer that keeps the first max bytes written to it.
type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(b []byte) (int, error) {
	if room := c.max - c.Len(); room > 0 {
		c.Buffer.Write(b[:min(len(b), room)])
	}
	return len(b), nil
}

// failure says why a command failed, in its own words where it gave some:
// ssh's last line ("ssh: connect to host … port 22: Connection refused",
// "Host key verification failed."), scontrol's error.
func (p *prober) failure(err error, stderr []byte, late bool) string {
	msg := lastLine(stderr)
	if late {
		s := fmt.Sprintf("no answer within %s", p.timeout)
		if msg != "" {
			s += " (" + msg + ")"
		}
		return s
	}
	if msg != "" {
		return msg
	}
	return err.Error()
}

// lastLine is the last non-empty line of out, trimmed.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// record stores a probe's samples and marks its hosts down or up; down is
// db/health/ as read at the start of the round, to log changes and to spare
// rewriting a record that says the same.
func (p *prober) record(t *probeTarget, r probeResult, down map[string]hoststat.DownInfo) {
	for _, h := range t.hosts {
		why := r.down
		if why == "" {
			why = r.nodeDown[h]
		}
		was, wasDown := down[h]
		if why != "" {
			if wasDown && was.Reason == why {
				continue
			}
			if err := hoststat.MarkDown(p.db, h, why, r.at); err != nil {
				p.log.Error("cannot record a host down", "host", h, "err", err)
				continue
			}
			if !wasDown {
				p.log.Warn("host down", "host", h, "reason", why)
			}
			continue
		}
		if wasDown {
			removed, err := hoststat.MarkUp(p.db, h, r.at)
			switch {
			case err != nil:
				p.log.Error("cannot record a host up", "host", h, "err", err)
			case removed:
				p.log.Info("host up", "host", h, "since", was.Since.Local().Format(time.DateTime))
			}
		}
		if st, ok := r.samples[h]; ok {
			if err := p.store.Record(h, st); err != nil {
				p.log.Error("cannot record sample", "host", h, "err", err)
			}
		}
	}
	if r.err != nil {
		p.log.Warn("host answered but gave no sample", "target", t.name, "err", r.err)
	}
}
