package hoststat

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
)

// Kinds of host address: how jobs reach a host.
const (
	KindLocal = "local" // this machine: "" or "local"
	KindSSH   = "ssh"   // ssh://[user@]host[:port], through the OpenSSH client
	KindSlurm = "slurm" // slurm:///path/to/slurm.conf[?partition=P], one node of a Slurm cluster
)

// Address is a host's parsed address.
type Address struct {
	Kind string
	// ssh: the destination. User "" means the job's own user.
	User string
	Host string
	Port int // 0: ssh's default
	// slurm: the cluster's configuration file (SLURM_CONF for its
	// commands) and the partition ("" the cluster's default).
	SlurmConf string
	Partition string
}

// Launcher names the launcher that reaches a host at a: this machine, ssh,
// or one partition of a Slurm cluster (its slurm.conf and partition: a job
// is one sbatch, of one partition). A job runs through one launcher, so
// the hosts of one job all have the same Launcher.
func (a Address) Launcher() string {
	if a.Kind == KindSlurm {
		return a.String()
	}
	return a.Kind
}

// ParseAddress parses a host's address field.
func ParseAddress(s string) (Address, error) {
	if s == "" || s == KindLocal {
		return Address{Kind: KindLocal}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return Address{}, fmt.Errorf("address %q: %v", s, err)
	}
	switch u.Scheme {
	case KindSSH:
		a := Address{Kind: KindSSH, Host: u.Hostname()}
		if u.User != nil {
			if _, has := u.User.Password(); has {
				return Address{}, fmt.Errorf("address %q: no passwords in addresses; ssh logs in with keys (BatchMode)", s)
			}
			a.User = u.User.Username()
		}
		if p := u.Port(); p != "" {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				return Address{}, fmt.Errorf("address %q: port %q is not 1 to 65535", s, p)
			}
			a.Port = n
		}
		switch {
		case a.Host == "":
			return Address{}, fmt.Errorf("address %q: want ssh://[user@]host[:port]", s)
		case strings.HasPrefix(a.Host, "-") || strings.HasPrefix(a.User, "-"):
			// ssh would read it as an option.
			return Address{}, fmt.Errorf("address %q: a host or user may not start with '-'", s)
		case (u.Path != "" && u.Path != "/") || u.RawQuery != "":
			return Address{}, fmt.Errorf("address %q: want ssh://[user@]host[:port], nothing after it", s)
		}
		return a, nil
	case KindSlurm:
		a := Address{Kind: KindSlurm, SlurmConf: u.Path}
		if u.Host != "" || !filepath.IsAbs(a.SlurmConf) {
			return Address{}, fmt.Errorf("address %q: want slurm:///absolute/path/to/slurm.conf", s)
		}
		q := u.Query()
		a.Partition = q.Get("partition")
		q.Del("partition")
		if len(q) > 0 {
			return Address{}, fmt.Errorf("address %q: unknown parameter (want only ?partition=NAME)", s)
		}
		return a, nil
	}
	return Address{}, fmt.Errorf("address %q: want local, ssh://[user@]host[:port] or slurm:///path/to/slurm.conf", s)
}

// String gives the address back in the hosts file's form.
func (a Address) String() string {
	switch a.Kind {
	case KindSSH:
		s := "ssh://"
		if a.User != "" {
			s += a.User + "@"
		}
		s += a.Host
		if a.Port != 0 {
			s += ":" + strconv.Itoa(a.Port)
		}
		return s
	case KindSlurm:
		s := "slurm://" + a.SlurmConf
		if a.Partition != "" {
			s += "?partition=" + url.QueryEscape(a.Partition)
		}
		return s
	}
	return KindLocal
}

// Addr returns h's parsed address; hosts files are checked when loaded, so
// an error here means a Host built in code with a bad address.
func (h Host) Addr() (Address, error) { return ParseAddress(h.Address) }

// Launcher is the launcher that reaches h (Address.Launcher); for an
// address that does not parse, which no launcher reaches (the run daemon
// says why), the address itself.
func (h Host) Launcher() string {
	a, err := h.Addr()
	if err != nil {
		return h.Address
	}
	return a.Launcher()
}

// checkClusters enforces what a launcher needs of a cluster: a Slurm
// cluster's hosts all name the same slurm.conf (one cluster, one
// controller), and no cluster mixes kinds of address (Slurm nodes, ssh
// hosts, this machine), so that a job kept inside a cluster is kept inside
// one launcher (the run daemon refuses a job whose hosts are reached
// differently). Hosts without a cluster are one cluster, "".
func checkClusters(hosts []Host) error {
	kind := map[string]Address{}
	first := map[string]string{}
	for _, h := range hosts {
		a, err := h.Addr()
		if err != nil {
			return fmt.Errorf("host %s: %v", h.Name, err)
		}
		prev, seen := kind[h.Cluster]
		if !seen {
			kind[h.Cluster], first[h.Cluster] = a, h.Name
			continue
		}
		switch {
		case (prev.Kind == KindSlurm) != (a.Kind == KindSlurm):
			return fmt.Errorf("host %s: cluster %q mixes Slurm nodes and other hosts (%s is %s); give the Slurm nodes a cluster of their own", h.Name, h.Cluster, first[h.Cluster], prev.Kind)
		case a.Kind != prev.Kind:
			return fmt.Errorf("host %s: cluster %q mixes %s and %s hosts (%s is %s); a job runs inside one cluster, through one launcher: give them clusters of their own",
				h.Name, h.Cluster, prev.Kind, a.Kind, first[h.Cluster], prev.Kind)
		case a.Kind == KindSlurm && (a.SlurmConf != prev.SlurmConf || a.Partition != prev.Partition):
			return fmt.Errorf("host %s: cluster %q: every node of a Slurm cluster names the same slurm.conf and partition (%s has %s)", h.Name, h.Cluster, first[h.Cluster], prev)
		}
	}
	return nil
}

var errNoCluster = errors.New(`field "cluster": required for a Slurm node (its Slurm cluster)`)
