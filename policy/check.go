package policy

import (
	"fmt"
	"slices"
	"strings"

	"msched/workload"
)

// Fault is one part of a plan that Check refuses.
type Fault struct {
	Job  string
	Part string // "start" (Plan.StartNow), "later" (Plan.Later) or "reject" (Plan.Reject)
	// Index is the part's position in its list of the plan (a job named
	// twice in one list is refused the second time only).
	Index  int
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
// s's hosts are in more than one cluster, the hosts of an ordinary job must
// all be in one (the launchers reach the hosts of a cluster one way: see
// OneCluster). A job with a multicluster request (QueuedJob.Request) is
// co-allocated instead (coalloc.go): a total request's hosts may be
// anywhere; an ordered or unordered request's hosts, exactly the sum of its
// components, are read component by component in Components' order, each
// component's hosts inside one cluster, an unordered request's components
// in distinct clusters and an ordered request's component i in the i-th
// cluster of ClusterOrder. A placement
// that starts now must also start at s.Now on hosts free now: FreeAt not
// after Now, held by no running job, and given to no other placement of the
// plan. A rejection must name a waiting job.
//
// A later placement is a prediction, for the Gantt chart: it may name fewer
// hosts than the job takes (conservative counts hosts in its profile rather
// than matching them, and names what it finds), never a wrong one.
func Check(s Snapshot, p Plan) []Fault {
	var c checker
	var x hostIndex
	x.update(s.Hosts)
	return c.check(s, p, &x)
}

// hostIndex indexes a snapshot's hosts by name. It is rebuilt only when
// the hosts' names or clusters change, which they seldom do from one
// decision to the next.
type hostIndex struct {
	names, clusters []string
	of              map[string]int32 // host name → index (the first, if named twice)
	many            bool             // hosts in more than one cluster
	order           []string         // the clusters in ClusterOrder
	cl              []int32          // per host: the index of its cluster in order
	gen             int              // rebuilds so far
}

// update makes x the index of hs.
func (x *hostIndex) update(hs []Host) {
	same := len(hs) == len(x.names)
	for i := 0; same && i < len(hs); i++ {
		same = hs[i].Name == x.names[i] && hs[i].Cluster == x.clusters[i]
	}
	if same {
		return
	}
	x.names, x.clusters = x.names[:0], x.clusters[:0]
	if x.of == nil {
		x.of = make(map[string]int32, len(hs))
	}
	clear(x.of)
	for i, h := range hs {
		x.names = append(x.names, h.Name)
		x.clusters = append(x.clusters, h.Cluster)
		if _, dup := x.of[h.Name]; !dup {
			x.of[h.Name] = int32(i)
		}
	}
	x.many = manyClusters(hs)
	x.order = ClusterOrder(hs)
	x.cl = x.cl[:0]
	for i := range hs {
		x.cl = append(x.cl, int32(slices.Index(x.order, hs[i].Cluster)))
	}
	x.gen++
}

// checker is Check with buffers kept from one call to the next: a Decider
// checks every plan, and the simulator makes ~10,000 decisions a trace (and
// ~200,000 on 100,000 o2k jobs over 960 hosts), so a call builds no map it
// can reuse, does no work per host beyond those the plan and the running
// jobs name, and formats no text but its faults'.
type checker struct {
	call  int64   // this call's number
	at    []int64 // per host: the call that set held (else the host is held by nothing)
	held  []int32 // per host: a running job (≥ 0), or heldBy-k (started by StartNow[k])
	seen  []int64 // per host: the last placement (mark) that named it
	mark  int64
	runs  map[string]runIndex // running jobs' host indexes, by job ID
	gen   int                 // the hostIndex generation runs is for
	queue map[string]int32    // job ID → index in s.Queue
	dec   []uint8             // per queued job: the part that decided it (0: none)
}

// runIndex is a running job's hosts and their indexes.
type runIndex struct {
	names []string
	at    []int32
}

const heldBy = int32(-1) // heldBy-k: started by StartNow[k]

var partNames = [...]string{1: "reject", 2: "start", 3: "later"}

// check is Check, with x the index of s's hosts.
func (c *checker) check(s Snapshot, p Plan, x *hostIndex) []Fault {
	if len(p.StartNow) == 0 && len(p.Later) == 0 && len(p.Reject) == 0 {
		return nil
	}
	// at, held and seen are valid where they hold this call's number or
	// marks; older values (resize keeps them) are smaller.
	c.at = resize(c.at, len(s.Hosts))
	c.held = resize(c.held, len(s.Hosts))
	c.seen = resize(c.seen, len(s.Hosts))
	c.call++
	if len(p.StartNow) > 0 { // only starts need to know what holds a host
		c.holdRunning(s, x)
	}
	if c.queue == nil {
		c.queue = make(map[string]int32, len(s.Queue))
	}
	clear(c.queue)
	for i := range s.Queue {
		if _, dup := c.queue[s.Queue[i].ID]; !dup {
			c.queue[s.Queue[i].ID] = int32(i)
		}
	}
	c.dec = resize(c.dec, len(s.Queue))
	clear(c.dec)

	var faults []Fault
	fault := func(job, part string, index int, format string, args ...any) {
		faults = append(faults, Fault{Job: job, Part: part, Index: index, Reason: fmt.Sprintf(format, args...)})
	}
	placement := func(pl Placement, part string, index int) bool {
		refuse := func(format string, args ...any) { fault(pl.Job, part, index, format, args...) }
		k, ok := c.queue[pl.Job]
		switch {
		case !ok:
			refuse("not a waiting job")
			return false
		case c.dec[k] != 0:
			refuse("already in %s", partNames[c.dec[k]])
			return false
		}
		q := &s.Queue[k]
		if n := len(pl.Hosts); n < max(q.Min, 1) && part == "start" || q.Max > 0 && n > q.Max {
			refuse("%d hosts, the job takes %d to %d", n, max(q.Min, 1), q.Max)
			return false
		}
		c.mark++
		cluster, via := "", ""
		for i, name := range pl.Hosts {
			k, ok := x.of[name]
			if !ok {
				refuse("unknown host %q", name)
				return false
			}
			h := &s.Hosts[k]
			switch {
			case c.seen[k] == c.mark:
				refuse("host %s given twice", name)
				return false
			case q.Arch != "" && h.Arch != q.Arch:
				refuse("host %s is %s, the job wants arch %s", name, h.Arch, q.Arch)
				return false
			case q.Cluster != "" && h.Cluster != q.Cluster:
				refuse("host %s is in cluster %q, the job wants %q", name, h.Cluster, q.Cluster)
				return false
			case i > 0 && h.Cluster != cluster && x.many && q.Request == 0:
				refuse("hosts in clusters %q and %q: a job runs inside one cluster", cluster, h.Cluster)
				return false
			case i > 0 && h.Via != via:
				refuse("hosts %s and %s are reached differently (%s, %s): a job runs through one launcher", pl.Hosts[0], name, via, h.Via)
				return false
			}
			c.seen[k] = c.mark
			cluster, via = h.Cluster, h.Via
		}
		if q.Request == workload.Ordered || q.Request == workload.Unordered {
			if why := x.splitFault(q, pl.Hosts); why != "" {
				refuse("%s", why)
				return false
			}
		}
		return true
	}
	for i, r := range p.Reject {
		k, ok := c.queue[r.Job]
		if !ok || c.dec[k] != 0 {
			fault(r.Job, "reject", i, "not a waiting job, or decided twice")
			continue
		}
		c.dec[k] = 1
	}
	for i, pl := range p.StartNow {
		if !placement(pl, "start", i) {
			continue
		}
		if !pl.Start.Equal(s.Now) {
			fault(pl.Job, "start", i, "starts now at %s, not at the snapshot's now", pl.Start.Format("15:04:05.000"))
			continue
		}
		var busy []string
		for _, h := range pl.Hosts {
			if k := x.of[h]; c.at[k] == c.call || s.Hosts[k].FreeAt.After(s.Now) {
				busy = append(busy, h+" ("+c.why(s, p, k)+")")
			}
		}
		if len(busy) > 0 {
			fault(pl.Job, "start", i, "hosts not free: %s", strings.Join(busy, ", "))
			continue
		}
		c.dec[c.queue[pl.Job]] = 2
		for _, h := range pl.Hosts {
			k := x.of[h]
			c.at[k], c.held[k] = c.call, heldBy-int32(i)
		}
	}
	for i, pl := range p.Later {
		if placement(pl, "later", i) {
			c.dec[c.queue[pl.Job]] = 3
		}
	}
	return faults
}

// splitFault says why hosts, known and distinct, do not hold q's ordered or
// unordered request, read component by component ("" when they do).
func (x *hostIndex) splitFault(q *QueuedJob, hosts []string) string {
	if why := malformedRequest(q); why != "" {
		return why
	}
	if n := RequestSize(q); len(hosts) != n {
		return fmt.Sprintf("%d hosts, the %v request's components %v take %d", len(hosts), q.Request, q.Components, n)
	}
	var ubuf [16]int32
	used := ubuf[:0] // the clusters of the components so far
	off := 0
	for i, size := range q.Components {
		part := hosts[off : off+size]
		cl := x.cl[x.of[part[0]]]
		for _, h := range part[1:] {
			if other := x.cl[x.of[h]]; other != cl {
				return fmt.Sprintf("component %d (hosts %d to %d) is in clusters %q and %q: a component runs inside one cluster",
					i+1, off+1, off+size, x.order[cl], x.order[other])
			}
		}
		switch {
		case q.Request == workload.Ordered && int(cl) != i && i < len(x.order):
			return fmt.Sprintf("component %d is in cluster %q: an ordered request's component %d goes to the %s cluster, %q",
				i+1, x.order[cl], i+1, nth(i+1), x.order[i])
		case q.Request == workload.Ordered && int(cl) != i:
			return fmt.Sprintf("component %d of an ordered request: only %s", i+1, clusters(len(x.order)))
		case q.Request == workload.Unordered:
			if j := slices.Index(used, cl); j >= 0 {
				return fmt.Sprintf("components %d and %d are both in cluster %q: an unordered request's components go to distinct clusters",
					j+1, i+1, x.order[cl])
			}
		}
		used = append(used, cl)
		off += size
	}
	return ""
}

// holdRunning marks the hosts of s's running jobs held by them. A job's
// host indexes are kept from one call to the next, by job ID, while its
// hosts and the host index stay the same: a job runs through many
// decisions.
func (c *checker) holdRunning(s Snapshot, x *hostIndex) {
	if c.runs == nil || c.gen != x.gen || len(c.runs) > 2*len(s.Running)+64 {
		c.runs, c.gen = make(map[string]runIndex, len(s.Running)), x.gen
	}
	for r := range s.Running {
		run := &s.Running[r]
		rh, ok := c.runs[run.ID]
		if !ok || !slices.Equal(rh.names, run.Hosts) {
			// A copy of the names: the caller may reuse its slice.
			rh = runIndex{names: slices.Clone(run.Hosts), at: make([]int32, 0, len(run.Hosts))}
			for _, h := range run.Hosts {
				if k, ok := x.of[h]; ok {
					rh.at = append(rh.at, k)
				}
			}
			c.runs[run.ID] = rh
		}
		for _, k := range rh.at {
			c.at[k], c.held[k] = c.call, int32(r)
		}
	}
}

// why says what holds host k.
func (c *checker) why(s Snapshot, p Plan, k int32) string {
	switch h := c.held[k]; {
	case c.at[k] != c.call:
		return "busy until " + s.Hosts[k].FreeAt.Format("15:04:05")
	case h >= 0:
		return "running job " + s.Running[h].ID
	default:
		return "started " + p.StartNow[heldBy-h].Job
	}
}

// Without returns p without the parts that faults (Check's faults of p)
// refuse: what the sched daemon acts on. p's lists are left as they are.
func (p Plan) Without(faults []Fault) Plan {
	if len(faults) == 0 {
		return p
	}
	type part struct {
		name  string
		index int
	}
	refused := make(map[part]bool, len(faults))
	for _, f := range faults {
		refused[part{f.Part, f.Index}] = true
	}
	var out Plan
	for i, pl := range p.StartNow {
		if !refused[part{"start", i}] {
			out.StartNow = append(out.StartNow, pl)
		}
	}
	for i, pl := range p.Later {
		if !refused[part{"later", i}] {
			out.Later = append(out.Later, pl)
		}
	}
	for i, r := range p.Reject {
		if !refused[part{"reject", i}] {
			out.Reject = append(out.Reject, r)
		}
	}
	return out
}
