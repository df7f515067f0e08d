package ga

import (
	"cmp"
	"slices"
)

// survive is the GA's replacement (msched's addition, see GA): the next
// population is the best N distinct individuals among the current
// population (pop) and the offspring just bred (spare, whose slot 0 is not
// used), a (μ+λ) truncation. Equal costs rank offspring first, so that the
// population moves across plateaus of equal cost (frequent under MS, where
// only the critical path counts), and a copy of a better or equal individual
// is dropped (an exact duplicate: same order and map), so that the
// population does not fill up with clones of the best. Only when fewer than
// N distinct individuals exist are duplicates kept, best first. The best
// individual ends in slot 0.
func (g *GA) survive() {
	cur, nxt := g.pop.Individuals, g.spare
	n := len(cur)
	fit := func(c int) float64 {
		if c < n {
			return cur[c].Fitness
		}
		return nxt[c-n].Fitness
	}
	gen := func(c int) *Chromosome {
		if c < n {
			return &g.gs[c].Chromosome
		}
		return &g.sgs[c-n].Chromosome
	}
	g.cand = g.cand[:0]
	for c := 0; c < 2*n; c++ {
		if c != n {
			g.cand = append(g.cand, c)
			g.hashed[c] = false
		}
	}
	// Best first; on a tie the offspring first (so that the population can
	// drift across plateaus of equal cost), then by index.
	slices.SortFunc(g.cand, func(a, b int) int {
		if c := cmp.Compare(fit(a), fit(b)); c != 0 {
			return c
		}
		return cmp.Compare(b, a)
	})
	g.keep = g.keep[:0]
	for k, c := range g.cand {
		if len(g.keep) == n {
			break
		}
		dup := false
		for i := len(g.keep) - 1; i >= 0 && fit(g.keep[i]) == fit(c); i-- {
			if g.hashOf(g.keep[i], gen) == g.hashOf(c, gen) && sameChrom(gen(g.keep[i]), gen(c)) {
				dup = true
				break
			}
		}
		if dup {
			g.cand[k] = -1 - c
			continue
		}
		g.keep = append(g.keep, c)
	}
	// Too few distinct: fill up with the duplicates, best first.
	for _, c := range g.cand {
		if len(g.keep) == n {
			break
		}
		if c < 0 {
			g.keep = append(g.keep, -1-c)
		}
	}
	for i, c := range g.keep {
		g.tgs[i].copyFrom(gen(c))
		g.third[i].Fitness, g.third[i].Evaluated = fit(c), true
	}
	g.pop.Individuals, g.spare, g.third = g.third, cur, nxt
	g.gs, g.sgs, g.tgs = g.tgs, g.gs, g.sgs
	g.best, g.bestCost = 0, g.pop.Individuals[0].Fitness
}

// hashOf is candidate c's hash, computed the first time it is asked for:
// only candidates of equal cost are compared, so most are never hashed.
func (g *GA) hashOf(c int, gen func(int) *Chromosome) uint64 {
	if !g.hashed[c] {
		g.hash[c], g.hashed[c] = chromHash(gen(c)), true
	}
	return g.hash[c]
}

// chromHash is an FNV-1a-style hash of c's order and map words.
func chromHash(c *Chromosome) uint64 {
	h := uint64(14695981039346656037)
	for _, v := range c.Order {
		h = (h ^ uint64(v)) * 1099511628211
	}
	for _, b := range c.Map {
		for _, w := range b {
			h = (h ^ w) * 1099511628211
		}
	}
	return h
}

// sameChrom reports whether a and b, of one problem, are the same string.
func sameChrom(a, b *Chromosome) bool {
	for i := range a.Order {
		if a.Order[i] != b.Order[i] {
			return false
		}
	}
	for j := range a.Map {
		if !a.Map[j].Equal(b.Map[j]) {
			return false
		}
	}
	return true
}
