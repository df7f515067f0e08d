package policy

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"msched/ga"
)

// This file is the machine model shared by the baseline policies (fcfs,
// fcfs-fill, fpfs, lwf, lwf-strict, easy, conservative): a host is one
// processor; a job takes Min hosts (these policies treat every job as rigid:
// a moldable job, Min < Max, is run on Min hosts); any free hosts that meet
// its Arch and Cluster constraints will do (the same allowed-hosts logic as
// the GA's problem builder). A multicluster request (QueuedJob.Request) that
// must be co-allocated is placed by the rules of coalloc.go when the
// machine's policy places such jobs (coalloc: fcfs, fcfs-fill, fpfs) and
// rejected otherwise, here, for every policy built on the machine. Times are
// int64 nanoseconds after the snapshot's Now.

// never is the offset of a time that does not come.
const never = int64(math.MaxInt64)

// maxEstimate caps run-time estimates so that Now plus any estimate plus
// any start offset stays far from int64 overflow (about 146 years).
const maxEstimate = int64(1) << 62

// overrunEnd is where a running job that has passed its predicted end is
// assumed to end: at once, just after now (its hosts are busy now).
const overrunEnd = int64(1)

// release is the predicted moment at which some busy hosts become free.
type release struct {
	at int64
	// The hosts released are machine.relBuf[lo:hi] (indexes into
	// machine.hosts); offsets keep the element small to sort.
	lo, hi int32
}

// qjob is a queued job as the baseline policies see it.
type qjob struct {
	q     *QueuedJob
	pos   int     // position in the snapshot's queue (arrival order)
	n     int     // hosts it takes (Min, at least 1; a request's size)
	allow ga.Bits // allowed hosts; nil: any host
	est   int64   // estimated run time; 0 until asked for
	co    bool    // co-allocated: placed by Coallocate
}

// machine is one Plan call's view of the hosts: which are free now and when
// the busy ones are predicted to be free. Its buffers are kept from call to
// call (a policy is called by one goroutine), so a call allocates little
// beyond the hosts named in its placements.
type machine struct {
	o     Options
	ctx   context.Context
	now   time.Time
	nowNs int64

	hosts  []Host
	kept   []Host              // the hosts the index and cache are for
	index  map[string]int      // host name -> index
	cache  map[string]cached   // estimates by job ID
	runs   map[string]runHosts // running jobs' hosts by job ID
	freeAt []int64             // per host: 0 free now, else predicted free
	free   []int               // hosts free now, ascending index
	freeBf []int               // backing store of free
	rel    []release           // predicted releases of busy hosts, by time
	relOK  bool                // rel is built for this call
	relBuf []int               // backing store of rel[].hosts
	claim  []bool              // per host: already in a release
	runIdx []int               // running jobs' host indexes, job r's at runIdx[runOff[r]:runOff[r+1]]
	runOff []int
	runEnd []int64 // running jobs' predicted ends

	jobs    []qjob
	rejects []Rejection
	hbuf    []Host // predictor argument
	pick    []int  // hosts being chosen

	// fastFirst lists the free hosts fastest first (Host.Speed; ties by
	// index), so that jobs take the fastest free hosts and the reservation
	// of EASY's head holds the slowest; estimates are asked on the fastest
	// hosts a job may use. Otherwise hosts go by index, whatever their
	// speed.
	fastFirst bool
	bySpeed   []int // host indexes, fastest first (with fastFirst)

	// coalloc: the policy places co-allocated requests (coalloc.go); the
	// machine rejects them otherwise. Set by the policy at construction.
	coalloc   bool
	clusters  []string // the hosts' clusters in ClusterOrder
	clusterOf []int    // per host: the index of its cluster in clusters
	cfree     [][]int  // per cluster: free hosts a job may use (placeNow's buffer)
	// The launchers (Host.Via) in order of first appearance, and each
	// host's index in them.
	vias  []string
	viaOf []int
	vsize [][]int // per launcher, per cluster: its hosts
	vcap  [][]int // per launcher, per cluster: hosts a job may use (request's buffer)
}

func newMachine(o Options) *machine {
	o = o.withDefaults()
	return &machine{o: o, index: map[string]int{}, cache: map[string]cached{}, runs: map[string]runHosts{}}
}

// load reads the snapshot: host states, predicted releases and the queued
// jobs that could ever run (the others become rejections).
func (m *machine) load(ctx context.Context, s *Snapshot) {
	m.ctx, m.now, m.hosts = ctx, s.Now, s.Hosts
	m.nowNs = s.Now.UnixNano()
	if !m.sameHosts(s.Hosts) {
		// Host indexes, or what predictions depend on, changed.
		m.kept = m.kept[:0]
		clear(m.index)
		clear(m.cache)
		clear(m.runs)
		for i, h := range s.Hosts {
			h.FreeAt = time.Time{}
			m.kept = append(m.kept, h)
			m.index[h.Name] = i
		}
		m.clusters, m.clusterOf = clusterIndex(s.Hosts, m.clusterOf)
		m.vias, m.viaOf = launchers(s.Hosts, m.vias[:0], resize(m.viaOf, len(s.Hosts)))
		m.vsize = launcherSizes(m.viaOf, len(m.vias), m.clusterOf, len(m.clusters), nil, m.vsize)
	}
	if len(m.cache) > 2*len(s.Queue)+1024 {
		// Drop the estimates of jobs gone from the queue.
		old := m.cache
		m.cache = make(map[string]cached, len(s.Queue))
		for i := range s.Queue {
			if c, ok := old[s.Queue[i].ID]; ok {
				m.cache[s.Queue[i].ID] = c
			}
		}
	}
	if len(m.runs) > 2*len(s.Running)+1024 {
		clear(m.runs) // jobs long ended; rebuilt below
	}
	nh := len(s.Hosts)
	m.freeAt = resize(m.freeAt, nh)
	m.claim = resize(m.claim, nh)
	for i := range s.Hosts {
		m.freeAt[i] = 0
		if off := m.offset(s.Hosts[i].FreeAt); off > 0 {
			m.freeAt[i] = off
		}
	}
	m.runIdx, m.runOff, m.runEnd = m.runIdx[:0], m.runOff[:0], m.runEnd[:0]
	for _, r := range s.Running {
		end := max(m.offset(r.End), overrunEnd)
		m.runOff = append(m.runOff, len(m.runIdx))
		m.runEnd = append(m.runEnd, end)
		for _, i := range m.hostsOf(&r) {
			m.runIdx = append(m.runIdx, i)
			if end > m.freeAt[i] {
				m.freeAt[i] = end
			}
		}
	}
	m.runOff = append(m.runOff, len(m.runIdx))
	m.free = m.freeBf[:0]
	for i, t := range m.freeAt {
		if t == 0 {
			m.free = append(m.free, i)
		}
	}
	m.freeBf = m.free[:0]
	if m.fastFirst {
		m.sortFast(s.Hosts)
	}
	m.relOK = false

	m.jobs, m.rejects = m.jobs[:0], m.rejects[:0]
	for i := range s.Queue {
		q := &s.Queue[i]
		j := qjob{q: q, pos: i, n: max(q.Min, 1)}
		var avail int
		j.allow, avail = allowedCount(s.Hosts, q)
		if q.Request != 0 {
			if why := m.request(&j, avail); why != "" {
				m.rejects = append(m.rejects, Rejection{Job: q.ID, Reason: why})
				continue
			}
		} else if j.n > avail {
			m.rejects = append(m.rejects, rejection(q, j.n, avail))
			continue
		}
		m.jobs = append(m.jobs, j)
	}
}

// hostsOf is the indexes of r's hosts (unknown names left out). A running
// job keeps its hosts, so they are looked up once per job, not per call:
// reused while r names the same hosts.
func (m *machine) hostsOf(r *RunningJob) []int {
	if c, ok := m.runs[r.ID]; ok && slices.Equal(c.names, r.Hosts) {
		return c.idx
	}
	c := runHosts{names: r.Hosts}
	for _, name := range r.Hosts {
		if i, ok := m.index[name]; ok {
			c.idx = append(c.idx, i)
		}
	}
	m.runs[r.ID] = c
	return c.idx
}

// runHosts is a running job's host names and their indexes.
type runHosts struct {
	names []string
	idx   []int
}

func (m *machine) sameHosts(hs []Host) bool {
	if len(hs) != len(m.kept) {
		return false
	}
	for i, h := range hs {
		k := &m.kept[i]
		if h.Name != k.Name || h.Arch != k.Arch || h.Cluster != k.Cluster || h.Via != k.Via || h.Load != k.Load {
			return false
		}
	}
	return true
}

// releases returns the predicted releases of the busy hosts, by time: each
// running job releases the hosts it holds last; hosts busy otherwise (by
// FreeAt, or started by this call before the releases were first asked
// for) release one by one. Built on first use in a call, then kept up to
// date by startOn.
func (m *machine) releases() []release {
	if m.relOK {
		return m.rel
	}
	m.relOK = true
	clear(m.claim)
	m.rel, m.relBuf = m.rel[:0], m.relBuf[:0]
	for r, end := range m.runEnd {
		from := len(m.relBuf)
		for _, i := range m.runIdx[m.runOff[r]:m.runOff[r+1]] {
			if !m.claim[i] && m.freeAt[i] == end {
				m.claim[i] = true
				m.relBuf = append(m.relBuf, i)
			}
		}
		if len(m.relBuf) > from {
			m.rel = append(m.rel, release{at: end, lo: int32(from), hi: int32(len(m.relBuf))})
		}
	}
	for i, t := range m.freeAt {
		if t > 0 && !m.claim[i] {
			m.relBuf = append(m.relBuf, i)
			m.rel = append(m.rel, release{at: t, lo: int32(len(m.relBuf) - 1), hi: int32(len(m.relBuf))})
		}
	}
	// Ties by first host: deterministic whatever the running jobs' order.
	slices.SortFunc(m.rel, func(a, b release) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return int(m.relBuf[a.lo] - m.relBuf[b.lo])
	})
	return m.rel
}

// relHosts is the hosts r releases.
func (m *machine) relHosts(r release) []int { return m.relBuf[r.lo:r.hi] }

// n is the number of hosts r releases.
func (r release) n() int { return int(r.hi - r.lo) }

// offset is t as nanoseconds after now (UnixNano arithmetic: Time.Sub
// checks for overflow with an Add, and this runs per busy host per call;
// times are within UnixNano's years 1678-2262). The zero time is long ago.
func (m *machine) offset(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixNano() - m.nowNs
}

// at is the absolute time of an offset.
func (m *machine) at(off int64) time.Time {
	if off >= never {
		return m.now.Add(time.Duration(maxEstimate))
	}
	return m.now.Add(time.Duration(off))
}

// estimate is j's predicted run time: the predictor's answer on the first
// j.n hosts it may use, else its Estimate, else the fallback. The
// predictor is asked once per job while the hosts (names, arch, cluster,
// load) and the job's Estimate and host count stay the same: the answer
// does not depend on which hosts are free, so later calls reuse it.
func (m *machine) estimate(j *qjob) int64 {
	if j.est > 0 {
		return j.est
	}
	if c, ok := m.cache[j.q.ID]; ok && c.n == j.n && c.given == j.q.Estimate {
		j.est = c.est
		return j.est
	}
	m.hbuf = m.hbuf[:0]
	if m.o.Predictor != nil {
		for x := 0; x < len(m.hosts) && len(m.hbuf) < j.n; x++ {
			i := x
			if m.fastFirst {
				i = m.bySpeed[x]
			}
			if j.allow == nil || j.allow.Has(i) {
				m.hbuf = append(m.hbuf, m.hosts[i])
			}
		}
	}
	j.est = m.predictOn(j, m.hbuf, 1)
	if m.o.Predictor != nil {
		m.cache[j.q.ID] = cached{est: j.est, given: j.q.Estimate, n: j.n}
	}
	return j.est
}

// predictOn is j's run time on hosts hs: the predictor's answer, else its
// Estimate divided by speed (the hosts' speed, when the caller knows it),
// else the fallback; capped at maxEstimate.
func (m *machine) predictOn(j *qjob, hs []Host, speed float64) int64 {
	if m.o.Predictor != nil && len(hs) > 0 {
		p, err := m.o.Predictor.Predict(m.ctx, j.q, hs)
		if err != nil {
			m.o.Log.Warn("prediction failed; using the job's estimate", "job", j.q.ID, "err", err)
		}
		if err == nil && p > 0 {
			return min(int64(p), maxEstimate)
		}
	}
	d := j.q.Estimate
	if d <= 0 {
		d = m.o.Fallback
	}
	return min(int64(float64(d)/speed), maxEstimate)
}

// onHosts is predictOn on the hosts of indexes hs.
func (m *machine) onHosts(j *qjob, hs []int) int64 {
	m.hbuf = m.hbuf[:0]
	for _, h := range hs {
		m.hbuf = append(m.hbuf, m.hosts[h])
	}
	return m.predictOn(j, m.hbuf, 1)
}

// cached is a remembered estimate and what it was computed from.
type cached struct {
	est   int64
	given time.Duration
	n     int
}

// freeFor counts the hosts free now that j may use.
func (m *machine) freeFor(j *qjob) int {
	if j.allow == nil {
		return len(m.free)
	}
	c := 0
	for _, h := range m.free {
		if j.allow.Has(h) {
			c++
		}
	}
	return c
}

// take starts j now on the hosts placeNow chooses; the caller has checked
// that they exist.
func (m *machine) take(j *qjob) Placement {
	m.placeNow(j)
	return m.startOn(j, m.pick)
}

// placeNow chooses hosts free now for j, in m.pick, and reports whether
// there are enough: an ordinary job takes the first j.n free hosts it may
// use (lowest index first, or fastest with fastFirst), a co-allocated one
// is placed by Coallocate on the free hosts of each cluster in that order,
// the clusters of one launcher (Host.Via) at a time, first come first.
func (m *machine) placeNow(j *qjob) bool {
	m.pick = m.pick[:0]
	if j.co {
		m.cfree = resize(m.cfree, len(m.clusters))
		for v := range m.vias {
			for c := range m.cfree {
				m.cfree[c] = m.cfree[c][:0]
			}
			for _, h := range m.free {
				if m.viaOf[h] == v && (j.allow == nil || j.allow.Has(h)) {
					c := m.clusterOf[h]
					m.cfree[c] = append(m.cfree[c], h)
				}
			}
			var ok bool
			if m.pick, ok = Coallocate(j.q, m.cfree, m.o.Fit, m.pick); ok {
				return true
			}
		}
		return false
	}
	for _, h := range m.free {
		if len(m.pick) == j.n {
			break
		}
		if j.allow == nil || j.allow.Has(h) {
			m.pick = append(m.pick, h)
		}
	}
	return len(m.pick) == j.n
}

// request readies queued job j, which has a multicluster request: its host
// count, and whether it is co-allocated (coallocated); or it says why the
// policy rejects it: the request is malformed, the policy does not place
// co-allocated requests, or no state of the clusters could ever hold it. A
// total request on hosts of one cluster is an ordinary rigid job (avail is
// the number of hosts it may use).
func (m *machine) request(j *qjob, avail int) string {
	q := j.q
	many := len(m.clusters) > 1
	if !m.coalloc {
		if r, ok := refuseCoalloc(q, many); ok {
			return r.Reason
		}
	} else if why := malformedRequest(q); why != "" {
		return why
	}
	j.n = RequestSize(q)
	if !coallocated(q, many) {
		if j.n > avail {
			return rejection(q, j.n, avail).Reason
		}
		return ""
	}
	j.co = true
	size := m.vsize
	if j.allow != nil {
		m.vcap = launcherSizes(m.viaOf, len(m.vias), m.clusterOf, len(m.clusters), j.allow, m.vcap)
		size = m.vcap
	}
	return neverFitsOneWay(q, m.clusters, m.vias, size)
}

// coallocates makes m place co-allocated requests (for fcfs, fcfs-fill and
// fpfs) rather than reject them.
func (m *machine) coallocates() *machine {
	m.coalloc = true
	return m
}

// startOn starts j now on hosts hs (free now, allowed, j.n of them): they
// are busy until now plus its estimate (with fastFirst, its prediction on
// hs), and a release says so.
func (m *machine) startOn(j *qjob, hs []int) Placement {
	est := m.estimate(j)
	if m.fastFirst {
		est = m.onHosts(j, hs) // the hosts taken may be slower than the fastest
	}
	end := max(est, overrunEnd)
	names := make([]string, len(hs))
	from := len(m.relBuf)
	for x, h := range hs {
		names[x] = m.hosts[h].Name
		m.freeAt[h] = end
		if m.relOK {
			m.relBuf = append(m.relBuf, h)
		}
	}
	m.free = slices.DeleteFunc(m.free, func(h int) bool { return m.freeAt[h] != 0 })
	pl := Placement{Job: j.q.ID, Hosts: names, Start: m.now, Predicted: time.Duration(est), Why: moldableWhy(j.q, len(hs), minimumWhy)}
	if !m.relOK {
		return pl
	}
	r := release{at: end, lo: int32(from), hi: int32(len(m.relBuf))}
	k, _ := slices.BinarySearchFunc(m.rel, end, func(r release, t int64) int {
		if r.at <= t {
			return -1 // after every release at the same time
		}
		return 1
	})
	m.rel = slices.Insert(m.rel, k, r)
	return pl
}

// resize returns v with length n, reusing its storage when it is large
// enough; the contents are not cleared.
func resize[T any](v []T, n int) []T {
	if cap(v) < n {
		return make([]T, n)
	}
	return v[:n]
}

// whenFree is the earliest offset at which j.n hosts that j may use are
// free by the busy hosts' predicted releases alone (no reservations), or
// never.
func (m *machine) whenFree(j *qjob) int64 {
	need := j.n - m.freeFor(j)
	if need <= 0 {
		return 0
	}
	for _, r := range m.releases() {
		for _, x := range m.relHosts(r) {
			if j.allow == nil || j.allow.Has(x) {
				need--
			}
		}
		if need <= 0 {
			return r.at
		}
	}
	return never
}

// sortFast orders the free hosts, and bySpeed all hosts, fastest first
// (ties by index).
func (m *machine) sortFast(hs []Host) {
	fast := func(a, b int) int {
		if c := cmp.Compare(speedOf(&hs[b]), speedOf(&hs[a])); c != 0 {
			return c
		}
		return a - b
	}
	slices.SortFunc(m.free, fast)
	if len(m.bySpeed) != len(hs) {
		m.bySpeed = resize(m.bySpeed, len(hs))
		for i := range m.bySpeed {
			m.bySpeed[i] = i
		}
	}
	slices.SortFunc(m.bySpeed, fast)
}
