package policy

import (
	"math"
	"sort"
)

// cprofile is the number of free hosts of each host class over time, from
// now (offset 0) on: a step function, step i holding free[i*c+x] hosts of
// class x over [at[i], at[i+1]); the last step lasts forever. Hosts of one
// class are interchangeable (same cluster, architecture and speed), so
// counts per class are exact for any job that may use a whole class. The
// schedule-based GA (plan.go) decodes its chromosomes in it; conservative
// backfilling plans its reservations in a one-class profile (build1, add1,
// fits1), which counts hosts, not identities: exact for jobs that may use
// any host (any k free hosts will do, and a schedule whose counts fit can
// always be given hosts, assigned in start order).
type cprofile struct {
	c    int
	at   []int64
	free []int32
	// full[x] is a time before which class x has no free host: its
	// earliest-start searches begin there. A hint, advanced by take and
	// reset by give; never past a free host.
	full []int64
	mins []int32      // earliest's scratch
	ev   []classEvent // build1's scratch
}

// classEvent is hosts of a class becoming free at a time.
type classEvent struct {
	at    int64
	class int
}

// build makes the profile of c classes, freeNow[x] hosts of class x free
// now and one more freed at each event (events sorted by time).
func (p *cprofile) build(freeNow []int32, events []classEvent) {
	p.c = len(freeNow)
	p.at = append(p.at[:0], 0)
	p.free = append(p.free[:0], freeNow...)
	p.full = resize(p.full, p.c)
	clear(p.full)
	for _, e := range events {
		last := len(p.at) - 1
		if e.at != p.at[last] {
			p.at = append(p.at, e.at)
			p.free = append(p.free, p.free[last*p.c:(last+1)*p.c]...)
			last++
		}
		p.free[last*p.c+e.class]++
	}
}

// copyFrom makes p a copy of q, reusing p's storage.
func (p *cprofile) copyFrom(q *cprofile) {
	p.c = q.c
	p.at = append(p.at[:0], q.at...)
	p.free = append(p.free[:0], q.free...)
	p.full = append(p.full[:0], q.full...)
}

// step is the index of the step holding offset t (t >= 0).
func (p *cprofile) step(t int64) int {
	return sort.Search(len(p.at), func(i int) bool { return p.at[i] > t }) - 1
}

// split makes a step start at t and returns its index.
func (p *cprofile) split(t int64) int {
	i := p.step(t)
	if p.at[i] == t {
		return i
	}
	i++
	p.at = append(p.at, 0)
	copy(p.at[i+1:], p.at[i:])
	p.at[i] = t
	c := p.c
	p.free = append(p.free, p.free[len(p.free)-c:]...)
	copy(p.free[(i+1)*c:], p.free[i*c:len(p.free)-c])
	copy(p.free[i*c:(i+1)*c], p.free[(i-1)*c:i*c])
	return i
}

// earliest is the first offset t >= from at which n hosts of the classes
// cls stay free over [t, t+d), each class giving the same hosts throughout
// (a job holds its hosts): the sum over cls of each class's least free
// count over the window is at least n. never when no such t exists.
func (p *cprofile) earliest(cls []int, n int32, d, from int64) int64 {
	if len(cls) == 1 {
		return p.earliest1(cls[0], n, d, max(from, p.full[cls[0]]))
	}
	f := p.full[cls[0]]
	for _, k := range cls[1:] {
		f = min(f, p.full[k])
	}
	from = max(from, f)
	c := p.c
	i := p.step(from)
	start := from
	p.mins = resize(p.mins, len(cls))
	mins := p.mins
	for {
		end := sat(start, d)
		for x, k := range cls {
			mins[x] = p.free[i*c+k]
		}
		ok, hard := true, -1
		for j := i; j < len(p.at) && p.at[j] < end; j++ {
			var sum, all int32
			for x, k := range cls {
				f := p.free[j*c+k]
				all += f
				if f < mins[x] {
					mins[x] = f
				}
				sum += mins[x]
			}
			if all < n {
				ok, hard = false, j // no window covering step j fits
				break
			}
			if sum < n {
				ok = false
				break
			}
		}
		if ok {
			return start
		}
		next := i + 1
		if hard >= 0 {
			next = hard + 1
		}
		if next >= len(p.at) {
			return never
		}
		i, start = next, p.at[next]
	}
}

// earliest1 is earliest for one class: a window that fails at step j
// cannot start anywhere before at[j+1], so the scan is linear in the steps.
func (p *cprofile) earliest1(k int, n int32, d, from int64) int64 {
	c, at, free := p.c, p.at, p.free
	i := p.step(from)
	start := from
	for {
		end := sat(start, d)
		j := i
		for j < len(at) && at[j] < end && free[j*c+k] >= n {
			j++
		}
		if j == len(at) || at[j] >= end {
			return start
		}
		if j+1 == len(at) {
			return never // the last step lasts forever and is too small
		}
		i, start = j+1, at[j+1]
	}
}

// take reserves n hosts of the classes cls over [t, t+d), where earliest
// found they fit, from the classes in cls's order (put the slowest first to
// keep fast hosts for others), and writes the count taken from each class
// into got (indexed like cls).
func (p *cprofile) take(cls []int, n int32, t, d int64, got []int32) {
	end := sat(t, d)
	left := n
	for x, k := range cls {
		m := int32(math.MaxInt32)
		for i := p.step(t); i < len(p.at) && p.at[i] < end; i++ {
			m = min(m, p.free[i*p.c+k])
		}
		got[x] = min(m, left)
		left -= got[x]
	}
	p.takeCounts(cls, got, t, d)
}

// fitsCounts reports whether got[x] hosts of each class cls[x] stay free
// over [t, t+d).
func (p *cprofile) fitsCounts(cls []int, got []int32, t, d int64) bool {
	end := sat(t, d)
	for i := p.step(t); i < len(p.at) && p.at[i] < end; i++ {
		for x, k := range cls {
			if p.free[i*p.c+k] < got[x] {
				return false
			}
		}
	}
	return true
}

// takeCounts reserves got[x] hosts of each class cls[x] over [t, t+d),
// where fitsCounts found them free.
func (p *cprofile) takeCounts(cls []int, got []int32, t, d int64) {
	p.addCounts(cls, got, -1, t, d)
}

// give returns got[x] hosts of class cls[x] over [t, t+d), taken by take.
func (p *cprofile) give(cls []int, got []int32, t, d int64) {
	p.addCounts(cls, got, 1, t, d)
}

// addCounts adds sign·got[x] free hosts of each class cls[x] over
// [t, t+d), and keeps the full hints: a taking may advance one, a return
// moves it back to t.
func (p *cprofile) addCounts(cls []int, got []int32, sign int32, t, d int64) {
	c := p.c
	lo := p.split(t)
	hi := len(p.at)
	if e := sat(t, d); e != never {
		hi = p.split(e)
	}
	for x, k := range cls {
		g := got[x]
		if g == 0 {
			continue
		}
		for j := lo; j < hi; j++ {
			p.free[j*c+k] += sign * g
		}
		switch {
		case sign > 0:
			p.full[k] = min(p.full[k], t)
		case t <= p.full[k]:
			p.advance(k)
		}
	}
}

// advance moves full[k] past the steps, from it on, where class k has no
// free host.
func (p *cprofile) advance(k int) {
	j := p.step(p.full[k])
	for j+1 < len(p.at) && p.free[j*p.c+k] == 0 {
		j++
	}
	if p.free[j*p.c+k] == 0 {
		return // the last step lasts forever: keep the hint at its start
	}
	p.full[k] = max(p.full[k], p.at[j])
}

// sat is a+b for non-negative offsets, saturating at never.
func sat(a, b int64) int64 {
	if a > never-b {
		return never
	}
	return a + b
}

// The one-class view, for conservative backfilling: every host in class 0.

// class0 is the class list of a one-class profile.
var class0 = []int{0}

// build1 makes a one-class profile: free hosts free now, and each release's
// hosts freed at its time (releases sorted by time).
func (p *cprofile) build1(free int, rel []release) {
	p.ev = p.ev[:0]
	for _, r := range rel {
		for range r.n() {
			p.ev = append(p.ev, classEvent{at: r.at, class: 0})
		}
	}
	p.build([]int32{int32(free)}, p.ev)
}

// add1 adds delta free hosts over [t, t+d) to a one-class profile (a
// reservation is add1(-n), its removal add1(+n)).
func (p *cprofile) add1(delta int, t, d int64) {
	if delta < 0 {
		p.addCounts(class0, []int32{int32(-delta)}, -1, t, d)
	} else if delta > 0 {
		p.addCounts(class0, []int32{int32(delta)}, 1, t, d)
	}
}

// fits1 reports whether n hosts of a one-class profile stay free over
// [t, t+d).
func (p *cprofile) fits1(n int, t, d int64) bool {
	return p.fitsCounts(class0, []int32{int32(n)}, t, d)
}
