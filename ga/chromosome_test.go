package ga

import (
	"math/rand"
	"testing"
)

func TestRepair_Rows(t *testing.T) {
	cases := []struct {
		name     string
		hosts    int
		min, max int
		allowed  Bits
		row      Bits
		mustHave []int // hosts that must stay
		mustNot  []int // hosts that must go
		subsetOf Bits  // result must lie inside (nil: anywhere allowed)
		count    int   // exact host count wanted
	}{
		{name: "empty row gets one host", hosts: 5, min: 1, max: 5, row: NewBits(5), count: 1},
		{name: "too many hosts are dropped among the row's", hosts: 8, min: 1, max: 2,
			row: msBits(8, 1, 3, 5, 7), subsetOf: msBits(8, 1, 3, 5, 7), count: 2},
		{name: "disallowed hosts are cleared", hosts: 4, min: 1, max: 4, allowed: msBits(4, 1, 3),
			row: msBits(4, 0, 1, 2), mustHave: []int{1}, mustNot: []int{0, 2}, count: 1},
		{name: "min above one tops up, keeping the row", hosts: 6, min: 3, max: 6,
			row: msBits(6, 4), mustHave: []int{4}, count: 3},
		{name: "min with only disallowed hosts refills from allowed", hosts: 6, min: 3, max: 4,
			allowed: msBits(6, 0, 2, 4, 5), row: msBits(6, 1, 3), subsetOf: msBits(6, 0, 2, 4, 5), count: 3},
		{name: "max capped by allowed", hosts: 6, min: 1, max: 6, allowed: msBits(6, 2, 3),
			row: msBits(6, 0, 1, 2, 3, 4, 5), mustHave: []int{2, 3}, count: 2},
		{name: "bits past the last host are cleared", hosts: 5, min: 1, max: 5,
			row: Bits{1<<1 | 1<<7 | 1<<63}, mustHave: []int{1}, count: 1},
		{name: "legal row is untouched", hosts: 70, min: 2, max: 3,
			row: msBits(70, 3, 66), mustHave: []int{3, 66}, count: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for seed := int64(0); seed < 20; seed++ {
				task := msFixedTask("T", 1, tc.max, nil)
				task.Min, task.Allowed = tc.min, tc.allowed
				p := &Problem{Hosts: tc.hosts, Tasks: []*Task{task}}
				if err := p.Validate(); err != nil {
					t.Fatal(err)
				}
				c := &Chromosome{Order: []int{0}, Map: []Bits{tc.row.Clone()}}
				Repair(p, c, rand.New(rand.NewSource(seed)))
				row := c.Map[0]
				msMustLegal(t, p, c, "repaired")
				if row.Count() != tc.count {
					t.Fatalf("seed %d: %d hosts %v, want %d", seed, row.Count(), row.Hosts(nil), tc.count)
				}
				for _, h := range tc.mustHave {
					if !row.Has(h) {
						t.Fatalf("seed %d: lost host %d: %v", seed, h, row.Hosts(nil))
					}
				}
				for _, h := range tc.mustNot {
					if row.Has(h) {
						t.Fatalf("seed %d: kept host %d: %v", seed, h, row.Hosts(nil))
					}
				}
				if tc.subsetOf != nil {
					for _, h := range row.Hosts(nil) {
						if !tc.subsetOf.Has(h) {
							t.Fatalf("seed %d: host %d outside %v", seed, h, tc.subsetOf.Hosts(nil))
						}
					}
				}
			}
		})
	}
}

func TestRepair_FillIsUniformAndAllocationFree(t *testing.T) {
	// An empty row of a task allowed on hosts 1, 4, 6, 9 must get each of
	// them about a quarter of the time.
	task := msFixedTask("T", 1, 1, nil)
	task.Allowed = msBits(10, 1, 4, 6, 9)
	p := &Problem{Hosts: 10, Tasks: []*Task{task}}
	rng := rand.New(rand.NewSource(7))
	c := &Chromosome{Order: []int{0}, Map: []Bits{NewBits(10)}}
	count := map[int]int{}
	const draws = 8000
	for i := 0; i < draws; i++ {
		c.Map[0].Reset()
		Repair(p, c, rng)
		count[c.Map[0].Nth(0)]++
	}
	for _, h := range []int{1, 4, 6, 9} {
		if n := count[h]; n < draws/4-300 || n > draws/4+300 {
			t.Errorf("host %d drawn %d times of %d, want about %d: %v", h, n, draws, draws/4, count)
		}
	}
	if len(count) != 4 {
		t.Errorf("drew hosts %v, want only 1, 4, 6, 9", count)
	}
	allocs := testing.AllocsPerRun(100, func() { c.Map[0].Reset(); Repair(p, c, rng) })
	if allocs != 0 {
		t.Errorf("Repair allocates %v times", allocs)
	}
}

func TestNewRandom_LegalUnderConstraints(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for trial := 0; trial < 200; trial++ {
		p := msConstrainedProblem(1+rng.Intn(12), 1+rng.Intn(80), rng)
		msMustLegal(t, p, NewRandom(p, rng), "NewRandom")
	}
}

// msConstrainedProblem is a random problem whose tasks have random allowed
// sets and host ranges.
func msConstrainedProblem(n, m int, rng *rand.Rand) *Problem {
	p := &Problem{Hosts: m}
	for j := 0; j < n; j++ {
		t := msEq2Task("T", 100+rng.Float64()*100, rng.Float64(), 1, m)
		avail := m
		if rng.Intn(2) == 0 {
			t.Allowed = NewBits(m)
			for h := 0; h < m; h++ {
				if rng.Intn(3) > 0 {
					t.Allowed.Set(h)
				}
			}
			t.Allowed.Set(rng.Intn(m))
			avail = t.Allowed.Count()
		}
		t.Min = 1 + rng.Intn(avail)
		t.Max = t.Min + rng.Intn(m-t.Min+1)
		p.Tasks = append(p.Tasks, t)
	}
	if err := p.Validate(); err != nil {
		panic(err)
	}
	return p
}

func TestLegal_Rejects(t *testing.T) {
	task := msFixedTask("T", 1, 2, nil)
	task.Allowed = msBits(5, 0, 1, 2)
	p := &Problem{Hosts: 5, Tasks: []*Task{task, msFixedTask("U", 1, 5, nil)}}
	good := func() *Chromosome {
		return &Chromosome{Order: []int{1, 0}, Map: []Bits{msBits(5, 0), msBits(5, 3, 4)}}
	}
	msMustLegal(t, p, good(), "good")
	cases := []struct {
		name  string
		spoil func(c *Chromosome)
	}{
		{"repeated task", func(c *Chromosome) { c.Order[1] = 1 }},
		{"task out of range", func(c *Chromosome) { c.Order[0] = 2 }},
		{"short order", func(c *Chromosome) { c.Order = c.Order[:1] }},
		{"missing row", func(c *Chromosome) { c.Map = c.Map[:1] }},
		{"row of the wrong size", func(c *Chromosome) { c.Map[1] = Bits{1, 0} }},
		{"disallowed host", func(c *Chromosome) { c.Map[0].Set(3) }},
		{"too many hosts", func(c *Chromosome) { c.Map[0].Set(1); c.Map[0].Set(2) }},
		{"no host", func(c *Chromosome) { c.Map[1].Reset() }},
		{"host past the last", func(c *Chromosome) { c.Map[1][0] |= 1 << 5 }},
	}
	for _, tc := range cases {
		c := good()
		tc.spoil(c)
		if Legal(p, c) {
			t.Errorf("%s: Legal accepted %v %v", tc.name, c.Order, c.Map)
		}
	}
}

func TestChromosome_CloneIsDeep(t *testing.T) {
	c := &Chromosome{Order: []int{1, 0}, Map: []Bits{msBits(3, 0), msBits(3, 1, 2)}}
	d := c.Clone()
	d.Order[0] = 0
	d.Map[1].Clear(1)
	if c.Order[0] != 1 || !c.Map[1].Has(1) {
		t.Fatal("Clone shares storage with the original")
	}
}
