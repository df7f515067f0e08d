package policy

import "sort"

// profile is the number of free hosts over time: a step function from now
// (offset 0) on. Step i holds free[i] hosts over [at[i], at[i+1]); the last
// step lasts forever. It knows counts, not host identities, which is exact
// for jobs that may use any host (any k free hosts will do, and a schedule
// whose counts fit can always be given hosts: assign them in start order).
// Conservative backfilling plans in it; its buffers are reused across
// calls.
type profile struct {
	at   []int64
	free []int
}

// reset makes the profile total free hosts from now on.
func (p *profile) reset(total int) {
	p.at = append(p.at[:0], 0)
	p.free = append(p.free[:0], total)
}

// build makes the profile of a machine whose free-now count is free and
// whose busy hosts are released as rel says (sorted by time).
func (p *profile) build(free int, rel []release) {
	p.reset(free)
	for _, r := range rel {
		last := len(p.at) - 1
		if r.at == p.at[last] {
			p.free[last] += r.n()
			continue
		}
		p.at = append(p.at, r.at)
		p.free = append(p.free, p.free[last]+r.n())
	}
}

// step is the index of the step holding offset t (t >= 0).
func (p *profile) step(t int64) int {
	return sort.Search(len(p.at), func(i int) bool { return p.at[i] > t }) - 1
}

// earliest is the first offset t >= from at which n hosts stay free over
// [t, t+d), or never. A window that fails at step j cannot start anywhere
// before at[j+1] (any such window also covers step j), so the scan is
// linear in the steps.
func (p *profile) earliest(n int, d, from int64) int64 {
	i := p.step(from)
	start := from
	for {
		j := i
		for j < len(p.at) && p.at[j] < sat(start, d) && p.free[j] >= n {
			j++
		}
		if j == len(p.at) || p.at[j] >= sat(start, d) {
			return start
		}
		if j+1 == len(p.at) {
			return never // the last step lasts forever and is too small
		}
		i, start = j+1, p.at[j+1]
	}
}

// fits reports whether n hosts stay free over [t, t+d).
func (p *profile) fits(n int, t, d int64) bool {
	for i := p.step(t); i < len(p.at) && p.at[i] < sat(t, d); i++ {
		if p.free[i] < n {
			return false
		}
	}
	return true
}

// add adds delta free hosts over [t, t+d) (a reservation is add(-n), its
// removal add(+n)).
func (p *profile) add(delta int, t, d int64) {
	i := p.split(t)
	e := p.split(sat(t, d))
	for ; i < e; i++ {
		p.free[i] += delta
	}
}

// split makes a step start at t and returns its index.
func (p *profile) split(t int64) int {
	i := p.step(t)
	if p.at[i] == t {
		return i
	}
	i++
	p.at = append(p.at, 0)
	p.free = append(p.free, 0)
	copy(p.at[i+1:], p.at[i:])
	copy(p.free[i+1:], p.free[i:])
	p.at[i] = t
	p.free[i] = p.free[i-1]
	return i
}

// sat is a+b for non-negative offsets, saturating at never.
func sat(a, b int64) int64 {
	if a > never-b {
		return never
	}
	return a + b
}
