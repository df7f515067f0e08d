package ga

import (
	"math"
	"math/bits"
)

// Schedule is a decoded chromosome: when each task starts and ends, and when
// each host is first used and last free. Times are seconds from now.
type Schedule struct {
	Start, End []float64 // per task index
	First      []float64 // per host: start of its first task, +Inf if none
	Free       []float64 // per host: end of its last work (base included)
	Makespan   float64   // w: latest end of any task or base
}

// Decode list-schedules c on p into s (reusing s's buffers): tasks are taken
// in string order, and each starts when all its hosts are free (no
// backfilling into earlier holes, as in the paper). c must be legal
// (see Repair); a task whose mapping row is empty is placed on the host that
// is free first, so a malformed string still decodes.
func Decode(p *Problem, c *Chromosome, s *Schedule) {
	n, m := len(p.Tasks), p.Hosts
	s.Start = resize(s.Start, n)
	s.End = resize(s.End, n)
	s.First = resize(s.First, m)
	s.Free = resize(s.Free, m)
	w := 0.0
	for h := 0; h < m; h++ {
		b := p.base(h)
		s.Free[h] = b
		s.First[h] = math.Inf(1)
		if b > w {
			w = b
		}
	}
	for _, j := range c.Order {
		row := c.Map[j]
		if row.Count() == 0 {
			row = earliest(s.Free, p.Tasks[j], m)
		}
		start := 0.0
		for i, word := range row {
			for word != 0 {
				h := i*64 + bits.TrailingZeros64(word)
				if f := s.Free[h]; f > start {
					start = f
				}
				word &= word - 1
			}
		}
		end := start + p.Tasks[j].Time(row)
		s.Start[j], s.End[j] = start, end
		for i, word := range row {
			for word != 0 {
				h := i*64 + bits.TrailingZeros64(word)
				s.Free[h] = end
				if s.First[h] > start {
					s.First[h] = start
				}
				word &= word - 1
			}
		}
		if end > w {
			w = end
		}
	}
	s.Makespan = w
}

// earliest returns a one-host set on the allowed host that is free first.
func earliest(free []float64, t *Task, m int) Bits {
	best := -1
	for h := 0; h < m; h++ {
		if t.Allowed != nil && !t.Allowed.Has(h) {
			continue
		}
		if best < 0 || free[h] < free[best] {
			best = h
		}
	}
	b := NewBits(m)
	if best >= 0 {
		b.Set(best)
	}
	return b
}

func resize(v []float64, n int) []float64 {
	if cap(v) < n {
		return make([]float64, n)
	}
	return v[:n]
}

// meanStartFraction is the tasks' mean start time over the makespan, in
// [0, 1]; 0 without tasks or a finite makespan.
func (s *Schedule) meanStartFraction() float64 {
	if len(s.Start) == 0 || !(s.Makespan > 0) || math.IsInf(s.Makespan, 1) {
		return 0
	}
	sum := 0.0
	for _, x := range s.Start {
		sum += x
	}
	return sum / float64(len(s.Start)) / s.Makespan
}
