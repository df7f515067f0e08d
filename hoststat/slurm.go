package hoststat

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A Slurm cluster is probed through its controller, with the cluster's
// configuration in SLURM_CONF: `scontrol ping` says whether the controller
// answers (ParseSlurmPing), `scontrol show node -o` gives each node's
// state, CPUs, load and boot time (ParseSlurmNodes), one line per node.

var pingLine = regexp.MustCompile(`^Slurmctld\(([^)]*)\) at (\S+) is (UP|DOWN)\s*$`)

// ParseSlurmPing reads `scontrol ping`: one line per controller,
// "Slurmctld(primary) at ctl is UP" (or DOWN). The cluster answers when
// any controller is UP; detail is the controllers' lines, for a reason.
func ParseSlurmPing(r io.Reader) (up bool, detail string, err error) {
	var lines []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := pingLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue // the banner scontrol prints when every controller is down
		}
		lines = append(lines, m[0])
		up = up || m[3] == "UP"
	}
	if err := sc.Err(); err != nil {
		return false, "", err
	}
	if len(lines) == 0 {
		return false, "", fmt.Errorf("scontrol ping: no controller line")
	}
	return up, strings.Join(lines, "; "), nil
}

// SlurmNode is one node as `scontrol show node -o` describes it.
type SlurmNode struct {
	Name     string
	State    string // e.g. IDLE, MIXED, IDLE+DRAIN, DOWN* ('*': not responding)
	CPUs     int    // CPUTot
	Load     float64
	LoadOK   bool      // CPULoad was given (it is N/A until slurmd reports)
	BootTime time.Time // zero when not given
	Reason   string    // why an administrator or Slurm took it out of service
}

// ParseSlurmNodes reads `scontrol show node -o`: one line of Key=Value
// fields per node. A value may hold spaces (OS=Linux 6.1.0 #1 SMP …,
// Reason=maint window [root@…]): a word that does not start a new Key= is
// part of the value before it. Times carry no zone; they are read in loc,
// the controller's (nil: time.Local).
func ParseSlurmNodes(r io.Reader, loc *time.Location) ([]SlurmNode, error) {
	if loc == nil {
		loc = time.Local
	}
	var nodes []SlurmNode
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		kv := slurmFields(sc.Text())
		name := kv["NodeName"]
		if name == "" {
			continue // "No nodes in the system", a blank line
		}
		n := SlurmNode{Name: name, State: kv["State"], Reason: kv["Reason"]}
		if v, ok := kv["CPUTot"]; ok {
			c, err := strconv.Atoi(v)
			if err != nil || c < 0 {
				return nodes, fmt.Errorf("slurm node %s: CPUTot %q", name, v)
			}
			n.CPUs = c
		}
		if v, err := strconv.ParseFloat(kv["CPULoad"], 64); err == nil && v >= 0 {
			n.Load, n.LoadOK = v, true
		}
		if v := kv["BootTime"]; v != "" && v != "None" {
			if t, err := time.ParseInLocation("2006-01-02T15:04:05", v, loc); err == nil {
				n.BootTime = t
			}
		}
		nodes = append(nodes, n)
	}
	return nodes, sc.Err()
}

var slurmKey = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*=`)

func slurmFields(line string) map[string]string {
	kv := map[string]string{}
	key := ""
	for _, w := range strings.Fields(line) {
		if slurmKey.MatchString(w) {
			k, v, _ := strings.Cut(w, "=")
			key = k
			kv[key] = v
			continue
		}
		if key != "" {
			if kv[key] == "" {
				kv[key] = w
			} else {
				kv[key] += " " + w
			}
		}
	}
	return kv
}

// Down reports whether the node cannot take jobs, and why: not responding
// (its state ends in '*'), or DOWN, DRAIN (draining or drained), FAIL or
// FUTURE among its state's words. A powered-down node of a cloud cluster
// is not down: Slurm powers it up for a job.
func (n SlurmNode) Down() (bool, string) {
	st := n.State
	why := func(what string) string {
		s := "slurm: node " + n.Name + " is " + what + " (" + n.State + ")"
		if n.Reason != "" {
			s += ": " + n.Reason
		}
		return s
	}
	if strings.HasSuffix(st, "*") {
		return true, why("not responding")
	}
	for _, w := range strings.Split(st, "+") {
		switch strings.TrimRight(w, "*~#!%$@^-") {
		case "DOWN":
			return true, why("down")
		case "DRAIN", "DRAINED", "DRAINING":
			return true, why("drained")
		case "FAIL", "FAILING":
			return true, why("failing")
		case "FUTURE":
			return true, why("not in service yet")
		}
	}
	return false, ""
}

// Stats is the node as a sample taken at now. Slurm reports one load figure,
// the node's 1-minute load average as slurmd read it; it stands for all
// three. User idle time is not a Slurm notion: a node is NoUser. ok is false
// when the node reported no load.
func (n SlurmNode) Stats(now time.Time) (Stats, bool) {
	if !n.LoadOK {
		return Stats{}, false
	}
	s := Stats{Time: now, Load1: n.Load, Load5: n.Load, Load15: n.Load, NCPU: n.CPUs, Idle: NoUser}
	if !n.BootTime.IsZero() && now.After(n.BootTime) {
		s.Uptime = now.Sub(n.BootTime).Seconds()
	}
	return s, true
}
