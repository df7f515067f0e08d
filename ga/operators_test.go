package ga

import (
	"math/rand"
	"slices"
	"testing"
)

func TestSplice_Table(t *testing.T) {
	cases := []struct {
		head, tail []int
		c          int
		want       []int
	}{
		{[]int{0, 1, 2, 3, 4}, []int{4, 3, 2, 1, 0}, 2, []int{0, 1, 4, 3, 2}},
		{[]int{4, 3, 2, 1, 0}, []int{0, 1, 2, 3, 4}, 2, []int{4, 3, 0, 1, 2}},
		{[]int{2, 0, 3, 1}, []int{1, 3, 0, 2}, 3, []int{2, 0, 3, 1}},
		{[]int{2, 0, 3, 1}, []int{1, 3, 0, 2}, 1, []int{2, 1, 3, 0}},
		{[]int{0}, []int{0}, 1, []int{0}},
	}
	for _, tc := range cases {
		dst := make([]int, len(tc.head))
		splice(tc.head, tc.tail, tc.c, dst, make([]bool, len(tc.head)))
		for i := range dst {
			if dst[i] != tc.want[i] {
				t.Errorf("splice(%v, %v, %d) = %v, want %v", tc.head, tc.tail, tc.c, dst, tc.want)
				break
			}
		}
	}
}

func TestCrossRows_Table(t *testing.T) {
	// Three tasks on 4 hosts, child order 2 0 1, cut after 1 row and 2
	// bits: position 0 (task 2) takes first's row, position 1 (task 0)
	// takes hosts 0-1 from first and 2-3 from second, position 2 (task 1)
	// takes second's row.
	first := &Chromosome{Map: []Bits{msBits(4, 0, 3), msBits(4, 1), msBits(4, 2)}}
	second := &Chromosome{Map: []Bits{msBits(4, 1, 2), msBits(4, 3), msBits(4, 0)}}
	rows := make([]uint64, 3)
	crossRows(first, second, []int{2, 0, 1}, rows, 1, 1, 2)
	want := []Bits{msBits(4, 0, 2), msBits(4, 3), msBits(4, 2)}
	for j := range want {
		if rows[j] != want[j][0] {
			t.Errorf("task %d row %v, want %v", j, Bits(rows[j:j+1]).Hosts(nil), want[j].Hosts(nil))
		}
	}
	// A cut inside the second word of a 70-host row.
	first = &Chromosome{Map: []Bits{msBits(70, 1, 64, 69)}}
	second = &Chromosome{Map: []Bits{msBits(70, 2, 65, 68)}}
	rows = make([]uint64, 2)
	crossRows(first, second, []int{0}, rows, 2, 0, 66)
	if got, want := Bits(rows), msBits(70, 1, 64, 68); !got.Equal(want) {
		t.Errorf("row %v, want %v", got.Hosts(nil), want.Hosts(nil))
	}
}

// msDistinctParents returns two legal parents of p (n tasks, 2n hosts,
// one host per task) whose rows differ for every task: a gives task j host
// j, b gives it host n+j.
func msDistinctParents(p *Problem, rng *rand.Rand) (a, b *Chromosome) {
	n := len(p.Tasks)
	a = &Chromosome{Order: rng.Perm(n), Map: make([]Bits, n)}
	b = &Chromosome{Order: rng.Perm(n), Map: make([]Bits, n)}
	for j := 0; j < n; j++ {
		a.Map[j] = msBits(p.Hosts, j)
		b.Map[j] = msBits(p.Hosts, n+j)
	}
	return a, b
}

func TestCrossover_KeepsRowsWithTheirTasks(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for trial := 0; trial < 500; trial++ {
		n := 1 + rng.Intn(10)
		p := &Problem{Hosts: 2 * n}
		for j := 0; j < n; j++ {
			p.Tasks = append(p.Tasks, msFixedTask("T", 1, 1, nil))
		}
		a, b := msDistinctParents(p, rng)
		ev := NewEvaluator(p, MS)
		ga, gb := ev.Genome(a.Clone()), ev.Genome(b.Clone())
		ga.Crossover(gb, rng)
		for _, ch := range []struct {
			name          string
			child         *Genome
			first, second *Chromosome
		}{{"A", ga, a, b}, {"B", gb, b, a}} {
			msMustLegal(t, p, &ch.child.Chromosome, "child "+ch.name)
			// Along the child's order the rows come from its first
			// parent, then at most one mixed row, then from the other.
			stage, mixed := 0, 0
			for _, j := range ch.child.Order {
				row := ch.child.Map[j]
				switch {
				case row.Equal(ch.first.Map[j]) && stage == 0:
				case row.Equal(ch.second.Map[j]):
					stage = 1
				default:
					mixed++
					stage = 1
				}
			}
			if mixed > 1 {
				t.Fatalf("trial %d child %s: %d rows belong to neither parent's task: order %v map %v",
					trial, ch.name, mixed, ch.child.Order, ch.child.Map)
			}
		}
		// Both children come from one splice point c.
		found := false
		for c := 1; c <= n && !found; c++ {
			if c == n && n > 1 {
				break
			}
			wantA, wantB := make([]int, n), make([]int, n)
			splice(a.Order, b.Order, c, wantA, make([]bool, n))
			splice(b.Order, a.Order, c, wantB, make([]bool, n))
			found = slices.Equal(wantA, ga.Order) && slices.Equal(wantB, gb.Order)
		}
		if !found {
			t.Fatalf("trial %d: orders %v, %v are no splice of %v, %v", trial, ga.Order, gb.Order, a.Order, b.Order)
		}
	}
}

func TestCrossover_LegalUnderConstraints(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for trial := 0; trial < 300; trial++ {
		p := msConstrainedProblem(1+rng.Intn(15), 1+rng.Intn(90), rng)
		ev := NewEvaluator(p, XMS)
		a, b := ev.Genome(NewRandom(p, rng)), ev.Genome(NewRandom(p, rng))
		for k := 0; k < 5; k++ {
			a.Crossover(b, rng)
			msMustLegal(t, p, &a.Chromosome, "child A")
			msMustLegal(t, p, &b.Chromosome, "child B")
			a.Mutate(rng)
			msMustLegal(t, p, &a.Chromosome, "mutant")
		}
	}
}

func TestMutate_OneSwapAndOneRow(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for trial := 0; trial < 500; trial++ {
		p := msConstrainedProblem(2+rng.Intn(10), 1+rng.Intn(20), rng)
		ev := NewEvaluator(p, MS)
		orig := NewRandom(p, rng)
		g := ev.Genome(orig.Clone())
		g.Mutate(rng)
		msMustLegal(t, p, &g.Chromosome, "mutant")
		var moved []int
		for i := range g.Order {
			if g.Order[i] != orig.Order[i] {
				moved = append(moved, i)
			}
		}
		if len(moved) != 2 || g.Order[moved[0]] != orig.Order[moved[1]] || g.Order[moved[1]] != orig.Order[moved[0]] {
			t.Fatalf("order %v from %v is not one swap", g.Order, orig.Order)
		}
		rows := 0
		for j := range g.Map {
			if !g.Map[j].Equal(orig.Map[j]) {
				rows++
			}
		}
		if rows > 1 {
			t.Fatalf("mutation changed %d rows", rows)
		}
	}
}

func TestMutate_FlipsTheMapping(t *testing.T) {
	// A single task of 1..8 hosts on 8 hosts: each mutation flips one host
	// bit, so the row must change unless repair undoes the flip (which only
	// happens when the only host is cleared and the same one is drawn).
	p := &Problem{Hosts: 8, Tasks: []*Task{msFixedTask("T", 1, 8, nil)}}
	rng := rand.New(rand.NewSource(1))
	c := &Chromosome{Order: []int{0}, Map: []Bits{msBits(8, 0, 1, 2, 3)}}
	changed := 0
	for i := 0; i < 200; i++ {
		before := c.Map[0].Clone()
		mutateSwapFlip(p, c, rng)
		if !c.Map[0].Equal(before) {
			changed++
		}
	}
	if changed < 180 {
		t.Fatalf("only %d of 200 mutations changed the row", changed)
	}
}

func TestGenome_CrossoverAndMutationDoNotAllocate(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	p := msEq2Problem(20, 16, rng)
	ev := NewEvaluator(p, XMS)
	a, b := ev.Genome(NewRandom(p, rng)), ev.Genome(NewRandom(p, rng))
	if n := testing.AllocsPerRun(200, func() { a.Crossover(b, rng); a.Mutate(rng); b.Mutate(rng) }); n != 0 {
		t.Fatalf("breeding allocates %v times", n)
	}
}

func TestInsertAt_Table(t *testing.T) {
	cases := []struct {
		i, k int
		want []int
	}{
		{0, 3, []int{1, 2, 3, 0, 4}},
		{3, 0, []int{3, 0, 1, 2, 4}},
		{1, 2, []int{0, 2, 1, 3, 4}},
		{4, 1, []int{0, 4, 1, 2, 3}},
		{2, 2, []int{0, 1, 2, 3, 4}},
	}
	for _, tc := range cases {
		s := []int{0, 1, 2, 3, 4}
		insertAt(s, tc.i, tc.k)
		if !slices.Equal(s, tc.want) {
			t.Errorf("insertAt(%d, %d) = %v, want %v", tc.i, tc.k, s, tc.want)
		}
	}
}

func TestMutateMoves_LegalAndSmall(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	for trial := 0; trial < 1000; trial++ {
		p := msConstrainedProblem(1+rng.Intn(12), 1+rng.Intn(90), rng)
		c := NewRandom(p, rng)
		orig := c.Clone()
		mutateMove(p, c, rng)
		msMustLegal(t, p, c, "after one move")
		rows := 0
		for j := range c.Map {
			if !c.Map[j].Equal(orig.Map[j]) {
				rows++
				if d := c.Map[j].Count() - orig.Map[j].Count(); d < -1 || d > 1 {
					t.Fatalf("one move changed a host count by %d", d)
				}
			}
		}
		if orderChanged := !slices.Equal(c.Order, orig.Order); rows > 1 || rows == 1 && orderChanged {
			t.Fatalf("one move changed %d rows and the order (%v)", rows, orderChanged)
		}
		for k := 0; k < 5; k++ {
			mutateMoves(p, c, rng)
			msMustLegal(t, p, c, "after mutateMoves")
		}
	}
}

func TestHostMove_MovesAOneHostTask(t *testing.T) {
	// A one-host task on 8 hosts: every move must put it on another host.
	p := &Problem{Hosts: 8, Tasks: []*Task{msFixedTask("T", 1, 1, nil)}}
	rng := rand.New(rand.NewSource(4))
	b := msBits(8, 3)
	seen := map[int]bool{}
	for i := 0; i < 200; i++ {
		before := b.Clone()
		hostMove(p, p.Tasks[0], b, rng)
		if b.Count() != 1 || b.Equal(before) {
			t.Fatalf("move %d: %v from %v", i, b.Hosts(nil), before.Hosts(nil))
		}
		seen[b.Nth(0)] = true
	}
	if len(seen) != 8 {
		t.Fatalf("the task visited only hosts %v", seen)
	}
}

func TestMutateMoves_DoesNotAllocate(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	p := msConstrainedProblem(20, 70, rng)
	c := NewRandom(p, rng)
	if n := testing.AllocsPerRun(500, func() { mutateMoves(p, c, rng) }); n != 0 {
		t.Fatalf("mutation allocates %v times", n)
	}
}
