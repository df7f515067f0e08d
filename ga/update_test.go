package ga

import (
	"context"
	"math"
	"math/rand"
	"slices"
	"testing"
)

func TestGA_UpdateKeepsTheBest(t *testing.T) {
	rebuild := func(ts []*Task) []*Task { // same IDs, new pointers, no memo
		out := make([]*Task, len(ts))
		for i, t := range ts {
			c := *t
			c.Forget()
			out[i] = &c
		}
		return out
	}
	cases := []struct {
		name string
		next func(p *Problem) *Problem
	}{
		{"remove two", func(p *Problem) *Problem {
			ts := append(append([]*Task(nil), p.Tasks[:3]...), p.Tasks[4:7]...)
			return &Problem{Hosts: p.Hosts, Tasks: append(ts, p.Tasks[8:]...)}
		}},
		{"add two", func(p *Problem) *Problem {
			return &Problem{Hosts: p.Hosts, Tasks: append(append([]*Task(nil), p.Tasks...),
				msEq2Task("new0", 500, 3, 1, 16), msEq2Task("new1", 900, 1, 2, 4))}
		}},
		{"remove, add and reorder", func(p *Problem) *Problem {
			ts := []*Task{msEq2Task("new0", 500, 3, 1, 16)}
			for j := len(p.Tasks) - 1; j >= 0; j -= 1 + j%2 {
				ts = append(ts, p.Tasks[j])
			}
			return &Problem{Hosts: p.Hosts, Tasks: append(ts, msEq2Task("new1", 700, 5, 1, 3))}
		}},
		{"rebuilt tasks matched by ID", func(p *Problem) *Problem {
			return &Problem{Hosts: p.Hosts, Tasks: rebuild(p.Tasks[1:])}
		}},
		{"running work changes the base", func(p *Problem) *Problem {
			base := make([]float64, p.Hosts)
			for h := range base {
				base[h] = float64(h%5) * 40
			}
			return &Problem{Hosts: p.Hosts, Base: base, Tasks: p.Tasks}
		}},
		{"a task may use fewer hosts", func(p *Problem) *Problem {
			ts := rebuild(p.Tasks)
			ts[0].Allowed = msBits(p.Hosts, 0, 1)
			ts[0].Max = 2
			return &Problem{Hosts: p.Hosts, Tasks: ts}
		}},
		{"a task loses two hosts", func(p *Problem) *Problem {
			ts := rebuild(p.Tasks)
			ts[0].Allowed = NewBits(p.Hosts)
			for h := 2; h < p.Hosts; h++ {
				ts[0].Allowed.Set(h)
			}
			return &Problem{Hosts: p.Hosts, Tasks: ts}
		}},
	}
	for _, tc := range cases {
		for _, k := range []CostKind{MS, XMS} {
			t.Run(tc.name+"/"+k.String(), func(t *testing.T) {
				p := msEq2Problem(20, 16, rand.New(rand.NewSource(9)))
				g, _ := New(p, Config{Cost: k}, rand.New(rand.NewSource(9)))
				g.Run(context.Background(), 3000)
				old, _ := g.Best()
				q := tc.next(p)
				if err := g.Update(q); err != nil {
					t.Fatal(err)
				}
				msCheckPopulation(t, g, q)

				// The old best, carried over: surviving tasks in the same
				// relative order with the same rows (repaired on q).
				newOf := map[string]int{}
				for j, t := range q.Tasks {
					newOf[t.ID] = j
				}
				var order []int
				for _, o := range old.Order {
					if j, ok := newOf[p.Tasks[o].ID]; ok {
						order = append(order, j)
					}
				}
				kept := -1
				for i, gn := range g.gs {
					var sub []int
					for _, j := range gn.Order {
						if _, ok := newOf[q.Tasks[j].ID]; ok && msIndexOfID(p, q.Tasks[j].ID) >= 0 {
							sub = append(sub, j)
						}
					}
					if !slices.Equal(sub, order) {
						continue
					}
					same := true
					for o, t := range p.Tasks {
						j, ok := newOf[t.ID]
						if !ok {
							continue
						}
						// The old row without the hosts the task may no
						// longer use; repair keeps it if that is legal.
						tk, want := q.Tasks[j], old.Map[o].Clone()
						if tk.Allowed != nil {
							for w := range want {
								want[w] &= tk.Allowed[w]
							}
						}
						if k := want.Count(); k >= tk.Min && k <= q.MaxHosts(tk) && !gn.Map[j].Equal(want) {
							same = false
						}
					}
					if same {
						kept = i
						break
					}
				}
				if kept < 0 {
					t.Fatalf("the old best %v is not in the population any more", old.Order)
				}
				var s Schedule
				keptCost := Evaluate(q, &g.gs[kept].Chromosome, k, &s)
				if g.pop.Individuals[kept].Fitness != keptCost {
					t.Fatalf("kept best has fitness %v, re-evaluated %v", g.pop.Individuals[kept].Fitness, keptCost)
				}
				if _, c := g.Best(); c > keptCost {
					t.Fatalf("best after update %v is worse than the carried-over best %v", c, keptCost)
				}
				if len(order) == len(q.Tasks) && q.Tasks[0].Allowed == nil {
					// Nothing arrived and no row needs repair: the kept
					// individual is exactly the old best without the tasks
					// that left, re-evaluated on q.
					want := &Chromosome{Order: order, Map: make([]Bits, len(q.Tasks))}
					for o, t := range p.Tasks {
						if j, ok := newOf[t.ID]; ok {
							want.Map[j] = old.Map[o]
						}
					}
					if c := Evaluate(q, want, k, &s); keptCost != c {
						t.Fatalf("carried-over best costs %v, the old best on q %v", keptCost, c)
					}
				}
				g.Run(context.Background(), g.Evaluations()+1000)
				msCheckPopulation(t, g, q)
			})
		}
	}
}

func msIndexOfID(p *Problem, id string) int {
	for j, t := range p.Tasks {
		if t.ID == id {
			return j
		}
	}
	return -1
}

func TestGA_UpdateHostCountForgetsMemo(t *testing.T) {
	// Run times depend on which hosts: host h runs at speed speed[h]. When
	// the machine shrinks to 8 hosts, the tasks stay the same but host
	// indexes name other machines, so memoised times must go.
	speed := make([]float64, 16)
	for h := range speed {
		speed[h] = 1 + float64(h)
	}
	var tasks []*Task
	for j := 0; j < 10; j++ {
		w := 100 + 37*float64(j)
		tasks = append(tasks, &Task{ID: string(rune('a' + j)), Min: 1, Max: 16, Runtime: func(hs []int) float64 {
			slow := math.Inf(1)
			for _, h := range hs {
				slow = math.Min(slow, speed[h])
			}
			return w/(slow*float64(len(hs))) + float64(len(hs))
		}})
	}
	p := &Problem{Hosts: 16, Tasks: tasks}
	g, _ := New(p, Config{Cost: XMS}, rand.New(rand.NewSource(1)))
	g.Run(context.Background(), 2000)

	speed = []float64{8, 7, 6, 5, 4, 3, 2, 1}
	q := &Problem{Hosts: 8, Tasks: tasks}
	for _, task := range tasks {
		task.Max = 8
	}
	if err := g.Update(q); err != nil {
		t.Fatal(err)
	}
	// msCheckPopulation compares with fresh evaluations; make them fresh.
	fitness := make([]float64, len(g.gs))
	for i := range g.gs {
		fitness[i] = g.pop.Individuals[i].Fitness
	}
	for _, task := range tasks {
		task.Forget()
	}
	var s Schedule
	for i, gn := range g.gs {
		msMustLegal(t, q, &gn.Chromosome, "after shrinking")
		if c := Evaluate(q, &gn.Chromosome, XMS, &s); c != fitness[i] {
			t.Fatalf("individual %d: fitness %v from stale run times, fresh %v", i, fitness[i], c)
		}
	}
	g.Run(context.Background(), g.Evaluations()+500)
	msCheckPopulation(t, g, q)
}

func TestGA_UpdateToEmptyAndBack(t *testing.T) {
	p := msEq2Problem(6, 4, rand.New(rand.NewSource(3)))
	g, _ := New(p, Config{}, rand.New(rand.NewSource(3)))
	g.Run(context.Background(), 300)
	empty := &Problem{Hosts: 4, Base: []float64{5, 0, 0, 1}}
	if err := g.Update(empty); err != nil {
		t.Fatal(err)
	}
	if _, c := g.Best(); c != 5 {
		t.Fatalf("empty problem costs %v, want its base of 5", c)
	}
	g.Run(context.Background(), g.Evaluations()+200)
	if err := g.Update(p); err != nil {
		t.Fatal(err)
	}
	msCheckPopulation(t, g, p)
	g.Run(context.Background(), g.Evaluations()+300)
	msCheckPopulation(t, g, p)
	if err := g.Update(&Problem{Hosts: 4, Tasks: []*Task{{ID: "bad", Min: 1, Max: 1}}}); err == nil {
		t.Fatal("Update accepted a task without a runtime")
	}
}
