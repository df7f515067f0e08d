package policy

import (
	"cmp"
	"math"
	"slices"
	"time"

	"msched/models"
)

// This file is SCOJO-P's load prediction (Barsanti and Sodan, §4.2, Fig. 1):
// the average load per host over a candidate job's run, from the jobs
// running, the jobs waiting and the jobs expected to arrive, and the size
// modifier iterated towards the ideal load.

// SCOJO-P's settings. The paper tried several ideal loads and found 0.9
// best, "the maximum utilization which typically can be achieved on a
// machine, considering that there is always some fragmentation"; it gives
// no tolerance nor a number of bad modifiers ("a couple"), so msched takes
// 0.02 (a fiftieth of the machine) and 3; the iteration is also capped, as
// a guard (it stops far sooner: a size that no longer changes ends it).
const (
	scojoIdealLoad   = 0.9
	scojoTolerance   = 0.02
	scojoMaxBad      = 3
	scojoMaxIter     = 32
	scojoAgeFactor   = 5 // aged after waiting 5 × its run time at N_opt (§5.2)
	scojoSlot        = 30 * time.Minute
	scojoSlotsPerDay = int(24 * time.Hour / scojoSlot)
	// scojoWindow is how far back the arrival history and the record of
	// ended runs reach: a week, so that each half hour of the day is seen
	// several times and the estimates follow a workload that changes.
	scojoWindow = 7 * 24 * time.Hour
	// scojoMaxOwnTargets bounds the jobs behind the head that adaptive
	// backfilling without candidates sizes by their own target, per call
	// (backfillSizes): each target reads the whole queue a few times, so
	// a long queue would make a call quadratic in it (5,000 waiting jobs,
	// BenchmarkScojoPPlanQueue5000: 353 ms a call without the bound, 12 ms
	// with it, 3 ms giving every job its least size). Like Slurm's
	// bf_max_job_test (the jobs its backfill pass tests each cycle), it
	// bounds the jobs first in priority order, which backfilling reaches
	// first.
	scojoMaxOwnTargets = 100
)

// arrival is one job's arrival as the history keeps it.
type arrival struct {
	at    int64 // submit time, UnixNano
	class int
	size  float64 // N_opt
	run   float64 // run time at N_opt, seconds
}

// history is SCOJO-P's record of recent arrivals, kept across Plan calls:
// the paper predicts future submissions from the mean numbers of short,
// medium and long jobs submitted in each of the 48 half hours of the day
// (§5.2, from "actual workload simulations"); msched learns them online,
// from the jobs it has seen arrive over the last scojoWindow.
//
// What each expected arrival adds to the load is its work within the
// candidate's run: the paper takes each class's mean size and mean run
// time (avg_size, avg_runtime), so a class's arrivals each work
// avg_size·min(avg_runtime, T − t). That is the expected work only when
// run times do not vary: min(run, x) is concave in the run, and with the
// heavy-tailed run times of real workloads (a class's mean made by a few
// runs of days) the mean's overlap is far above the mean overlap. On the
// o2k workload at offered load 0.73 the load predicted over a long job's
// first day was about 1 while the machine was little more than half busy,
// and SCOJO-P shrank three long jobs for every one it grew. msched takes
// the expectation over the arrivals the window holds instead (runDist):
// each class's recent jobs, size and run time together (bench moldable, 5
// seeds: o2k 2 % and 6 % lower mean response at W1 and W2, Lublin and
// SDSC within 2 %; docs/moldable.md).
type history struct {
	start int64     // UnixNano of the first arrival or call seen
	ev    []arrival // by time; ev[head:] within the window
	head  int
	count [][nClasses]float64 // per slot of the day
	n     [nClasses]float64
	dirty bool // ev changed since dist was built

	// This call's estimates: arrivals per second of each class in each
	// slot; and each class's sizes and run times, built when first needed
	// after the window changed.
	rate [][nClasses]float64
	dist [nClasses]runDist
	big  []cappedJob // futureWork's scratch
}

// runDist is the window's jobs of one class, by run time, with the prefix
// sums that give the expected overlap of an arrival's run with a span in
// O(log n): w holds, for the first k jobs by run time, Σ size, Σ size·run
// and Σ size·run². bySize holds the same jobs, largest first, for the few
// that a size modifier would make larger than the machine.
type runDist struct {
	runs   []float64
	w      [][3]float64 // len(runs)+1
	bySize []sizeRun
}

type sizeRun struct{ size, run float64 }

// cappedJob is a job of the window that a size modifier makes larger than
// the machine: it counts on the machine, for its run time there (f times
// its run).
type cappedJob struct{ size, run, f float64 }

// build makes d from the arrivals of class c in ev: every one, as the
// rates count every one.
func (d *runDist) build(ev []arrival, c int) {
	d.bySize = d.bySize[:0]
	for _, a := range ev {
		if a.class == c {
			d.bySize = append(d.bySize, sizeRun{math.Max(a.size, 0), math.Max(a.run, 0)})
		}
	}
	slices.SortFunc(d.bySize, func(a, b sizeRun) int { return cmp.Compare(a.run, b.run) })
	d.runs = d.runs[:0]
	d.w = append(d.w[:0], [3]float64{})
	for _, j := range d.bySize {
		d.runs = append(d.runs, j.run)
		last := d.w[len(d.w)-1]
		d.w = append(d.w, [3]float64{last[0] + j.size, last[1] + j.size*j.run, last[2] + j.size*j.run*j.run})
	}
	slices.SortFunc(d.bySize, func(a, b sizeRun) int { return cmp.Compare(b.size, a.size) })
}

// overlapSum is Σ size·∫₀ʸ min(run, x) dx over the class's jobs: a job
// whose run ends before y adds size·overlap1(y, run).
func (d *runDist) overlapSum(y float64) float64 {
	if y <= 0 || len(d.runs) == 0 {
		return 0
	}
	k, _ := slices.BinarySearch(d.runs, y) // runs[:k] < y
	lo, all := d.w[k], d.w[len(d.runs)]
	return y*lo[1] - lo[2]/2 + y*y/2*(all[0]-lo[0])
}

// overlap1 is ∫₀ʸ min(run, x) dx: run·y − run²/2 for a run that ends
// before y, y²/2 for a longer one.
func overlap1(y, run float64) float64 {
	switch {
	case y <= 0:
		return 0
	case run < y:
		return run*y - run*run/2
	}
	return y * y / 2
}

func slotOf(unixNano int64) int {
	s := unixNano / int64(scojoSlot)
	return int(((s % int64(scojoSlotsPerDay)) + int64(scojoSlotsPerDay)) % int64(scojoSlotsPerDay))
}

// add records an arrival.
func (h *history) add(a arrival) {
	if h.count == nil {
		h.count = make([][nClasses]float64, scojoSlotsPerDay)
		h.rate = make([][nClasses]float64, scojoSlotsPerDay)
	}
	if h.start == 0 || a.at < h.start {
		h.start = a.at
	}
	// Keep ev in time order (arrivals come nearly in order: insert from
	// the end), so that the window's old end is at the front.
	i := len(h.ev)
	h.ev = append(h.ev, a)
	for ; i > h.head && h.ev[i-1].at > a.at; i-- {
		h.ev[i] = h.ev[i-1]
	}
	h.ev[i] = a
	h.count[slotOf(a.at)][a.class]++
	h.n[a.class]++
	h.dirty = true
}

// update drops the arrivals older than the window and estimates the rates
// as of now: a slot's count over the time the window has spent in that
// slot. Until a whole day has been seen, every slot gets the arrivals seen
// so far spread over a day: a fresh scheduler (or one just restarted,
// since the history is in memory) that took a lone job's arrival over the
// minutes it has been up for a rate would expect a flood of its like, and
// shrink the job on an idle machine. Spread over a day, the first hours
// under-predict the load instead, and the sizes lean to the job's side.
func (h *history) update(now int64) {
	if h.count == nil {
		h.count = make([][nClasses]float64, scojoSlotsPerDay)
		h.rate = make([][nClasses]float64, scojoSlotsPerDay)
	}
	if h.start == 0 || now < h.start {
		h.start = now
	}
	from := max(h.start, now-int64(scojoWindow))
	h.ev, h.head = dropBefore(h.ev, h.head, func(a *arrival) bool { return a.at < from }, func(a *arrival) {
		h.count[slotOf(a.at)][a.class]--
		h.n[a.class]--
		h.dirty = true
	})
	span := float64(now-from) / 1e9
	day := float64(24 * time.Hour / time.Second)
	if span < day {
		for k := range h.rate {
			for c := range nClasses {
				h.rate[k][c] = math.Max(h.n[c], 0) / day
			}
		}
		return
	}
	exp := exposure(from, now)
	for k := range h.rate {
		for c := range nClasses {
			h.rate[k][c] = 0
			if exp[k] > 0 {
				h.rate[k][c] = math.Max(h.count[k][c], 0) / exp[k]
			}
		}
	}
}

// dropBefore drops the events at the front of ev[head:] that old says have
// left a window, handing each to gone, and returns ev and the new head:
// the window is ev[head:], in time order, and ev is compacted when most of
// it has left.
func dropBefore[E any](ev []E, head int, old func(*E) bool, gone func(*E)) ([]E, int) {
	for head < len(ev) && old(&ev[head]) {
		gone(&ev[head])
		head++
	}
	if head > 1024 && head > len(ev)/2 {
		ev = append(ev[:0], ev[head:]...)
		head = 0
	}
	return ev, head
}

// exposure is the time, in seconds, that [from, to) spends in each slot of
// the day.
func exposure(from, to int64) []float64 {
	e := make([]float64, scojoSlotsPerDay)
	day := int64(24 * time.Hour)
	full := (to - from) / day
	for k := range e {
		e[k] = float64(full) * scojoSlot.Seconds()
	}
	for t := from + full*day; t < to; {
		k := slotOf(t)
		end := min((t/int64(scojoSlot)+1)*int64(scojoSlot), to)
		e[k] += float64(end-t) / 1e9
		t = end
	}
	return e
}

// futureWork is the expected work (host-seconds) of the jobs that will
// arrive over the next T seconds from now, within those T seconds: each
// class's arrivals at its rate in each half hour, each working min(run,
// T − t) if it arrives t from now, in expectation over the class's recent
// jobs (runDist), every size times sMod (kept within the efficiency
// model's ½..2) and every run time scaled to match (models.RelativeTime),
// and times over (the runs' actual over their estimated time).
//
// The paper's Fig. 1 adds, for every half hour the job's run spans, that
// slot's expected arrivals, each working min(runtime, T) as if it arrived
// at once: a 10-s job would count a whole half hour of arrivals as running
// beside it. msched counts the arrivals expected in [now, now+T) only, each
// for the part of its run that falls before now+T (the expectation of the
// overlapped work the text describes: "only the overlapped runtime is
// considered"). A job that the modifier would make larger than the
// machine of mn hosts counts on mn, for its run time there.
func (h *history) futureWork(now int64, T, sMod, over float64, mn int) float64 {
	if T <= 0 || h.rate == nil {
		return 0
	}
	if h.dirty {
		for c := range nClasses {
			h.dist[c].build(h.ev[h.head:], c)
		}
		h.dirty = false
	}
	r := math.Min(math.Max(sMod, 0.5), 2)
	f := models.RelativeTime(r) * over
	m := float64(mn)
	slot := scojoSlot.Seconds()
	total := 0.0
	for c := range nClasses {
		d := &h.dist[c]
		if len(d.runs) == 0 {
			continue
		}
		// Per arrival at t ∈ [a, b), a job of the class works
		// r·size·∫ min(f·run, x) dx over x ∈ [T−b, T−a], that is
		// r·size·f²·(overlap1((T−a)/f, run) − overlap1((T−b)/f, run)):
		// summed over the class's jobs through overlapSum, less, for
		// each job cut to the machine, the difference.
		big := h.big[:0]
		for _, j := range d.bySize {
			if r*j.size <= m {
				break
			}
			big = append(big, cappedJob{j.size, j.run, models.RelativeTime(m/j.size) * over})
		}
		h.big = big
		w := 0.0
		k := slotOf(now)
		into := float64(now%int64(scojoSlot)) / 1e9
		if into < 0 {
			into += slot
		}
		for t := 0.0; t < T; {
			end := math.Min(T, t+slot-into)
			if rate := h.rate[k][c]; rate > 0 {
				v := r * f * f * (d.overlapSum((T-t)/f) - d.overlapSum((T-end)/f))
				for _, j := range big {
					v += m*j.f*j.f*(overlap1((T-t)/j.f, j.run)-overlap1((T-end)/j.f, j.run)) -
						r*j.size*f*f*(overlap1((T-t)/f, j.run)-overlap1((T-end)/f, j.run))
				}
				w += rate * v
			}
			t, into, k = end, 0, (k+1)%scojoSlotsPerDay
		}
		total += w / float64(len(d.runs))
	}
	return total
}

// sizeFor is a moldable job's size under the modifier sMod: sMod times its
// N_opt, rounded, within lo..hi.
func sizeFor(c *curve, sMod float64, lo int) int {
	n := int(math.Round(sMod * float64(c.opt)))
	return min(max(n, lo), c.hi())
}

// load is Fig. 1's average load per host over the run of job k on size
// hosts (T seconds), with every waiting and future job's size scaled by
// sMod: the work of k, of the running jobs (their hosts until their
// predicted ends), of the waiting jobs and of the expected arrivals, each
// within the next T seconds, over the machine's capacity in that time.
//
// Every estimated time in it (T, the running jobs' remaining times, the
// waiting jobs' and the arrivals' run times) is to be taken times the ratio,
// the actual over the estimated work of the jobs that ended lately
// (scojo_overstate.go). The running and waiting jobs' work within the run
// and the job's own are then times the ratio, as is the capacity in that
// time: their share does not change. The arrivals' does: they are expected
// over a run the ratio times as long, each working the ratio times as long.
func (p *moldPolicy) load(k, size int, T, sMod float64) float64 {
	m := p.m
	work := T * float64(size)
	for _, r := range m.releases() {
		work += float64(r.n()) * math.Min(float64(r.at)/1e9, T)
	}
	for i := range m.jobs {
		if i == k || p.started[i] {
			continue
		}
		c := p.cv[i]
		n := sizeFor(c, sMod, p.lo[i])
		work += float64(n) * math.Min(float64(c.at(n))/1e9, T)
	}
	f := p.ends.ratio()
	work += p.hist.futureWork(m.nowNs, f*T, sMod, f, len(m.hosts)) / f
	return work / (float64(len(m.hosts)) * T)
}

// target is Fig. 1: job k's target size and the predicted load at it. The
// size modifier starts at 1 (every job at N_opt) and is multiplied by
// ideal/load until the load is within the tolerance of the ideal, the
// job's size stops changing, or scojoMaxBad modifiers in a row come no
// closer than the best so far; the size that came closest wins. Sizes are
// kept within each job's bounds (the paper's pseudo-code leaves them out
// "to keep it readable").
func (p *moldPolicy) target(k int) (size int, load float64) {
	c := p.cv[k]
	lo := p.lo[k]
	sMod := 1.0
	size = sizeFor(c, sMod, lo)
	bestDiff, bad := math.Inf(1), 0
	best, bestLoad := size, 0.0
	for range scojoMaxIter {
		T := float64(c.at(size)) / 1e9
		if T <= 0 {
			return size, 0 // a job of no length loads nothing
		}
		l := p.load(k, size, T, sMod)
		if d := math.Abs(l - scojoIdealLoad); d < bestDiff {
			bestDiff, best, bestLoad, bad = d, size, l, 0
		} else if bad++; bad == scojoMaxBad {
			break
		}
		if bestDiff <= scojoTolerance {
			break
		}
		// An empty machine: as large as the job may be.
		next := sMod * scojoIdealLoad / math.Max(l, 1e-9)
		next = math.Min(math.Max(next, 1e-6), 1e6)
		n := sizeFor(c, next, lo)
		if n == size {
			break
		}
		sMod, size = next, n
	}
	return best, bestLoad
}

// startOrWait is Fig. 3: whether job k starts now on fewer hosts than its
// target, or waits for more. The running jobs' predicted ends are walked:
// at each, the job could start on min(target, hosts free then) hosts, and
// the start (now or at an end) whose response time (start plus run time)
// is least wins, ties to the earlier. Starting now needs at least lo hosts
// free. It returns the size and its start offset (0: now), and the best
// alternative: the other choice's size and response offset (alt 0: none).
func (p *moldPolicy) startOrWait(k, target int) (size int, at int64, alt int, altResp int64) {
	m := p.m
	j := &m.jobs[k]
	c := p.cv[k]
	lo := p.lo[k]
	free := m.freeFor(j)
	if free >= target {
		return target, 0, 0, 0
	}
	bestResp, bestAt, bestSize := never, never, 0
	var nowSize int
	var nowResp int64
	if free >= lo {
		nowSize, nowResp = free, c.at(free)
		bestResp, bestAt, bestSize = nowResp, 0, free
	}
	var laterSize int
	var laterResp int64 = never
	cum := free
	rel := m.releases()
	for i := 0; i < len(rel); {
		t := rel[i].at
		for ; i < len(rel) && rel[i].at == t; i++ {
			for _, x := range m.relHosts(rel[i]) {
				if j.allow == nil || j.allow.Has(x) {
					cum++
				}
			}
		}
		n := min(target, cum)
		if n >= lo {
			if r := sat(t, c.at(n)); r < laterResp {
				laterSize, laterResp = n, r
			}
			if r := sat(t, c.at(n)); r < bestResp {
				bestResp, bestAt, bestSize = r, t, n
			}
		}
		if cum >= target {
			break
		}
	}
	if bestAt == 0 {
		return bestSize, 0, laterSize, laterResp
	}
	if bestAt == never { // nothing frees enough hosts (cannot happen for a job that fits the machine)
		return max(lo, min(target, cum)), never, 0, 0
	}
	return bestSize, bestAt, nowSize, nowResp
}
