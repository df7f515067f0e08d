package ga

import (
	"fmt"
	"math"
	"unsafe"
)

// RuntimeFunc predicts the run time, in seconds, of one task on exactly the
// given hosts (ascending host indexes of the Problem). It must be
// deterministic for a given host set; errors are the caller's business (an
// adapter returns a fallback estimate, or +Inf for "cannot run there").
type RuntimeFunc func(hosts []int) float64

// Task is one job to place. A task keeps a memo of its run times by host set,
// in front of whatever cache stands behind Runtime, because the optimisers ask
// the same questions thousands of times a second. The memo is keyed by host
// index, so a task must be rebuilt (or Forget called) when the Problem's host
// list changes.
type Task struct {
	ID       string
	Min, Max int         // allowed host count, 1 <= Min <= Max (1..1: sequential)
	Allowed  Bits        // hosts the task may use; nil = every host
	Runtime  RuntimeFunc // predicted seconds on a host set
	Arrival  float64     // seconds relative to now (<= 0 for queued tasks); used by FIFO

	memo1 map[uint64]float64 // host sets of at most 64 hosts
	memoN map[string]float64 // larger machines: the words of the set as a string
	buf   []int
}

// Forget drops the task's memoised run times.
func (t *Task) Forget() { t.memo1, t.memoN = nil, nil }

// Time returns the task's run time on host set b, memoised.
func (t *Task) Time(b Bits) float64 {
	if len(b) == 1 {
		if v, ok := t.memo1[b[0]]; ok {
			return v
		}
		v := t.call(b)
		if t.memo1 == nil {
			t.memo1 = make(map[uint64]float64, 64)
		}
		t.memo1[b[0]] = v
		return v
	}
	key := unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(b))), len(b)*8)
	if v, ok := t.memoN[key]; ok {
		return v
	}
	v := t.call(b)
	if t.memoN == nil {
		t.memoN = make(map[string]float64, 64)
	}
	t.memoN[string([]byte(key))] = v
	return v
}

func (t *Task) call(b Bits) float64 {
	t.buf = b.Hosts(t.buf[:0])
	v := t.Runtime(t.buf)
	if math.IsNaN(v) || v < 0 {
		v = math.Inf(1)
	}
	return v
}

// Problem is one packing instance: the hosts (by index 0..Hosts-1), the time
// at which each host's running work ends (Base, seconds from now; nil means
// every host is free now) and the tasks to place.
type Problem struct {
	Hosts int
	Base  []float64
	Tasks []*Task
	// First lists tasks (by index) that every schedule places before all
	// others, in this order, wherever a string puts them: a live scheduler's
	// bound on overtaking (a job overtaken too often goes first). The
	// optimisers keep their strings so (see Lead), so that they search the
	// schedules that will be dispatched rather than ones a later rewrite
	// would change. Usually empty.
	First []int
}

// Lead moves p.First to the front of c's order, in First's order, keeping
// the relative order of the other tasks. Evaluation and alignment call it,
// so every string an optimiser has evaluated already leads with them.
func (p *Problem) Lead(c *Chromosome) {
	for k, j := range p.First {
		if c.Order[k] == j {
			continue
		}
		at := k + 1
		for c.Order[at] != j {
			at++
		}
		copy(c.Order[k+1:at+1], c.Order[k:at])
		c.Order[k] = j
	}
}

// Validate checks the problem's shape and every task's host-count range
// against the hosts it may use.
func (p *Problem) Validate() error {
	if p.Hosts <= 0 {
		return fmt.Errorf("ga: problem has %d hosts", p.Hosts)
	}
	if p.Base != nil && len(p.Base) != p.Hosts {
		return fmt.Errorf("ga: base has %d entries for %d hosts", len(p.Base), p.Hosts)
	}
	seen := make(map[int]bool, len(p.First))
	for _, j := range p.First {
		if j < 0 || j >= len(p.Tasks) || seen[j] {
			return fmt.Errorf("ga: First holds %d, want distinct task indexes below %d", j, len(p.Tasks))
		}
		seen[j] = true
	}
	words := (p.Hosts + 63) / 64
	for i, t := range p.Tasks {
		if t == nil || t.Runtime == nil {
			return fmt.Errorf("ga: task %d has no runtime function", i)
		}
		avail := p.Hosts
		if t.Allowed != nil {
			if len(t.Allowed) != words {
				return fmt.Errorf("ga: task %q: allowed set sized for %d words, want %d", t.ID, len(t.Allowed), words)
			}
			avail = t.Allowed.Count()
		}
		if t.Min < 1 || t.Max < t.Min {
			return fmt.Errorf("ga: task %q: host range %d..%d is empty", t.ID, t.Min, t.Max)
		}
		if t.Min > avail {
			return fmt.Errorf("ga: task %q needs at least %d hosts, %d allowed", t.ID, t.Min, avail)
		}
	}
	return nil
}

// MaxHosts is the most hosts task t can use in p.
func (p *Problem) MaxHosts(t *Task) int {
	n := p.Hosts
	if t.Allowed != nil {
		n = t.Allowed.Count()
	}
	if t.Max < n {
		n = t.Max
	}
	return n
}

// Words is the number of 64-bit words in a host set of p.
func (p *Problem) Words() int { return (p.Hosts + 63) / 64 }

// base returns host h's base time.
func (p *Problem) base(h int) float64 {
	if p.Base == nil {
		return 0
	}
	return p.Base[h]
}
