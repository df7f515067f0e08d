package models_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"msched/evaluator"
	"msched/models"
	"msched/policy"
)

// These tests run real model programs: examples/models/amdahl-sh.sh (sh and
// awk) and testdata/external/sleepy.sh (hangs or crashes on demand). Every
// wait is bounded.

// copyFile copies src into dir, keeping its mode (the scripts' x bit).
func copyFile(t *testing.T, src, dir string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(src)), b, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}

func writeModel(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// loadLib loads dir and closes the library when the test ends.
func loadLib(t *testing.T, dir string) *models.Library {
	t.Helper()
	lib, err := models.LoadDir(dir, models.DefaultHardware())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lib.Close() })
	return lib
}

// exampleLib is the example amdahl-sh model (file and script as shipped)
// beside the built-in eq2 model it must agree with, plus extra files.
func exampleLib(t *testing.T, extra map[string]string) *models.Library {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"amdahl-sh.sh", "amdahl-sh.yaml", "eq2.yaml"} {
		copyFile(t, filepath.Join("..", "examples", "models", f), dir)
	}
	for n, body := range extra {
		writeModel(t, dir, n, body)
	}
	return loadLib(t, dir)
}

// sleepyLib holds sleepy.sh and the given model files.
func sleepyLib(t *testing.T, files map[string]string) *models.Library {
	t.Helper()
	dir := t.TempDir()
	copyFile(t, filepath.Join("testdata", "external", "sleepy.sh"), dir)
	for n, body := range files {
		writeModel(t, dir, n, body)
	}
	return loadLib(t, dir)
}

func openEvaluator(t *testing.T, lib *models.Library) *evaluator.Evaluator {
	t.Helper()
	ev, err := evaluator.Open(context.Background(), evaluator.Options{Models: lib, Hardware: lib.Hardware()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })
	return ev
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// groupLive returns the live (not zombie) processes of process group pgid,
// from /proc. A model process leads its own group, so this also finds what
// it started (sleepy's sleep). Zombies are left out: in a container whose
// init does not reap, a killed orphan stays a zombie, which is not running.
func groupLive(pgid int) []int {
	ents, _ := os.ReadDir("/proc")
	var live []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so split
		// after its closing parenthesis.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			live = append(live, pid)
		}
	}
	return live
}

// waitGroupGone fails unless every process of group pgid is gone within d.
func waitGroupGone(t *testing.T, pgid int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		live := groupLive(pgid)
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has live processes %v after %v", pgid, live, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func hosts(archLoads ...any) []models.HostSpec {
	var hs []models.HostSpec
	for i := 0; i < len(archLoads); i += 2 {
		hs = append(hs, models.HostSpec{Arch: archLoads[i].(string), Load: archLoads[i+1].(float64)})
	}
	return hs
}

// amdahlSh is the example program's formula, computed here:
// t = T1·(f + (1−f)/i)/s_min + C_com·i.
func amdahlSh(t *testing.T, p map[string]float64, hs []models.HostSpec) float64 {
	t.Helper()
	hw := models.DefaultHardware()
	sMin := math.Inf(1)
	for _, h := range hs {
		s, err := hw.EffectiveSpeed(h)
		if err != nil {
			t.Fatal(err)
		}
		sMin = min(sMin, s)
	}
	i := float64(len(hs))
	return p["T1"]*(p["f"]+(1-p["f"])/i)/sMin + p["C_com"]*i
}

func TestExternal_ExampleThroughEvaluatorMatchesFormula(t *testing.T) {
	lib := exampleLib(t, nil)
	ev := openEvaluator(t, lib)
	ctx := ctxFor(t, 30*time.Second)
	defaults := map[string]float64{"T1": 8, "f": 0, "C_com": 0.25}
	cases := []struct {
		params map[string]float64 // the job's; nil: the file's defaults
		hosts  []models.HostSpec
	}{
		{nil, hosts("generic", 0.0)},
		{nil, hosts("generic", 0.0, "generic", 0.0, "generic", 0.0, "generic", 0.0)},
		{map[string]float64{"T1": 600, "f": 0.1}, hosts("SunUltra1", 0.0, "SunUltra1", 1.0)},
		{map[string]float64{"T1": 1e5, "f": 0.05, "C_com": 3}, hosts("x86_64", 0.0, "SunUltra5", 0.5, "SunSPARC10", 0.0)},
		{map[string]float64{"C_com": 0}, hosts("aarch64", 2.25)},
	}
	for _, c := range cases {
		want := map[string]float64{}
		for k, v := range defaults {
			want[k] = v
		}
		for k, v := range c.params {
			want[k] = v
		}
		got, err := ev.Predict(ctx, "amdahl-sh", c.params, c.hosts)
		if err != nil {
			t.Fatalf("%v on %v: %v", c.params, c.hosts, err)
		}
		if w := amdahlSh(t, want, c.hosts); math.Abs(got-w) > 1e-12*w {
			t.Errorf("%v on %v: program says %v, formula %v", c.params, c.hosts, got, w)
		}
	}
	// With its defaults (f = 0) the program is Eq. 2, as eq2.yaml is.
	for n := 1; n <= 8; n++ {
		hs := make([]models.HostSpec, n)
		for i := range hs {
			hs[i] = models.HostSpec{Arch: "SunUltra5", Load: float64(i % 3)}
		}
		a, err1 := ev.Predict(ctx, "amdahl-sh", nil, hs)
		b, err2 := ev.Predict(ctx, "eq2", nil, hs)
		if err1 != nil || err2 != nil || math.Abs(a-b) > 1e-12*b {
			t.Errorf("%d hosts: amdahl-sh %v (%v), eq2 %v (%v)", n, a, err1, b, err2)
		}
	}
}

func TestExternal_CacheAnswersRepeatsWithoutTheProgram(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "trace")
	t.Setenv("AMDAHL_SH_TRACE", trace) // inherited by the processes
	lib := exampleLib(t, map[string]string{
		"ordered.yaml": "name: ordered\nkind: external\ndata: {command: [amdahl-sh.sh], order_dependent: true}\n",
	})
	ev := openEvaluator(t, lib)
	ctx := ctxFor(t, 30*time.Second)
	evals := func() int {
		b, err := os.ReadFile(trace)
		if errors.Is(err, os.ErrNotExist) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "eval ")
	}
	ask := func(model string, params map[string]float64, hs []models.HostSpec) {
		t.Helper()
		if _, err := ev.Predict(ctx, model, params, hs); err != nil {
			t.Fatal(err)
		}
	}
	paramSets := []map[string]float64{nil, {"f": 0.2}}
	hostSets := [][]models.HostSpec{
		hosts("generic", 0.0),
		hosts("SunUltra1", 0.0, "generic", 1.0),
		hosts("x86_64", 0.0, "x86_64", 0.0, "SunUltra10", 0.0),
	}
	for round := 0; round < 3; round++ {
		for _, p := range paramSets {
			for _, hs := range hostSets {
				ask("amdahl-sh", p, hs)
			}
		}
	}
	// The model is order-free: a permutation is the same question.
	ask("amdahl-sh", nil, hosts("generic", 1.0, "SunUltra1", 0.0))
	const distinct = 6
	if n := evals(); n != distinct {
		t.Errorf("the program evaluated %d times, want %d (one per distinct question)", n, distinct)
	}
	st := ev.Stats()
	if st.ModelCalls != distinct || st.L1Hits != 2*distinct+1 {
		t.Errorf("stats %+v: want %d model calls and %d level-1 hits", st, distinct, 2*distinct+1)
	}

	// An order-dependent model asks again for a permutation.
	ask("ordered", nil, hosts("SunUltra1", 0.0, "generic", 1.0))
	ask("ordered", nil, hosts("generic", 1.0, "SunUltra1", 0.0))
	ask("ordered", nil, hosts("generic", 1.0, "SunUltra1", 0.0))
	if n := evals(); n != distinct+2 {
		t.Errorf("order-dependent model: the program evaluated %d times in all, want %d", n, distinct+2)
	}
}

func TestExternal_KilledProcessIsRestarted(t *testing.T) {
	lib := exampleLib(t, nil)
	ev := openEvaluator(t, lib)
	m, _ := lib.Get("amdahl-sh")
	ctx := ctxFor(t, 30*time.Second)
	if _, err := ev.Predict(ctx, "amdahl-sh", nil, hosts("generic", 0.0)); err != nil {
		t.Fatal(err)
	}
	pids := models.ExternalPids(m)
	if len(pids) != 1 || models.ExternalStarts(m) != 1 {
		t.Fatalf("after one prediction: pids %v, %d starts; want one process", pids, models.ExternalStarts(m))
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Ask at once, without waiting for the death to be noticed.
	hs := hosts("generic", 0.0, "generic", 0.0)
	got, err := ev.Predict(ctx, "amdahl-sh", nil, hs)
	if err != nil {
		t.Fatalf("prediction after kill -9: %v", err)
	}
	if want := amdahlSh(t, map[string]float64{"T1": 8, "C_com": 0.25}, hs); math.Abs(got-want) > 1e-12*want {
		t.Errorf("after restart: %v, want %v", got, want)
	}
	after := models.ExternalPids(m)
	if models.ExternalStarts(m) != 2 || len(after) != 1 || after[0] == pids[0] {
		t.Errorf("after the restart: pids %v (killed %d), %d starts; want one new process", after, pids[0], models.ExternalStarts(m))
	}
	waitGroupGone(t, pids[0], 20*time.Second)
}

func TestExternal_CrashDuringRequestIsRetriedOnce(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "crash")
	t.Setenv("SLEEPY_CRASH", marker)
	lib := sleepyLib(t, map[string]string{"sleepy.yaml": "name: sleepy\nkind: external\ndata: {command: [./sleepy.sh], timeout: 20s}\n"})
	m, _ := lib.Get("sleepy")
	ctx := ctxFor(t, 30*time.Second)
	predict := func(tag float64) (float64, error) {
		return m.Predict(ctx, models.Scenario{Params: map[string]float64{"tag": tag}, Hosts: hosts("generic", 0.0)})
	}
	if v, err := predict(1); err != nil || v != 1 {
		t.Fatalf("first: %v, %v", v, err)
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The process exits in the middle of this request: it is retried, once,
	// on a fresh process, and the caller never sees the crash.
	if v, err := predict(2); err != nil || v != 2 {
		t.Fatalf("with a crash: %v, %v; want 2 from a fresh process", v, err)
	}
	if n := models.ExternalStarts(m); n != 2 {
		t.Errorf("%d processes started, want 2", n)
	}
}

func TestExternal_HungProcessTimesOutAndIsKilled(t *testing.T) {
	// The cooldown outlasts the test, however slow the machine.
	lib := sleepyLib(t, map[string]string{
		"hang.yaml": "name: hang\nkind: external\ndata: {command: [sleepy.sh], timeout: 300ms, cooldown: 10m, processes: 1}\n",
	})
	ev := openEvaluator(t, lib)
	m, _ := lib.Get("hang")
	ctx := ctxFor(t, 60*time.Second)
	// The first answer starts the process (sh, its list, an eval that forks
	// sleep): a loaded machine may take longer than the file's 300ms, which
	// is for the hung request below, so it gets more.
	timeout := models.SetExternalTimeout(m, 20*time.Second)
	v, err := ev.Predict(ctx, "hang", map[string]float64{"tag": 4}, hosts("generic", 0.0))
	models.SetExternalTimeout(m, timeout)
	if err != nil || v != 4 {
		t.Fatalf("a quick answer first: %v, %v", v, err)
	}
	pids := models.ExternalPids(m)
	if len(pids) != 1 {
		t.Fatalf("pids %v, want one", pids)
	}
	start := time.Now()
	_, err = ev.Predict(ctx, "hang", map[string]float64{"tag": 5, "s": 600}, hosts("generic", 0.0))
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "timed out after 300ms") {
		t.Fatalf("hung model: err %v, want a timeout", err)
	}
	// Generous above, for a loaded machine: the hang itself is 10 minutes.
	if took < 300*time.Millisecond || took > 20*time.Second {
		t.Errorf("hung model answered after %v, want just over the 300ms timeout", took)
	}
	// The program and the sleep(1) it was waiting for are both gone.
	waitGroupGone(t, pids[0], 20*time.Second)
	if left := models.ExternalPids(m); len(left) != 0 {
		t.Errorf("pids %v left after the timeout", left)
	}
	// During the cooldown the model fails at once, without a process: the
	// error is the one said before any wait for a process, and none is
	// started. (The bound on the time is generous, for a loaded machine.)
	start = time.Now()
	_, err = ev.Predict(ctx, "hang", map[string]float64{"tag": 6}, hosts("generic", 0.0))
	if err == nil || !strings.Contains(err.Error(), "failing fast") || time.Since(start) > 20*time.Second {
		t.Errorf("in the cooldown: %v after %v, want a fast failure", err, time.Since(start))
	}
	if n := models.ExternalStarts(m); n != 1 {
		t.Errorf("%d processes started, want 1 (none during the cooldown)", n)
	}
}

// TestExternal_PolicyFallsBackWhenTheModelHangs: the scheduler gives a job
// whose model hangs its own estimate, and a job of a working model the
// model's prediction.
func TestExternal_PolicyFallsBackWhenTheModelHangs(t *testing.T) {
	lib := sleepyLib(t, map[string]string{
		"hang.yaml":  "name: hang\nkind: external\nparams: {s: 600, tag: 1}\ndata: {command: [sleepy.sh], timeout: 200ms}\n",
		"quick.yaml": "name: quick\nkind: external\nparams: {tag: 7}\ndata: {command: [sleepy.sh], timeout: 20s}\n",
	})
	ev := openEvaluator(t, lib)
	pol, err := policy.New("fifo", policy.Options{Predictor: policy.NewModelPredictor(ev, lib.Hardware(), nil)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	snap := policy.Snapshot{
		Now:   now,
		Hosts: []policy.Host{{Name: "h1", Arch: "generic"}, {Name: "h2", Arch: "generic"}},
		Queue: []policy.QueuedJob{
			{ID: "hung", Submit: now, Min: 1, Max: 1, Model: "hang", Estimate: 42 * time.Second},
			{ID: "fine", Submit: now, Min: 1, Max: 1, Model: "quick", Estimate: 99 * time.Second},
		},
	}
	start := time.Now()
	plan, err := pol.Plan(ctxFor(t, 30*time.Second), snap)
	if err != nil {
		t.Fatal(err)
	}
	// Generous, for a loaded machine: the hang itself is 10 minutes.
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("planning took %v with a hung model", took)
	}
	got := map[string]time.Duration{}
	for _, p := range append(plan.StartNow, plan.Later...) {
		got[p.Job] = p.Predicted
	}
	if got["hung"] != 42*time.Second || got["fine"] != 7*time.Second {
		t.Errorf("predicted %v, want hung 42s (its estimate) and fine 7s (its model)", got)
	}
	if st := ev.Stats(); st.ModelErrors == 0 {
		t.Errorf("stats %+v: the hung model was never asked", st)
	}
}

func TestExternal_CloseStopsEveryProcess(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	t.Setenv("SLEEPY_GATE", gate) // inherited by the processes
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o644) })
	// The timeout is far longer than the bounds below: a Close that waited
	// for the hung request to time out would take minutes.
	lib := sleepyLib(t, map[string]string{
		"sleepy.yaml": "name: sleepy\nkind: external\ndata: {command: [sleepy.sh], timeout: 5m, processes: 3}\n",
	})
	m, _ := lib.Get("sleepy")
	ctx := ctxFor(t, 10*time.Minute)
	// One request hangs, busy, while Close runs; two more at once need two
	// more processes, which answer once both have theirs and go idle.
	hung := make(chan error, 1)
	go func() {
		_, err := m.Predict(ctx, models.Scenario{Params: map[string]float64{"tag": 3, "s": 600}, Hosts: hosts("generic", 0.0)})
		hung <- err
	}()
	waitStarts := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); models.ExternalStarts(m) < n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d processes started after 20s, want %d", models.ExternalStarts(m), n)
			}
		}
	}
	waitStarts(1)
	type answer struct {
		tag, v float64
		err    error
	}
	answers := make(chan answer, 2)
	for tag := 1.0; tag <= 2; tag++ {
		go func() {
			p := map[string]float64{"tag": tag, "s": -1} // until the gate opens
			v, err := m.Predict(ctx, models.Scenario{Params: p, Hosts: hosts("generic", 0.0)})
			answers <- answer{tag, v, err}
		}()
	}
	// Both in flight at once, each with a process of its own.
	waitStarts(3)
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if a := <-answers; a.err != nil || a.v != a.tag {
			t.Errorf("tag %v: %v, %v", a.tag, a.v, a.err)
		}
	}
	pids := models.ExternalPids(m)
	if len(pids) != 3 {
		t.Fatalf("pids %v before Close, want 3 processes", pids)
	}
	// Generous bounds, for a loaded machine.
	start := time.Now()
	if err := lib.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("Close took %v", took)
	}
	select {
	case err := <-hung:
		if err == nil {
			t.Error("the request in flight at Close succeeded")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the request in flight at Close did not return")
	}
	for _, pid := range pids {
		waitGroupGone(t, pid, 20*time.Second)
	}
	if _, err := m.Predict(ctx, models.Scenario{Params: map[string]float64{"tag": 1}, Hosts: hosts("generic", 0.0)}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("after Close: %v, want an error saying the model is closed", err)
	}
}

func TestExternal_ProgramErrorsKeepTheProcess(t *testing.T) {
	lib := exampleLib(t, nil)
	m, _ := lib.Get("amdahl-sh")
	ctx := ctxFor(t, 30*time.Second)
	predict := func(p map[string]float64, hs []models.HostSpec) error {
		_, err := m.Predict(ctx, models.Scenario{Params: p, Hosts: hs})
		return err
	}
	cases := []struct {
		params map[string]float64
		hosts  []models.HostSpec
		want   string
	}{
		{map[string]float64{"N": 20000}, hosts("generic", 0.0), `set N 20000: unknown parameter "N"`},
		{map[string]float64{"f": 2}, hosts("generic", 0.0), "f = 2, want 0 <= f <= 1"},
		{nil, hosts("Cray", 0.0), `unknown architecture "Cray"`},
	}
	for _, c := range cases {
		err := predict(c.params, c.hosts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v on %v: %v, want an error containing %q", c.params, c.hosts, err, c.want)
		}
	}
	if err := predict(nil, hosts("generic", 0.0)); err != nil {
		t.Fatal(err)
	}
	if n := models.ExternalStarts(m); n != 1 {
		t.Errorf("%d processes started, want 1: an error: reply leaves the process in step", n)
	}
}

func TestExternal_NoValueLeaksFromAnEarlierJob(t *testing.T) {
	lib := sleepyLib(t, map[string]string{"sleepy.yaml": "name: sleepy\nkind: external\ndata: {command: [sleepy.sh], processes: 1}\n"})
	m, _ := lib.Get("sleepy")
	ctx := ctxFor(t, 30*time.Second)
	if v, err := m.Predict(ctx, models.Scenario{Params: map[string]float64{"tag": 5}, Hosts: hosts("generic", 0.0)}); err != nil || v != 5 {
		t.Fatalf("tag 5: %v, %v", v, err)
	}
	// tag has no default: a job that does not set it must not get 5.
	_, err := m.Predict(ctx, models.Scenario{Hosts: hosts("generic", 0.0)})
	if err == nil || !strings.Contains(err.Error(), "tag has no value") {
		t.Errorf("without tag: %v, want the program's error", err)
	}
}

func TestExternal_BadModelFiles(t *testing.T) {
	cases := []struct{ body, want string }{
		{"name: x\nkind: external\n", "needs data"},
		{"name: x\nkind: external\ndata: {command: []}\n", "data.command: empty"},
		{"name: x\nkind: external\ndata: {command: [a], timeout: soon}\n", `data.timeout: "soon"`},
		{"name: x\nkind: external\ndata: {command: [a], timeout: 0s}\n", "data.timeout"},
		{"name: x\nkind: external\ndata: {command: [a], processes: 65}\n", "data.processes: 65"},
		{"name: x\nkind: external\ndata: {command: [a], shell: true}\n", `unknown field "shell"`},
	}
	for _, c := range cases {
		spec, err := models.ParseSpec([]byte(c.body), "x.yaml")
		if err == nil {
			_, err = models.Build(spec, models.DefaultHardware())
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error containing %q", c.body, err, c.want)
		}
	}
	// A missing program loads (the models directory may be incomplete) and
	// fails at prediction, naming the command.
	dir := t.TempDir()
	writeModel(t, dir, "gone.yaml", "name: gone\nkind: external\ndata: {command: [./no-such-model]}\n")
	lib := loadLib(t, dir)
	m, _ := lib.Get("gone")
	_, err := m.Predict(ctxFor(t, 10*time.Second), models.Scenario{Hosts: hosts("generic", 0.0)})
	if err == nil || !strings.Contains(err.Error(), "no-such-model") {
		t.Errorf("missing program: %v", err)
	}
}

func TestExternal_FingerprintFollowsTheProgram(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, filepath.Join("testdata", "external", "sleepy.sh"), dir)
	writeModel(t, dir, "s.yaml", "name: s\nkind: external\ndata: {command: [sleepy.sh]}\n")
	fp := func() string {
		lib := loadLib(t, dir)
		m, _ := lib.Get("s")
		return m.(models.Fingerprinter).Fingerprint()
	}
	before := fp()
	f, err := os.OpenFile(filepath.Join(dir, "sleepy.sh"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("# edited\n")
	f.Close()
	if fp() == before {
		t.Error("editing the program kept the model's fingerprint: the persistent cache would serve stale predictions")
	}
}

// TestExternal_ContextEndsARequest: the caller's context bounds a request
// below the model's timeout; the process, in an unknown state, is killed.
func TestExternal_ContextEndsARequest(t *testing.T) {
	// The model's timeout is far longer than the bounds below: a request
	// that ran to it would take minutes.
	lib := sleepyLib(t, map[string]string{"sleepy.yaml": "name: sleepy\nkind: external\ndata: {command: [sleepy.sh], timeout: 5m}\n"})
	m, _ := lib.Get("sleepy")
	if _, err := m.Predict(ctxFor(t, 30*time.Second), models.Scenario{Params: map[string]float64{"tag": 1}, Hosts: hosts("generic", 0.0)}); err != nil {
		t.Fatal(err)
	}
	pid := models.ExternalPids(m)[0]
	// The deadline must pass while the request is with the process. On a
	// loaded machine it may pass before the request gets there: the
	// request then fails without asking the process, which rightly lives
	// on; so try again with a longer deadline.
	for d := 150 * time.Millisecond; ; d *= 2 {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		start := time.Now()
		_, err := m.Predict(ctx, models.Scenario{Params: map[string]float64{"tag": 2, "s": 600}, Hosts: hosts("generic", 0.0)})
		took := time.Since(start)
		cancel()
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || took > d+20*time.Second {
			t.Fatalf("%v after %v, want the context's deadline soon after %v", err, took, d)
		}
		if strings.Contains(err.Error(), "request abandoned") {
			break
		}
		if d > 10*time.Second {
			t.Fatalf("the request never reached the process: %v", err)
		}
		t.Logf("deadline %v passed before the request reached the process (%v); again", d, err)
	}
	waitGroupGone(t, pid, 20*time.Second)
	// No cooldown for the caller's own deadline: the next request runs.
	if v, err := m.Predict(ctxFor(t, 30*time.Second), models.Scenario{Params: map[string]float64{"tag": 3}, Hosts: hosts("generic", 0.0)}); err != nil || v != 3 {
		t.Errorf("after an abandoned request: %v, %v", v, err)
	}
}
