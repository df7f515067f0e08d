package policy

import (
	"fmt"
	"strings"
)

// Fault is one part of a plan that Check refuses.
type Fault struct {
	Job    string
	Part   string // "start" (Plan.StartNow), "later" (Plan.Later) or "reject" (Plan.Reject)
	Reason string
}

func (f Fault) Error() string { return "policy: " + f.Part + " " + f.Job + ": " + f.Reason }

// Check is the one plan checker (after Nomad's evaluatePlan): whoever acts
// on a plan refuses the parts it reports. It returns one Fault per refused
// placement or rejection, in plan order; none when the plan is sound.
//
// A placement must name a job waiting in s's queue that no earlier part of
// the plan started or rejected, on at least max(Min, 1) and, when Max > 0,
// at most Max distinct hosts of s that meet the job's Arch and Cluster; when
// s's hosts are in more than one cluster, its hosts must all be in one (the
// launchers reach the hosts of a cluster one way; running one job across
// clusters, co-allocation, is not supported: see OneCluster). A placement
// that starts now must also start at s.Now on hosts free now: FreeAt not
// after Now, held by no running job, and given to no other placement of the
// plan. A rejection must name a waiting job.
//
// A later placement is a prediction, for the Gantt chart: it may name fewer
// hosts than the job takes (conservative counts hosts in its profile rather
// than matching them, and names what it finds), never a wrong one.
func Check(s Snapshot, p Plan) []Fault {
	hosts := make(map[string]*Host, len(s.Hosts))
	clusters := map[string]bool{}
	for i := range s.Hosts {
		hosts[s.Hosts[i].Name] = &s.Hosts[i]
		clusters[s.Hosts[i].Cluster] = true
	}
	held := map[string]string{} // host → what holds it
	for _, r := range s.Running {
		for _, h := range r.Hosts {
			held[h] = "running job " + r.ID
		}
	}
	for _, h := range s.Hosts {
		if _, ok := held[h.Name]; !ok && h.FreeAt.After(s.Now) {
			held[h.Name] = "busy until " + h.FreeAt.Format("15:04:05")
		}
	}
	queue := make(map[string]*QueuedJob, len(s.Queue))
	for i := range s.Queue {
		queue[s.Queue[i].ID] = &s.Queue[i]
	}
	decided := map[string]string{} // job → the part that decided it
	var faults []Fault
	fault := func(job, part, format string, args ...any) {
		faults = append(faults, Fault{Job: job, Part: part, Reason: fmt.Sprintf(format, args...)})
	}
	placement := func(pl Placement, part string) bool {
		q := queue[pl.Job]
		switch {
		case q == nil:
			fault(pl.Job, part, "not a waiting job")
			return false
		case decided[pl.Job] != "":
			fault(pl.Job, part, "already in %s", decided[pl.Job])
			return false
		}
		if n := len(pl.Hosts); n < max(q.Min, 1) && part == "start" || q.Max > 0 && n > q.Max {
			fault(pl.Job, part, "%d hosts, the job takes %d to %d", n, max(q.Min, 1), q.Max)
			return false
		}
		seen := make(map[string]bool, len(pl.Hosts))
		cluster := ""
		for i, name := range pl.Hosts {
			h := hosts[name]
			switch {
			case h == nil:
				fault(pl.Job, part, "unknown host %q", name)
				return false
			case seen[name]:
				fault(pl.Job, part, "host %s given twice", name)
				return false
			case q.Arch != "" && h.Arch != q.Arch:
				fault(pl.Job, part, "host %s is %s, the job wants arch %s", name, h.Arch, q.Arch)
				return false
			case q.Cluster != "" && h.Cluster != q.Cluster:
				fault(pl.Job, part, "host %s is in cluster %q, the job wants %q", name, h.Cluster, q.Cluster)
				return false
			case i > 0 && h.Cluster != cluster && len(clusters) > 1:
				fault(pl.Job, part, "hosts in clusters %q and %q: a job runs inside one cluster", cluster, h.Cluster)
				return false
			}
			seen[name] = true
			cluster = h.Cluster
		}
		return true
	}
	for _, r := range p.Reject {
		if queue[r.Job] == nil || decided[r.Job] != "" {
			fault(r.Job, "reject", "not a waiting job, or decided twice")
			continue
		}
		decided[r.Job] = "reject"
	}
	for _, pl := range p.StartNow {
		if !placement(pl, "start") {
			continue
		}
		if !pl.Start.Equal(s.Now) {
			fault(pl.Job, "start", "starts now at %s, not at the snapshot's now", pl.Start.Format("15:04:05.000"))
			continue
		}
		var busy []string
		for _, h := range pl.Hosts {
			if why, ok := held[h]; ok {
				busy = append(busy, h+" ("+why+")")
			}
		}
		if len(busy) > 0 {
			fault(pl.Job, "start", "hosts not free: %s", strings.Join(busy, ", "))
			continue
		}
		decided[pl.Job] = "start"
		for _, h := range pl.Hosts {
			held[h] = "started " + pl.Job
		}
	}
	for _, pl := range p.Later {
		if placement(pl, "later") {
			decided[pl.Job] = "later"
		}
	}
	return faults
}
