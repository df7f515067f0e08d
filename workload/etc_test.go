package workload

import (
	"bytes"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

func TestClasses_AllTwelveParse(t *testing.T) {
	cs := Classes()
	if len(cs) != 12 {
		t.Fatalf("Classes() has %d names, want 12", len(cs))
	}
	seen := map[string]bool{}
	for _, c := range cs {
		if seen[c] {
			t.Errorf("class %s listed twice", c)
		}
		seen[c] = true
		if _, err := parseClass(c); err != nil {
			t.Errorf("class %s does not parse: %v", c, err)
		}
	}
	for _, c := range []string{"u_c_hi", "x_c_hihi", "u_q_hihi", "u_c_hhhi", "u_c_hihi_", ""} {
		if _, err := GenerateETC(c, 4, 4, rand.New(rand.NewSource(1))); err == nil {
			t.Errorf("GenerateETC(%q) accepted a bad class", c)
		}
	}
}

func sortedRow(row []float64, step int) bool {
	for j := step; j < len(row); j += step {
		if row[j] < row[j-step] {
			return false
		}
	}
	return true
}

func evenCols(row []float64) []float64 {
	var out []float64
	for j := 0; j < len(row); j += 2 {
		out = append(out, row[j])
	}
	return out
}

// TestGenerateETC_Statistics checks each class on a full Braun-sized
// matrix: the consistency property, the value ranges, and that the mean is
// the product of the two uniform means ((1+R_task)/2 · (1+R_mach)/2). With
// 512 rows the standard error of the mean is about 3 % (the baseline τ is
// shared along a row), so 12 % is a four-sigma band.
func TestGenerateETC_Statistics(t *testing.T) {
	for ci, class := range Classes() {
		t.Run(class, func(t *testing.T) {
			c, _ := parseClass(class)
			etc, err := GenerateETC(class, BraunTasks, BraunMachines, rand.New(rand.NewSource(int64(100+ci))))
			if err != nil {
				t.Fatal(err)
			}
			if len(etc) != BraunTasks {
				t.Fatalf("%d rows", len(etc))
			}
			sum, sortedRows, evenSorted, oddSorted := 0.0, 0, 0, 0
			for i, row := range etc {
				if len(row) != BraunMachines {
					t.Fatalf("row %d has %d machines", i, len(row))
				}
				lo, hi := slices.Min(row), slices.Max(row)
				if lo < 1 || hi >= c.rTask*c.rMach {
					t.Fatalf("row %d: values %g..%g outside [1, %g)", i, lo, hi, c.rTask*c.rMach)
				}
				// All entries of a row share τ(i), so they differ by less
				// than the machine range.
				if hi/lo >= c.rMach {
					t.Fatalf("row %d: spread %g ≥ machine range %g", i, hi/lo, c.rMach)
				}
				for _, v := range row {
					sum += v
				}
				if sortedRow(row, 1) {
					sortedRows++
				}
				if sortedRow(evenCols(row), 1) {
					evenSorted++
				}
				if sortedRow(row[1:], 2) {
					oddSorted++
				}
			}
			mean := sum / float64(BraunTasks*BraunMachines)
			want := (1 + c.rTask) / 2 * (1 + c.rMach) / 2
			if math.Abs(mean-want)/want > 0.12 {
				t.Errorf("mean %g, want %g ± 12%%", mean, want)
			}
			switch c.consistency {
			case 'c':
				if sortedRows != BraunTasks {
					t.Errorf("consistent: %d of %d rows sorted", sortedRows, BraunTasks)
				}
			case 's':
				if evenSorted != BraunTasks {
					t.Errorf("semi-consistent: even columns sorted in %d of %d rows", evenSorted, BraunTasks)
				}
				// 8 odd columns in random order are sorted with
				// probability 1/8! per row.
				if oddSorted > 2 || sortedRows > 2 {
					t.Errorf("semi-consistent: odd columns sorted in %d rows, whole row in %d", oddSorted, sortedRows)
				}
			case 'i':
				if sortedRows > 0 || evenSorted > 2 {
					t.Errorf("inconsistent: %d rows sorted, %d with even columns sorted", sortedRows, evenSorted)
				}
			}
		})
	}
}

// TestGenerateETC_HeterogeneityOrders checks that the hi/lo labels mean what
// they say. The spread of row means follows the task range (a row mean is
// τ(i) times the mean of 16 multipliers, which varies far less than τ): the
// largest of 512 baselines over the smallest is about 3000/7 for "hi" and
// 100/1.2 for "lo", hence the factor 3. The
// mean max/min ratio within rows follows the machine range, though less than
// proportionally: for 16 draws it is about 16 for "hi" (≈ 940/60) and 6 for
// "lo" (≈ 9.5/1.5), hence the factor 4.
func TestGenerateETC_HeterogeneityOrders(t *testing.T) {
	spread := func(class string) (task, mach float64) {
		etc, err := GenerateETC(class, BraunTasks, BraunMachines, rand.New(rand.NewSource(7)))
		if err != nil {
			t.Fatal(err)
		}
		var means []float64
		for _, row := range etc {
			s := 0.0
			for _, v := range row {
				s += v
			}
			means = append(means, s/float64(len(row)))
			mach += slices.Max(row) / slices.Min(row)
		}
		return slices.Max(means) / slices.Min(means), mach / float64(len(etc))
	}
	thh, mhh := spread("u_i_hihi")
	tll, mll := spread("u_i_lolo")
	thl, mhl := spread("u_i_hilo")
	tlh, mlh := spread("u_i_lohi")
	if !(thh > 3*tll && thl > 3*tlh) {
		t.Errorf("task spread: hihi %g hilo %g vs lolo %g lohi %g", thh, thl, tll, tlh)
	}
	if !(mhh > 4*mhl && mlh > 4*mll) {
		t.Errorf("machine spread: hihi %g lohi %g vs hilo %g lolo %g", mhh, mlh, mhl, mll)
	}
}

func TestGenerateETC_DeterministicForSeed(t *testing.T) {
	a, _ := GenerateETC("u_s_hilo", 32, 8, rand.New(rand.NewSource(42)))
	b, _ := GenerateETC("u_s_hilo", 32, 8, rand.New(rand.NewSource(42)))
	c, _ := GenerateETC("u_s_hilo", 32, 8, rand.New(rand.NewSource(43)))
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			t.Fatalf("row %d differs for the same seed", i)
		}
	}
	if slices.Equal(a[0], c[0]) {
		t.Fatal("different seeds gave the same first row")
	}
}

func TestETC_RoundTrip(t *testing.T) {
	etc, err := GenerateETC("u_c_hihi", BraunTasks, BraunMachines, rand.New(rand.NewSource(3)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteETC(&buf, etc); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != BraunTasks*BraunMachines {
		t.Fatalf("wrote %d lines, want %d (one number per line)", n, BraunTasks*BraunMachines)
	}
	back, err := ReadETC(&buf, BraunTasks, BraunMachines)
	if err != nil {
		t.Fatal(err)
	}
	for i := range etc {
		if !slices.Equal(etc[i], back[i]) {
			t.Fatalf("row %d: wrote %v, read %v", i, etc[i], back[i])
		}
	}
}

func TestReadETC_AnyWhitespaceTaskMajor(t *testing.T) {
	in := "1 2\t3\n\n  4.5e1\r\n5\n6\n"
	etc, err := ReadETC(strings.NewReader(in), 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{{1, 2, 3}, {45, 5, 6}}
	for i := range want {
		if !slices.Equal(etc[i], want[i]) {
			t.Fatalf("got %v, want %v", etc, want)
		}
	}
}

func TestReadETC_Malformed(t *testing.T) {
	cases := []struct {
		name, in string
		want     string // substring of the error
	}{
		{"not a number", "1\n2\nx3\n4\n", "line 3: \"x3\""},
		{"negative", "1\n2\n3\n-4\n", "line 4"},
		{"nan", "1\nNaN\n3\n4\n", "line 2"},
		{"infinite", "1\n2\n+Inf\n4\n", "line 3"},
		{"too few", "1\n2\n3\n", "after 3 numbers, want 2×2 = 4"},
		{"too many", "1\n2\n3\n4\n\n5\n", "line 6: more than"},
		{"empty", "", "after 0 numbers"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadETC(strings.NewReader(c.in), 2, 2)
			if err == nil {
				t.Fatalf("no error for %q", c.in)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

func TestWriteETC_RejectsRagged(t *testing.T) {
	if err := WriteETC(&bytes.Buffer{}, [][]float64{{1, 2}, {3}}); err == nil {
		t.Fatal("ragged matrix written without error")
	}
}
