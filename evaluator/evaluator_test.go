package evaluator

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	berrors "go.etcd.io/bbolt/errors"

	"msched/models"
)

var bg = context.Background()

func TestPredict_ModelValues(t *testing.T) {
	// The evaluator returns what the model says for the rounded host vector.
	e := open(t, library(t), "", 0)
	cases := []struct {
		model  string
		params map[string]float64
		hosts  []models.HostSpec
		want   float64
	}{
		// warwick C_cpu=1000, C_com=10 on 2 idle Ultra 1s: 1000/2 + 20
		{"particles", nil, hosts("SunUltra1", 0.0, "SunUltra1", 0.0), 520},
		// load 0.9 rounds to 1 (step 0.25): s_min = 1/(1+1) = 0.5: 1000/(2·0.5) + 20
		{"particles", nil, hosts("SunUltra1", 0.9, "SunUltra1", 0.0), 1020},
		// amdahl T1=600, f=0.1, job f=0.5, 2 hosts: 600·(0.5 + 0.25)
		{"solver", map[string]float64{"f": 0.5}, hosts("SunUltra1", 0.0, "SunUltra1", 0.1), 450},
	}
	for _, c := range cases {
		got, err := e.Predict(bg, c.model, c.params, c.hosts)
		if err != nil || got != c.want {
			t.Errorf("%s %v %v: got %v, %v; want %v", c.model, c.params, c.hosts, got, err, c.want)
		}
	}
}

func TestCanonical_PermutationsShareOneEntry(t *testing.T) {
	r, p := probed(t, "particles")
	path := dbPath(t)
	e := open(t, r, path, 0)
	vectors := [][]models.HostSpec{
		hosts("SunUltra1", 0.0, "SunUltra5", 0.25, "SunUltra1", 0.0),
		hosts("SunUltra5", 0.25, "SunUltra1", 0.0, "SunUltra1", 0.0),
		hosts("SunUltra1", 0.0, "SunUltra1", 0.0, "SunUltra5", 0.25),
	}
	var first float64
	for k, v := range vectors {
		got, err := e.Predict(bg, "particles", nil, v)
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			first = got
		} else if got != first {
			t.Errorf("permutation %d: %v, want %v", k, got, first)
		}
	}
	if n := p.calls.Load(); n != 1 {
		t.Errorf("model called %d times for one host multiset", n)
	}
	if s := e.Stats(); s.L1Entries != 1 || s.L1Hits != 2 || s.Misses != 1 {
		t.Errorf("stats %+v", s)
	}
	// The model saw the canonical vector: sorted by architecture, then load.
	if got := p.seen[0]; !slices.Equal(got, hosts("SunUltra1", 0.0, "SunUltra1", 0.0, "SunUltra5", 0.25)) {
		t.Errorf("model saw %v", got)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if keys := storedKeys(t, path); len(keys) != 1 {
		t.Errorf("level 2 holds %v", keys)
	}
}

func TestCanonical_LoadsWithinOneStepShareOneEntry(t *testing.T) {
	r, p := probed(t, "particles")
	e := open(t, r, "", 0)
	predict := func(load float64) float64 {
		t.Helper()
		v, err := e.Predict(bg, "particles", nil, hosts("SunUltra1", load, "SunUltra1", 0.0))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a, b := predict(0.2), predict(0.3) // both round to 0.25 (step 0.25)
	if a != b || p.calls.Load() != 1 {
		t.Errorf("loads 0.2 and 0.3: %v and %v after %d model calls, want one shared entry", a, b, p.calls.Load())
	}
	// The model was given the rounded load, so the cached value is exactly
	// the model's for the key: s_min = 1/1.25 = 0.8: 1000/(2·0.8) + 20 = 645.
	if got := p.seen[0]; !slices.Equal(got, hosts("SunUltra1", 0.0, "SunUltra1", 0.25)) {
		t.Errorf("model saw %v, want the rounded loads", got)
	}
	if a != 645 {
		t.Errorf("got %v, want 645", a)
	}
	if c := predict(0.4); c == a || p.calls.Load() != 2 { // 0.4 rounds to 0.5: another entry
		t.Errorf("load 0.4 shared the 0.25 entry (%v, %d calls)", c, p.calls.Load())
	}
}

func TestCanonical_OrderDependentModelKeepsOrder(t *testing.T) {
	p := &probe{inner: firstHost{models.DefaultHardware()}} // not order-free
	e := open(t, resolver{"first": p}, "", 0)
	slowFirst := hosts("SunSPARC10", 0.0, "SunUltra1", 0.0)
	fastFirst := hosts("SunUltra1", 0.0, "SunSPARC10", 0.0)
	a, err1 := e.Predict(bg, "first", nil, slowFirst)
	b, err2 := e.Predict(bg, "first", nil, fastFirst)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	// 100/0.35 and 100/1: a shared entry would have returned the first twice.
	if a != 100/0.35 || b != 100 {
		t.Errorf("got %v and %v, want %v and 100", a, b, 100/0.35)
	}
	if p.calls.Load() != 2 || e.Stats().L1Entries != 2 {
		t.Errorf("%d model calls, %d entries; want 2 and 2", p.calls.Load(), e.Stats().L1Entries)
	}
	if !slices.Equal(p.seen[0], slowFirst) {
		t.Errorf("model saw %v, want the given order", p.seen[0])
	}
}

func TestCanonical_ParamsAreSortedAndPartOfTheKey(t *testing.T) {
	lib := library(t)
	path := dbPath(t)
	e := open(t, lib, path, 0)
	m, _ := lib.Get("particles")
	fp := m.(models.Fingerprinter).Fingerprint()
	a, _ := e.Predict(bg, "particles", map[string]float64{"C_cpu": 100, "C_com": 1}, hosts("SunUltra5", 0.3, "SunUltra1", 0.0))
	b, _ := e.Predict(bg, "particles", map[string]float64{"C_com": 1, "C_cpu": 100}, hosts("SunUltra1", 0.0, "SunUltra5", 0.3))
	c, _ := e.Predict(bg, "particles", map[string]float64{"C_cpu": 200, "C_com": 1}, hosts("SunUltra1", 0.0, "SunUltra5", 0.3))
	// s_min = min(1, 1.6/1.25 = 1.28) = 1: 100/2 + 2 = 52; 200/2 + 2 = 102.
	if a != 52 || b != 52 || c != 102 {
		t.Errorf("got %v %v %v, want 52 52 102", a, b, c)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"particles@" + fp + "|C_com=1,C_cpu=100|SunUltra1:hardware/CPU_LOAD=0,SunUltra5:hardware/CPU_LOAD=0.25",
		"particles@" + fp + "|C_com=1,C_cpu=200|SunUltra1:hardware/CPU_LOAD=0,SunUltra5:hardware/CPU_LOAD=0.25",
	}
	if got := storedKeys(t, path); !slices.Equal(got, want) {
		t.Errorf("level-2 keys\n%q\nwant\n%q", got, want)
	}
}

func TestLevel1_Hit(t *testing.T) {
	r, p := probed(t, "solver")
	e := open(t, r, "", 0)
	h, err := e.Prepare("solver", nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := e.Classes(nil, hosts("SunUltra1", 0.0, "SunUltra1", 0.0, "SunUltra1", 0.0, "SunUltra1", 0.0))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if v, err := h.PredictClasses(bg, cs); err != nil || v != 195 { // 600·(0.1 + 0.9/4)
			t.Fatalf("got %v, %v; want 195", v, err)
		}
	}
	if again, _ := e.Prepare("solver", map[string]float64{}); again != h {
		t.Error("a second Prepare of the same job made another handle")
	}
	if p.calls.Load() != 1 || e.Stats().L1Hits != 2 {
		t.Errorf("%d model calls, stats %+v", p.calls.Load(), e.Stats())
	}
}

// TestLevel1_HitDoesNotAllocate holds the hot path to its promise
// (PredictClasses): a level-1 hit on a prepared handle allocates nothing,
// for an order-free model's sorted key of 16 hosts.
func TestLevel1_HitDoesNotAllocate(t *testing.T) {
	e := open(t, library(t), "", 0)
	h, err := e.Prepare("particles", nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := e.Classes(nil, sixteen())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.PredictClasses(bg, cs); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { h.PredictClasses(bg, cs) }); n != 0 {
		t.Errorf("a level-1 hit allocates %v times", n)
	}
	if s := e.Stats(); s.ModelCalls != 1 {
		t.Errorf("%d model calls: the runs were not level-1 hits", s.ModelCalls)
	}
}

func TestLevel2_SurvivesRestart(t *testing.T) {
	path := dbPath(t)
	vectors := [][]models.HostSpec{
		hosts("SunUltra1", 0.0),
		hosts("SunUltra1", 0.0, "x86_64", 1.0),
		hosts("SunUltra5", 0.5, "SunUltra5", 0.5, "SunSPARC10", 0.0),
	}
	var want []float64
	{
		r, p := probed(t, "moldable-low")
		e := open(t, r, path, 0)
		for _, v := range vectors {
			got, err := e.Predict(bg, "moldable-low", nil, v)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, got)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if p.calls.Load() != 3 || e.Stats().L2Writes != 3 {
			t.Fatalf("first run: %d model calls, stats %+v", p.calls.Load(), e.Stats())
		}
	}
	r, p := probed(t, "moldable-low")
	e := open(t, r, path, 0)
	for k, v := range vectors {
		got, err := e.Predict(bg, "moldable-low", nil, reversed(v)) // permuted, too
		if err != nil || got != want[k] {
			t.Errorf("after restart %v: %v, %v; want %v", v, got, err, want[k])
		}
	}
	for _, v := range vectors {
		e.Predict(bg, "moldable-low", nil, v)
	}
	if n := p.calls.Load(); n != 0 {
		t.Errorf("model called %d times after restart", n)
	}
	if s := e.Stats(); s.L2Hits != 3 || s.L1Hits != 3 || s.Misses != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestLevel2_ServesEvictedEntriesBeforeAndAfterCommit(t *testing.T) {
	r, p := probed(t, "particles")
	e := open(t, r, dbPath(t), 1) // level 1 holds one entry
	a, b := hosts("SunUltra1", 0.0), hosts("SunUltra5", 0.0)
	for _, v := range [][]models.HostSpec{a, b, a, b} {
		if _, err := e.Predict(bg, "particles", nil, v); err != nil {
			t.Fatal(err)
		}
	}
	// Whether the writes were still queued or already committed, level 2
	// answered the repeats.
	if s := e.Stats(); p.calls.Load() != 2 || s.L2Hits != 2 || s.L1Entries != 1 {
		t.Errorf("%d model calls, stats %+v", p.calls.Load(), s)
	}
}

func TestSingleflight_OneModelCall(t *testing.T) {
	const callers = 32
	release := make(chan struct{})
	r, p := probed(t, "particles")
	p.before = func(int64) error { <-release; return nil }

	// Every caller must have missed level 1 before the model may answer, so
	// that without one flight per key each would call the model.
	var missed sync.WaitGroup
	missed.Add(callers)
	testHookL1Miss = missed.Done
	t.Cleanup(func() { testHookL1Miss = nil })

	e := open(t, r, dbPath(t), 0)
	h, err := e.Prepare("particles", nil)
	if err != nil {
		t.Fatal(err)
	}
	results := make([]float64, callers)
	errs := make([]error, callers)
	var done sync.WaitGroup
	for k := range callers {
		done.Add(1)
		go func() {
			defer done.Done()
			results[k], errs[k] = h.Predict(bg, hosts("SunUltra1", 0.0, "SunUltra1", 0.0))
		}()
	}
	missed.Wait()
	close(release)
	done.Wait()
	for k := range callers {
		if errs[k] != nil || results[k] != 520 {
			t.Fatalf("caller %d: %v, %v", k, results[k], errs[k])
		}
	}
	s := e.Stats()
	if p.calls.Load() != 1 || s.ModelCalls != 1 {
		t.Errorf("%d model calls for %d concurrent callers", p.calls.Load(), callers)
	}
	if s.Lookups != callers || s.L1Hits+s.Misses != callers || s.L2Hits != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestErrors_NotCached(t *testing.T) {
	r, p := probed(t, "particles")
	p.before = failCall(1, "model program crashed")
	path := dbPath(t)
	e := open(t, r, path, 0)
	hs := hosts("SunUltra1", 0.0)
	if _, err := e.Predict(bg, "particles", nil, hs); err == nil || !strings.HasPrefix(err.Error(), `evaluator: model "particles" on SunUltra1:hardware/CPU_LOAD=0: `) || !strings.Contains(err.Error(), "crashed") {
		t.Fatalf("first call: %v", err)
	}
	if v, err := e.Predict(bg, "particles", nil, hs); err != nil || v != 1010 {
		t.Fatalf("second call: %v, %v", v, err)
	}
	if s := e.Stats(); s.ModelCalls != 2 || s.ModelErrors != 1 || s.Misses != 2 {
		t.Errorf("stats %+v", s)
	}
	e.Close()
	if keys := storedKeys(t, path); len(keys) != 1 {
		t.Errorf("level 2 holds %v", keys)
	}
}

func TestErrors_BadPredictionsAndInputs(t *testing.T) {
	nan := &probe{inner: constModel(math.NaN()), orderFree: true}
	neg := &probe{inner: constModel(-1), orderFree: true}
	lib := library(t)
	part, _ := lib.Get("nodefaults")
	e := open(t, resolver{"nan": nan, "neg": neg, "nodefaults": part}, "", 0)
	cases := []struct {
		model  string
		params map[string]float64
		hosts  []models.HostSpec
		want   string
	}{
		{"nan", nil, hosts("SunUltra1", 0.0), "prediction NaN is not a run time"},
		{"neg", nil, hosts("SunUltra1", 0.0), "prediction -1 is not a run time"},
		{"nodefaults", map[string]float64{"C_cpu": 1}, hosts("SunUltra1", 0.0), `missing parameter "C_com"`},
		{"nope", nil, hosts("SunUltra1", 0.0), `evaluator: models: unknown model "nope"`},
		{"neg", nil, hosts("Cray", 0.0), `evaluator: models: unknown architecture "Cray"`},
		{"neg", nil, hosts("SunUltra1", -1.0), "evaluator: host SunUltra1: invalid load -1"},
		{"neg", map[string]float64{"a,b": 1}, hosts("SunUltra1", 0.0), `invalid parameter name "a,b"`},
		{"neg", map[string]float64{"x": math.Inf(1)}, hosts("SunUltra1", 0.0), `parameter "x" is not finite`},
	}
	for _, c := range cases {
		_, err := e.Predict(bg, c.model, c.params, c.hosts)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "evaluator: ") {
			t.Errorf("%s %v: error %v, want %q", c.model, c.hosts, err, c.want)
		}
	}
	if e.Stats().L1Entries != 0 {
		t.Error("an error was cached")
	}
	h, _ := e.Prepare("neg", nil)
	if _, err := h.PredictClasses(bg, []Class{0}); err == nil || !strings.Contains(err.Error(), "invalid host class 0") {
		t.Errorf("zero class: %v", err)
	}
}

type constModel float64

func (c constModel) Predict(context.Context, models.Scenario) (float64, error) {
	return float64(c), nil
}

func TestCancel_CallerStopsWaitingFlightStillCaches(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	r, p := probed(t, "particles")
	p.before = func(int64) error { close(entered); <-release; return nil }
	e := open(t, r, "", 0)
	ctx, cancel := context.WithCancel(bg)
	errc := make(chan error, 1)
	go func() {
		_, err := e.Predict(ctx, "particles", nil, hosts("SunUltra1", 0.0))
		errc <- err
	}()
	<-entered
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "evaluator: ") {
		t.Fatalf("cancelled caller: %v", err)
	}
	close(release)
	// The detached flight finishes and caches; the next caller joins it or
	// hits level 1, and the model is not called again.
	if v, err := e.Predict(bg, "particles", nil, hosts("SunUltra1", 0.0)); err != nil || v != 1010 {
		t.Fatalf("got %v, %v", v, err)
	}
	if p.calls.Load() != 1 {
		t.Errorf("%d model calls", p.calls.Load())
	}
}

func TestClose_IdempotentAndFinal(t *testing.T) {
	e := open(t, library(t), dbPath(t), 0)
	h, _ := e.Prepare("particles", nil)
	if _, err := h.Predict(bg, hosts("SunUltra1", 0.0)); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := h.Predict(bg, hosts("SunUltra1", 0.0)); !errors.Is(err, ErrClosed) {
		t.Errorf("Predict after Close: %v", err)
	}
	if _, err := e.Prepare("particles", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Prepare after Close: %v", err)
	}
}

func TestOpen_Errors(t *testing.T) {
	if _, err := Open(bg, Options{}); err == nil {
		t.Error("no models, no hardware: opened")
	}
	path := dbPath(t)
	open(t, library(t), path, 0)
	// The file is locked by e; a second evaluator must give up when its
	// context says so rather than wait forever.
	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	defer cancel()
	if _, err := Open(ctx, Options{Models: library(t), Hardware: models.DefaultHardware(), Path: path}); !errors.Is(err, berrors.ErrTimeout) {
		t.Errorf("second Open of a locked file: %v, want a lock timeout", err)
	}
	done, stop := context.WithCancel(bg)
	stop()
	if _, err := Open(done, Options{Models: library(t), Hardware: models.DefaultHardware(), Path: dbPath(t)}); !errors.Is(err, context.Canceled) {
		t.Errorf("Open with a cancelled context: %v", err)
	}
}

func TestStats_CountersAndJSON(t *testing.T) {
	r, p := probed(t, "solver")
	p.before = failCall(2, "boom")
	e := open(t, r, dbPath(t), 0)
	one, two := hosts("SunUltra1", 0.0), hosts("SunUltra1", 0.0, "SunUltra1", 0.0)
	e.Predict(bg, "solver", nil, one) // miss, model call 1
	e.Predict(bg, "solver", nil, one) // L1 hit
	e.Predict(bg, "solver", nil, two) // miss, model call 2 fails
	e.Predict(bg, "solver", nil, two) // miss, model call 3
	e.Predict(bg, "solver", nil, two) // L1 hit
	s := e.Stats()
	want := Stats{Lookups: 5, L1Hits: 2, Misses: 3, ModelCalls: 3, ModelErrors: 1, L1Entries: 2}
	got := s
	got.MeanModelLatency, got.L2Writes, got.L2Pending = 0, 0, 0
	if got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	if s.MeanModelLatency <= 0 || s.L2Writes+uint64(s.L2Pending) != 2 {
		t.Errorf("latency %v, level 2 %d written + %d pending", s.MeanModelLatency, s.L2Writes, s.L2Pending)
	}
	if hr := s.HitRate(); hr != 0.4 {
		t.Errorf("hit rate %v", hr)
	}
	raw, _ := json.Marshal(s)
	for _, field := range []string{`"l1_hits":2`, `"l2_hits":0`, `"misses":3`, `"model_calls":3`, `"model_errors":1`, `"mean_model_latency_ns":`} {
		if !strings.Contains(string(raw), field) {
			t.Errorf("JSON %s lacks %s", raw, field)
		}
	}
}

func TestStats_ConcurrentReaders(t *testing.T) {
	// Stats is read while predictions run; -race checks the counters.
	e := open(t, library(t), dbPath(t), 0)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 200 {
				if _, err := e.Predict(bg, "particles", nil, hosts("SunUltra1", float64((g*k)%7)*0.25)); err != nil {
					t.Error(err)
					return
				}
				_ = e.Stats()
			}
		}()
	}
	wg.Wait()
	if s := e.Stats(); s.Lookups != 800 || s.ModelCalls != 7 {
		t.Errorf("stats %+v", s)
	}
}

func reversed(hs []models.HostSpec) []models.HostSpec {
	r := slices.Clone(hs)
	slices.Reverse(r)
	return r
}

func TestSingleflight_LateCallerFindsLevel1(t *testing.T) {
	// B misses level 1, then A's whole flight runs and ends before B starts
	// its own: B's flight must find A's entry in level 1, not call the model.
	r, p := probed(t, "particles")
	e := open(t, r, "", 0)
	bMissed, aDone := make(chan struct{}), make(chan struct{})
	var misses int
	testHookL1Miss = func() {
		misses++ // B's miss happens before A's: no race
		if misses == 1 {
			close(bMissed)
			<-aDone
		}
	}
	t.Cleanup(func() { testHookL1Miss = nil })
	hs := hosts("SunUltra1", 0.0)
	errc := make(chan error, 1)
	go func() {
		_, err := e.Predict(bg, "particles", nil, hs)
		errc <- err
	}()
	<-bMissed
	if _, err := e.Predict(bg, "particles", nil, hs); err != nil { // A
		t.Fatal(err)
	}
	close(aDone)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if s := e.Stats(); p.calls.Load() != 1 || s.L1Hits != 1 || s.Misses != 1 {
		t.Errorf("%d model calls, stats %+v", p.calls.Load(), s)
	}
}

func TestCanonical_LongVectors(t *testing.T) {
	// 30 hosts sort with slices.Sort in a stack key; 100 exceed the stack
	// buffer. Permutations still share one entry.
	for _, n := range []int{30, 100} {
		r, p := probed(t, "solver")
		e := open(t, r, "", 0)
		var v []models.HostSpec
		for k := range n {
			v = append(v, models.HostSpec{Arch: []string{"SunUltra1", "SunUltra5"}[k%2], Load: float64(k%3) * 0.25})
		}
		a, err1 := e.Predict(bg, "solver", nil, v)
		b, err2 := e.Predict(bg, "solver", nil, reversed(v))
		// s_min = 1/(1+0.5) (an Ultra 1 at load 0.5): 600·(0.1 + 0.9/n)·1.5
		want := 600 * (0.1 + 0.9/float64(n)) * 1.5
		if err1 != nil || err2 != nil || math.Abs(a-want) > 1e-9 || a != b || p.calls.Load() != 1 {
			t.Errorf("%d hosts: %v, %v (%v, %v), %d model calls; want %v once", n, a, b, err1, err2, p.calls.Load(), want)
		}
	}
}
