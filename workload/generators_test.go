package workload

import (
	"bytes"
	"math"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

func TestByCV_HasTheRequestedMeanAndCV(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, cv := range []float64{0.5, 0.8, 1, 1.4, 1.9, 3.9} {
		const n = 400_000
		var m, m2 float64
		for range n {
			x := byCV(rng, 10, cv)
			if x < 0 {
				t.Fatalf("cv %g: negative draw %v", cv, x)
			}
			m += x
			m2 += x * x
		}
		m /= n
		got := math.Sqrt(m2/n-m*m) / m
		// Standard error of the mean is cv·10/sqrt(n) ≤ 0.06. The sample
		// CV converges fast below 1 (1 % is about 10 standard errors) and
		// slowly for the heavy hyperexponentials.
		tol := 0.01
		switch {
		case cv > 3:
			tol = 0.05
		case cv > 1:
			tol = 0.02
		}
		if math.Abs(m-10) > 0.1 || math.Abs(got-cv)/cv > tol {
			t.Errorf("cv %g: mean %.3f, CV %.3f", cv, m, got)
		}
	}
}

func TestGibbons_MatchesTable62(t *testing.T) {
	// Enough jobs that a mean 5 % off the table fails for the commoner
	// executables.
	const n = 200_000
	h, jobs, err := GenerateGibbons(GibbonsConfig{Jobs: n}, rand.New(rand.NewSource(1997)))
	if err != nil {
		t.Fatal(err)
	}
	if h.MaxProcs != 16 {
		t.Errorf("MaxProcs %d", h.MaxProcs)
	}
	total := 0.0
	for _, e := range GibbonsTable62 {
		total += e.Fraction
	}
	count := make([]int, len(GibbonsTable62))
	work := make([][]float64, len(GibbonsTable62))
	procs := map[int]int{}
	for _, j := range jobs {
		x := j.Executable - 1
		if x < 0 || x >= len(GibbonsTable62) {
			t.Fatalf("job %d: executable %d", j.ID, j.Executable)
		}
		if j.User != 1 || j.ReqTime != -1 || j.Procs != j.ReqProcs {
			t.Fatalf("job %+v", j)
		}
		d := GibbonsTable62[x].D
		count[x]++
		work[x] = append(work[x], j.Run/(d+(1-d)/float64(j.Procs)))
		procs[j.Procs]++
	}
	for x, e := range GibbonsTable62 {
		p := e.Fraction / total
		frac := float64(count[x]) / n
		if se := math.Sqrt(p * (1 - p) / n); math.Abs(frac-p) > 4.5*se {
			t.Errorf("%s: fraction %.4f, table %.4f (±%.4f)", e.Name, frac, p, 4.5*se)
		}
		var m, m2 float64
		for _, w := range work[x] {
			m += w
			m2 += w * w
		}
		k := float64(len(work[x]))
		m /= k
		if se := e.CV * e.MeanWork / math.Sqrt(k); math.Abs(m-e.MeanWork) > 4*se {
			t.Errorf("%s: mean work %.1f, table %.1f (±%.1f)", e.Name, m, e.MeanWork, 4*se)
		}
		// The sample CV converges slowly for the heavy hyperexponentials;
		// check it where it is informative.
		if cv := math.Sqrt(m2/k-m*m) / m; e.CV <= 1.5 && math.Abs(cv-e.CV)/e.CV > 0.15 {
			t.Errorf("%s: CV %.2f, table %.1f", e.Name, cv, e.CV)
		}
	}
	for p := 2; p <= 16; p++ {
		if got := float64(procs[p]) / n; math.Abs(got-1.0/15) > 4.5*math.Sqrt(1.0/15*14/15/n) {
			t.Errorf("p = %d: share %.4f, want 1/15", p, got)
		}
	}
	if len(procs) != 15 {
		t.Errorf("processor counts %v, want 2..16", procs)
	}
	if gap := jobs[n-1].Submit / n; math.Abs(gap-150) > 4.5*150/math.Sqrt(n) {
		t.Errorf("mean inter-arrival %.1f s, want 150", gap)
	}
}

func TestGibbons_UsersSpreadJobs(t *testing.T) {
	_, jobs, err := GenerateGibbons(GibbonsConfig{Jobs: 3000, Users: 4}, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, j := range jobs {
		seen[j.User] = true
	}
	if !reflect.DeepEqual(seen, map[int]bool{1: true, 2: true, 3: true, 4: true}) {
		t.Errorf("users %v", seen)
	}
}

func TestWarwick_ParametersAreRecoverable(t *testing.T) {
	cfg := WarwickConfig{Jobs: 500, Nodes: 16, MinPeak: 2, MaxPeak: 12, MeanSize: 64, MeanInterarrival: 30}
	h, jobs, err := GenerateWarwick(cfg, rand.New(rand.NewSource(1999)))
	if err != nil {
		t.Fatal(err)
	}
	h, jobs = roundTrip(t, h, jobs)
	if h.MaxProcs != 16 {
		t.Errorf("MaxProcs %d", h.MaxProcs)
	}
	peaks := map[int]bool{}
	sum := 0.0
	for _, j := range jobs {
		ccpu, ccom, ok := Eq2Params(j)
		if !ok {
			t.Fatalf("job %d: no parameters", j.ID)
		}
		i := j.ReqProcs
		peaks[i] = true
		sum += j.Run
		if rel := math.Abs(ccpu/ccom-float64(i*i)) / float64(i*i); rel > 1e-12 {
			t.Errorf("job %d: C_cpu/C_com = %v, want i*² = %d", j.ID, ccpu/ccom, i*i)
		}
		if got := Eq2Time(ccpu, ccom, i); math.Abs(got-j.Run) > 1e-9*j.Run {
			t.Errorf("job %d: t(i*) = %v, run time %v", j.ID, got, j.Run)
		}
		if math.Abs(j.CPU-ccpu/float64(i)) > 1e-9*j.CPU {
			t.Errorf("job %d: CPU time %v, C_cpu/i* = %v", j.ID, j.CPU, ccpu/float64(i))
		}
		// i* is the best node count: t is larger on either side.
		if Eq2Time(ccpu, ccom, i-1) <= j.Run || Eq2Time(ccpu, ccom, i+1) <= j.Run {
			t.Errorf("job %d: i* = %d is not the peak", j.ID, i)
		}
		if j.Run < 32 || j.Run > 96 {
			t.Errorf("job %d: t(i*) = %v outside [32, 96]", j.ID, j.Run)
		}
	}
	if len(peaks) != 11 {
		t.Errorf("peaks %v, want all of 2..12", peaks)
	}
	if m := sum / float64(len(jobs)); math.Abs(m-64) > 4.5*64/math.Sqrt(12)/math.Sqrt(500) {
		t.Errorf("mean size %.2f, want 64", m)
	}
	if _, _, ok := Eq2Params(NewJob()); ok {
		t.Error("parameters from a job with no request")
	}
}

func TestWarwick_DefaultIsABatch(t *testing.T) {
	_, jobs, err := GenerateWarwick(WarwickConfig{}, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 20 {
		t.Fatalf("%d jobs", len(jobs))
	}
	for _, j := range jobs {
		if j.Submit != 0 || j.ReqProcs < 1 || j.ReqProcs > 16 {
			t.Errorf("job %+v", j)
		}
	}
	if _, _, err := GenerateWarwick(WarwickConfig{Nodes: 8, MaxPeak: 9}, rand.New(rand.NewSource(1))); err == nil {
		t.Error("peak beyond the machine accepted")
	}
}

func TestMulticluster_RequestsAndLoad(t *testing.T) {
	for _, typ := range []RequestType{Total, Unordered, Ordered} {
		t.Run(typ.String(), func(t *testing.T) {
			cfg := MulticlusterConfig{Jobs: 20_000, Clusters: 4, ClusterSize: 8, Request: typ, N1: 1, N2: 8, Utilisation: 0.6, TimeUnit: 100}
			h, jobs, err := GenerateMulticluster(cfg, rand.New(rand.NewSource(2000)))
			if err != nil {
				t.Fatal(err)
			}
			h, jobs = roundTrip(t, h, jobs)
			sizes, err := Clusters(h)
			if err != nil || !reflect.DeepEqual(sizes, []int{8, 8, 8, 8}) || h.MaxProcs != 32 {
				t.Fatalf("clusters %v (%v), MaxProcs %d", sizes, err, h.MaxProcs)
			}
			var sumSize, sumRun float64
			for _, j := range jobs {
				got, comps, err := Components(j)
				if err != nil || got != typ {
					t.Fatalf("job %d: %v %v", j.ID, got, err)
				}
				if typ == Total {
					if comps != nil || j.ReqProcs < 4 || j.ReqProcs > 32 {
						t.Fatalf("total job %d: %v, %d processors", j.ID, comps, j.ReqProcs)
					}
				} else {
					n := 0
					for _, c := range comps {
						if c < 1 || c > 8 {
							t.Fatalf("job %d: component %d", j.ID, c)
						}
						n += c
					}
					if len(comps) != 4 || n != j.ReqProcs || n != j.Procs {
						t.Fatalf("job %d: components %v, processors %d", j.ID, comps, j.ReqProcs)
					}
				}
				sumSize += float64(j.ReqProcs)
				sumRun += j.Run
			}
			n := float64(len(jobs))
			// Sizes: the sum of 4 uniforms on 1..8, mean 18; service mean 1 unit.
			if m := sumSize / n; math.Abs(m-18) > 0.1 {
				t.Errorf("mean size %.3f, want 18", m)
			}
			if m := sumRun / n; math.Abs(m-100) > 4.5*100/math.Sqrt(n) {
				t.Errorf("mean service %.2f s, want 100", m)
			}
			s, _ := Characterise(Slice(jobs), 32)
			if math.Abs(s.OfferedLoad-0.6) > 0.03 {
				t.Errorf("offered utilisation %.3f, want 0.6", s.OfferedLoad)
			}
		})
	}
}

func TestComponents_PackingAndErrors(t *testing.T) {
	j := NewJob()
	if err := SetComponents(&j, Ordered, []int{3, 1, 4, 2}); err != nil {
		t.Fatal(err)
	}
	if j.Partition != 3010402 || j.Queue != 3 || j.ReqProcs != 10 {
		t.Errorf("packed %+v", j)
	}
	big := []int{99, 99, 99, 99, 99, 99, 99, 99, 99}
	if err := SetComponents(&j, Unordered, big); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	WriteAll(&buf, Header{}, []Job{j})
	_, back, err := ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if typ, comps, err := Components(back[0]); err != nil || typ != Unordered || !reflect.DeepEqual(comps, big) {
		t.Errorf("nine components of 99 read back as %v %v %v", typ, comps, err)
	}
	for _, bad := range [][]int{{0, 1}, {100}, {}, append(big, 1)} {
		if err := SetComponents(&j, Unordered, bad); err == nil {
			t.Errorf("components %v accepted", bad)
		}
	}
	j.Partition = 300 // components 3 and 0
	if _, _, err := Components(j); err == nil || !strings.Contains(err.Error(), "component of 0") {
		t.Errorf("partition 300: %v", err)
	}
	if _, err := ParseRequestType("Ordered"); err != nil {
		t.Error(err)
	}
	if _, err := ParseRequestType("sorted"); err == nil {
		t.Error("request type sorted accepted")
	}
}
