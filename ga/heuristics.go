package ga

import (
	"cmp"
	"fmt"
	"math"
	"math/rand"
	"slices"
)

// The list heuristics below are baselines on the GA's own coding: each
// returns a chromosome whose Decode is exactly the heuristic's schedule. They
// place tasks one at a time, in the order they decide, each starting when all
// of its hosts are free (no insertion into earlier holes), which is what
// Decode replays when the ordering part lists the tasks in placement order.
//
// Ties are broken by the lowest task or host index throughout, so results do
// not depend on map order or sort stability.

// listState is the host availability a heuristic builds its schedule on. It
// applies a placement exactly as Decode will replay it: same start (the
// latest free time of the hosts), same end (start plus the memoised run
// time), same update of the hosts' free times.
type listState struct {
	p    *Problem
	free []float64
	c    *Chromosome
	span float64 // makespan so far, base included, as Decode counts it
}

func newListState(p *Problem) *listState {
	s := &listState{
		p:    p,
		free: make([]float64, p.Hosts),
		c:    &Chromosome{Order: make([]int, 0, len(p.Tasks)), Map: make([]Bits, len(p.Tasks))},
	}
	for h := range s.free {
		s.free[h] = p.base(h)
		s.span = math.Max(s.span, s.free[h])
	}
	return s
}

// chromosome unwraps a heuristic's result for the exported functions; the
// state itself (with its makespan) is what the tests compare with Decode.
func chromosome(s *listState, err error) (*Chromosome, error) {
	if err != nil {
		return nil, err
	}
	return s.c, nil
}

// finish is when task j would end on hosts b.
func (s *listState) finish(j int, b Bits) float64 {
	start := 0.0
	for _, h := range b.Hosts(nil) {
		start = math.Max(start, s.free[h])
	}
	return start + s.p.Tasks[j].Time(b)
}

// place appends task j to the ordering part on hosts b (which it keeps).
func (s *listState) place(j int, b Bits) {
	end := s.finish(j, b)
	for _, h := range b.Hosts(nil) {
		s.free[h] = end
	}
	s.span = math.Max(s.span, end)
	s.c.Order = append(s.c.Order, j)
	s.c.Map[j] = b
}

// allowedHosts lists the hosts task t may use, ascending.
func allowedHosts(p *Problem, t *Task) []int {
	if t.Allowed == nil {
		hs := make([]int, p.Hosts)
		for h := range hs {
			hs[h] = h
		}
		return hs
	}
	return t.Allowed.Hosts(nil)
}

// sortHostsBy sorts hosts by key, ties by host index.
func sortHostsBy(hosts []int, key func(h int) float64) {
	slices.SortFunc(hosts, func(a, b int) int {
		if c := cmp.Compare(key(a), key(b)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
}

// singleHost returns the one-host set {h}.
func singleHost(m, h int) Bits {
	b := NewBits(m)
	b.Set(h)
	return b
}

// speedOrder lists task t's allowed hosts fastest first, by the task's
// one-host run time (ties by index). Speed is only measurable that way for a
// task that may run on one host: for a task with Min > 1 the hosts are
// returned in index order, which is right for homogeneous hosts and an
// arbitrary (but fixed) choice otherwise.
func speedOrder(p *Problem, t *Task) []int {
	hs := allowedHosts(p, t)
	if t.Min == 1 {
		one := make([]float64, p.Hosts)
		for _, h := range hs {
			one[h] = t.Time(singleHost(p.Hosts, h))
		}
		sortHostsBy(hs, func(h int) float64 { return one[h] })
	}
	return hs
}

// bestPrefix returns the count k in [t.Min, hi] for which task t runs
// fastest on hosts[:k], and that run time. Ties go to the smaller count,
// which does the same job with fewer hosts.
func bestPrefix(p *Problem, t *Task, hosts []int, hi int) (int, float64) {
	b := NewBits(p.Hosts)
	bestK, bestT := 0, math.Inf(1)
	for k := 1; k <= hi; k++ {
		b.Set(hosts[k-1])
		if k < t.Min {
			continue
		}
		if d := t.Time(b); d < bestT || bestK == 0 {
			bestK, bestT = k, d
		}
	}
	return bestK, bestT
}

// PeakHosts is task t's peak-speedup host count in p: the count in
// [t.Min, p.MaxHosts(t)] for which the task runs fastest, measured on its
// fastest hosts (see speedOrder). For the paper's test model
// t(i) = C_cpu/i + C_com·i it is the integer nearest sqrt(C_cpu/C_com)
// (clamped to the range). Random search places every task on this many
// random hosts, as the paper's random search does.
func PeakHosts(p *Problem, t *Task) int {
	k, _ := bestPrefix(p, t, speedOrder(p, t), p.MaxHosts(t))
	return k
}

// hostSet returns the set of the given hosts.
func hostSet(m int, hosts []int) Bits {
	b := NewBits(m)
	for _, h := range hosts {
		b.Set(h)
	}
	return b
}

// FIFO places the tasks first come, first served: by Arrival, ties by task
// index, each on the hosts that are free earliest (ties by index) and with
// its peak-speedup count on those hosts, that is, the count k in
// [Min, MaxHosts] that minimises the task's run time on the k earliest-free
// hosts. The count is measured on the hosts the task will actually use, not
// on its fastest hosts, so that on heterogeneous hosts FIFO does not pick a
// count whose speedup it then fails to get. FIFO is the paper's Table 1
// baseline: it never looks ahead, so a long task can hold back the queue.
func FIFO(p *Problem) (*Chromosome, error) { return chromosome(fifo(p)) }

func fifo(p *Problem) (*listState, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	order := make([]int, len(p.Tasks))
	for j := range order {
		order[j] = j
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(p.Tasks[a].Arrival, p.Tasks[b].Arrival); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	s := newListState(p)
	for _, j := range order {
		t := p.Tasks[j]
		hosts := allowedHosts(p, t)
		sortHostsBy(hosts, func(h int) float64 { return s.free[h] })
		k, _ := bestPrefix(p, t, hosts, p.MaxHosts(t))
		s.place(j, hostSet(p.Hosts, hosts[:k]))
	}
	return s, nil
}

// Greedy places the longest task first and gives each task the host count
// and hosts on which it finishes earliest.
//
// A task's length is its shortest run time over its counts on its fastest
// hosts (see speedOrder); ties by task index. For each task, Greedy ranks the
// allowed hosts three ways — earliest free, earliest one-host completion
// (free time plus the task's time on that host alone) and fastest — and, for
// every count k in [Min, MaxHosts], tries the first k hosts of each ranking,
// keeping the candidate that finishes first (ties: fewer hosts, then the
// ranking listed first). On homogeneous hosts the first ranking is the one
// that matters; on heterogeneous hosts the other two find a fast machine
// that is free a little later, and for one-host tasks the second is exactly
// the minimum-completion-time choice. Trying every subset is exponential;
// this costs O(m log m + m) run-time look-ups per task and O(n·m²) in all.
// The two speed-based rankings need one-host run times and are skipped for
// tasks with Min > 1.
func Greedy(p *Problem) (*Chromosome, error) { return chromosome(greedy(p)) }

func greedy(p *Problem) (*listState, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	n, m := len(p.Tasks), p.Hosts
	length := make([]float64, n)
	order := make([]int, n)
	for j, t := range p.Tasks {
		order[j] = j
		_, length[j] = bestPrefix(p, t, speedOrder(p, t), p.MaxHosts(t))
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(length[b], length[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	s := newListState(p)
	one := make([]float64, m)
	for _, j := range order {
		t := p.Tasks[j]
		hi := p.MaxHosts(t)
		rankings := [][]int{allowedHosts(p, t)}
		sortHostsBy(rankings[0], func(h int) float64 { return s.free[h] })
		if t.Min == 1 {
			for _, h := range rankings[0] {
				one[h] = t.Time(singleHost(m, h))
			}
			done := slices.Clone(rankings[0])
			sortHostsBy(done, func(h int) float64 { return s.free[h] + one[h] })
			fast := slices.Clone(rankings[0])
			sortHostsBy(fast, func(h int) float64 { return one[h] })
			rankings = append(rankings, done, fast)
		}
		var best []int
		bestEnd := math.Inf(1)
		b := NewBits(m)
		for _, hosts := range rankings {
			b.Reset()
			start := 0.0
			for k := 1; k <= hi; k++ {
				h := hosts[k-1]
				b.Set(h)
				start = math.Max(start, s.free[h])
				if k < t.Min {
					continue
				}
				end := start + t.Time(b)
				if best == nil || end < bestEnd || (end == bestEnd && k < len(best)) {
					best, bestEnd = hosts[:k], end
				}
			}
		}
		s.place(j, hostSet(m, best))
	}
	return s, nil
}

// oneHostETC returns the ETC view of a problem of one-host tasks:
// etc[j][h] is task j's run time on host h alone, NaN where h is not
// allowed (a run time may itself be +Inf: "cannot run there"). It is an error for any task to need other than exactly one host,
// since Min-min and its relatives choose a machine, not a host set.
func oneHostETC(p *Problem, name string) ([][]float64, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	etc := make([][]float64, len(p.Tasks))
	for j, t := range p.Tasks {
		if t.Min != 1 || t.Max != 1 {
			return nil, fmt.Errorf("ga: %s: task %q needs %d..%d hosts; it handles one-host tasks only", name, t.ID, t.Min, t.Max)
		}
		etc[j] = make([]float64, p.Hosts)
		for h := range etc[j] {
			etc[j][h] = math.NaN()
			if t.Allowed == nil || t.Allowed.Has(h) {
				etc[j][h] = t.Time(singleHost(p.Hosts, h))
			}
		}
	}
	return etc, nil
}

// minCompletion returns the host with the smallest completion time
// ready[h] + etc[h] (ties by index), that time, and the second smallest
// completion time over the other hosts (+Inf if there is none). Hosts
// marked NaN are not allowed; at least one host must be.
func minCompletion(etc, ready []float64) (int, float64, float64) {
	best, ct1, ct2 := -1, math.Inf(1), math.Inf(1)
	for h, e := range etc {
		if math.IsNaN(e) {
			continue
		}
		ct := ready[h] + e
		switch {
		case best < 0 || ct < ct1:
			ct2 = ct1
			best, ct1 = h, ct
		case ct < ct2:
			ct2 = ct
		}
	}
	return best, ct1, ct2
}

// minMax is Min-min (pickMax false) and Max-min (pickMax true), following
// Braun et al. 2001: while tasks remain, find each task's minimum completion
// time over the machines; choose the task whose minimum is smallest
// (Min-min) or largest (Max-min); assign it to that machine and update the
// machine's ready time. Only the tasks whose best machine was the one just
// loaded need a new minimum, since ready times only grow and a task's other
// completion times are unchanged.
func minMax(p *Problem, name string, pickMax bool) (*listState, error) {
	etc, err := oneHostETC(p, name)
	if err != nil {
		return nil, err
	}
	s := newListState(p)
	n := len(p.Tasks)
	bestH := make([]int, n)
	bestCT := make([]float64, n)
	left := make([]int, n)
	for j := range left {
		left[j] = j
		bestH[j], bestCT[j], _ = minCompletion(etc[j], s.free)
	}
	for len(left) > 0 {
		pick := 0
		for i, j := range left[1:] {
			if (!pickMax && bestCT[j] < bestCT[left[pick]]) || (pickMax && bestCT[j] > bestCT[left[pick]]) {
				pick = i + 1
			}
		}
		j := left[pick]
		left = slices.Delete(left, pick, pick+1)
		h := bestH[j]
		s.place(j, singleHost(p.Hosts, h))
		for _, k := range left {
			if bestH[k] == h {
				bestH[k], bestCT[k], _ = minCompletion(etc[k], s.free)
			}
		}
	}
	return s, nil
}

// MinMin is the Min-min heuristic of Braun et al. 2001 for one-host tasks
// on heterogeneous hosts (completion time = host ready time + ETC). It
// returns an error if any task is not one-host. Host ready times start at
// the problem's base.
func MinMin(p *Problem) (*Chromosome, error) { return chromosome(minMax(p, "min-min", false)) }

// DualResponse maps one-host tasks as the LP relaxation's dual suggests:
// each task on the host h minimising w_h·e_th, its best response to the
// host weights w (LPResult.Weights, one per host; ties to the shorter run,
// then the lower index). At the weights where LPBound found its bound,
// this is the integral assignment closest to the LP's fractional optimum:
// every task the LP leaves whole on one host is there (barring ties), and
// only the few tasks the LP splits are placed by guess. Its loads can be far
// from balanced (the split tasks all go to one side of their split), but a
// descent from it ends in the LP optimum's basin: on generated ETC
// instances, an iterated local search from it ended 2 s later at 1.0056 of
// the LP bound on average against 1.0171 from Min-min (docs/memetic.md).
// A host of weight 0 costs nothing, so every task that may run there goes
// there; the LP's weights are 0 only on hosts its optimum leaves below the
// makespan. Tasks are placed in index order. It returns an error if any
// task is not one-host, or w has not one finite, non-negative weight per
// host.
func DualResponse(p *Problem, w []float64) (*Chromosome, error) {
	etc, err := oneHostETC(p, "dual response")
	if err != nil {
		return nil, err
	}
	if len(w) != p.Hosts {
		return nil, fmt.Errorf("ga: dual response: %d weights for %d hosts", len(w), p.Hosts)
	}
	for h, v := range w {
		if !(v >= 0) || math.IsInf(v, 1) {
			return nil, fmt.Errorf("ga: dual response: host %d's weight is %g; want a finite weight ≥ 0", h, v)
		}
	}
	s := newListState(p)
	for j, row := range etc {
		best, bestCost := -1, math.Inf(1)
		for h, e := range row {
			if math.IsNaN(e) || math.IsInf(e, 1) {
				continue
			}
			c := w[h] * e
			if best < 0 || c < bestCost || c == bestCost && e < row[best] {
				best, bestCost = h, c
			}
		}
		if best < 0 { // no finite run time: any allowed host
			for h, e := range row {
				if !math.IsNaN(e) {
					best = h
					break
				}
			}
		}
		s.place(j, singleHost(p.Hosts, best))
	}
	return s.c, nil
}

// dualJitter is the relative spread of the weights of DualResponses' other
// responses. On eight of the harder generated instances (u_i_hihi, u_i_lohi,
// u_s_lohi, u_c_hihi, seeds 1 and 3, 10 s each), the memetic GA seeded with
// Min-min and one dual response ended 1.0072 of the LP bound on average;
// with 3 more at a spread of 0.002, 1.0058; at 0.01, 1.0059; with 6 more at
// 0.002, 1.0055 (docs/memetic.md).
const dualJitter = 0.002

// DualResponses returns k dual responses for a population: the first at w
// (DualResponse), each other at w with every weight multiplied by its own
// factor drawn uniformly from [1−0.002, 1+0.002]. The jitter resolves the
// LP's near-ties, the tasks it splits or nearly splits, differently each
// time, so the responses lie in neighbouring basins rather than one.
func DualResponses(p *Problem, w []float64, k int, rng *rand.Rand) ([]*Chromosome, error) {
	if k < 0 {
		return nil, fmt.Errorf("ga: %d dual responses", k)
	}
	out := make([]*Chromosome, 0, k)
	v := slices.Clone(w)
	for i := range k {
		if i > 0 {
			for h := range v {
				v[h] = w[h] * (1 + dualJitter*(2*rng.Float64()-1))
			}
		}
		c, err := DualResponse(p, v)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// MaxMin is the Max-min heuristic of Braun et al. 2001: like MinMin, but the
// task whose minimum completion time is largest goes first, so long tasks
// are not left to the end.
func MaxMin(p *Problem) (*Chromosome, error) { return chromosome(minMax(p, "max-min", true)) }

// Sufferage is the batch-mode Sufferage heuristic (Maheswaran et al. 1999,
// used beside Braun's heuristics) for one-host tasks. In each pass over the
// unassigned tasks (in index order), with ready times frozen for the pass, a
// task's sufferage is its second-best completion time minus its best: how
// much it loses if it does not get its best machine. The task claims its
// best machine if the machine is unclaimed in this pass, or takes it from a
// claimant of strictly smaller sufferage (who stays unassigned). At the end
// of the pass the claims are assigned, in host order, and ready times
// updated. A task allowed on a single host suffers +Inf.
func Sufferage(p *Problem) (*Chromosome, error) { return chromosome(sufferage(p)) }

func sufferage(p *Problem) (*listState, error) {
	etc, err := oneHostETC(p, "sufferage")
	if err != nil {
		return nil, err
	}
	s := newListState(p)
	m := p.Hosts
	claim := make([]int, m)
	claimSuff := make([]float64, m)
	assigned := make([]bool, len(p.Tasks))
	for left := len(p.Tasks); left > 0; {
		for h := range claim {
			claim[h] = -1
		}
		for j := range p.Tasks {
			if assigned[j] {
				continue
			}
			h, ct1, ct2 := minCompletion(etc[j], s.free)
			suff := ct2 - ct1
			if math.IsInf(ct2, 1) {
				suff = math.Inf(1) // also when ct1 is +Inf: a lone host
			}
			if claim[h] < 0 || claimSuff[h] < suff {
				claim[h], claimSuff[h] = j, suff
			}
		}
		for h, j := range claim {
			if j >= 0 {
				s.place(j, singleHost(m, h))
				assigned[j] = true
				left--
			}
		}
	}
	return s, nil
}
