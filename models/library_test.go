package models

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestLibrary_LoadDir(t *testing.T) {
	lib := testLibrary(t)
	want := []string{"measured", "moldable-high", "moldable-low", "nodefaults", "particles", "solver"}
	if got := lib.Names(); !slices.Equal(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
	if _, err := lib.Get("nope"); err == nil || err.Error() != `models: unknown model "nope"` {
		t.Errorf("unknown model: %v", err)
	}
	spec, err := lib.Spec("solver")
	if err != nil || spec.Kind != "amdahl" || spec.Params["T1"] != 600 || !strings.Contains(spec.Description, "serial") {
		t.Errorf("spec %+v, %v", spec, err)
	}
	m, _ := lib.Get("particles")
	if fp, ok := m.(Fingerprinter); !ok || len(fp.Fingerprint()) != 16 {
		t.Errorf("library model lacks a fingerprint")
	}
}

func TestLibrary_FingerprintFollowsFileAndHardware(t *testing.T) {
	fingerprint := func(dir string, hw *Hardware) string {
		t.Helper()
		lib, err := LoadDir(dir, hw)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := lib.Get("m")
		return m.(Fingerprinter).Fingerprint()
	}
	a, b := t.TempDir(), t.TempDir()
	writeFile(t, a, "m.yaml", "name: m\nkind: amdahl\nparams: {T1: 10, f: 0}\n")
	writeFile(t, b, "m.yaml", "name: m\nkind: amdahl\nparams: {T1: 11, f: 0}\n")
	hw := DefaultHardware()
	faster, _ := ParseHardware([]byte("architectures: {SunUltra1: {speed: 2}}"), "x")
	if fingerprint(a, hw) != fingerprint(a, DefaultHardware()) {
		t.Error("same file and hardware, different fingerprints")
	}
	if fingerprint(a, hw) == fingerprint(b, hw) {
		t.Error("edited defaults, same fingerprint")
	}
	if fingerprint(a, hw) == fingerprint(a, faster) {
		t.Error("other hardware, same fingerprint")
	}
}

func TestLibrary_BadFiles(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"unknown field", map[string]string{"a.yaml": "name: a\nkind: warwick\nparms: {C_cpu: 1}\n"}, "line 3: field parms not found"},
		{"missing name", map[string]string{"a.yaml": "kind: warwick\n"}, `a.yaml: missing field "name"`},
		{"missing kind", map[string]string{"a.yaml": "name: a\n"}, `model "a": missing field "kind"`},
		{"bad name", map[string]string{"a.yaml": "name: 'a b'\nkind: warwick\n"}, `invalid model name "a b"`},
		{"bad param name", map[string]string{"a.yaml": "name: a\nkind: warwick\nparams: {'C=1': 1}\n"}, `invalid parameter name "C=1"`},
		{"unknown kind", map[string]string{"a.yaml": "name: a\nkind: pace\n"}, `unknown kind "pace"`},
		{"unknown param", map[string]string{"a.yaml": "name: a\nkind: amdahl\nparams: {T1: 1, g: 0}\n"}, `model "a" (amdahl): unknown parameter "g"`},
		{"bad default", map[string]string{"a.yaml": "name: a\nkind: amdahl\nparams: {f: 2}\n"}, "parameter f = 2, want in [0, 1]"},
		{"data on formula kind", map[string]string{"a.yaml": "name: a\nkind: warwick\ndata: {x: 1}\n"}, "line 3: kind warwick takes no data"},
		{"duplicate model", map[string]string{"a.yaml": "name: a\nkind: warwick\n", "b.yml": "name: a\nkind: amdahl\n"}, `model "a" defined twice`},
		{"empty file", map[string]string{"a.yaml": ""}, "empty document"},
		{"table without data", map[string]string{"t.yaml": "name: t\nkind: table\n"}, "kind table needs data"},
		{"table unknown data field", map[string]string{"t.yaml": "name: t\nkind: table\ndata:\n  times: {1: 5}\n  tims: {2: 3}\n"}, `line 5: unknown field "tims"`},
		{"table unknown reference", map[string]string{"t.yaml": "name: t\nkind: table\ndata: {reference: Cray, times: {1: 5}}\n"}, `data.reference: models: unknown architecture "Cray"`},
		{"table unknown arch row", map[string]string{"t.yaml": "name: t\nkind: table\ndata: {times: {1: 5}, arch: {Cray: {1: 1}}}\n"}, `unknown architecture "Cray"`},
		{"table zero hosts", map[string]string{"t.yaml": "name: t\nkind: table\ndata: {times: {0: 5}}\n"}, "host count 0 < 1"},
		{"table negative time", map[string]string{"t.yaml": "name: t\nkind: table\ndata: {times: {1: -5}}\n"}, "must be positive"},
		{"table no times", map[string]string{"t.yaml": "name: t\nkind: table\ndata: {reference: generic}\n"}, "data.times: no measurements"},
		{"table params", map[string]string{"t.yaml": "name: t\nkind: table\nparams: {N: 1}\ndata: {times: {1: 5}}\n"}, "kind table takes no params"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range c.files {
				writeFile(t, dir, name, body)
			}
			_, err := LoadDir(dir, DefaultHardware())
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "models: ") {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	if _, err := LoadDir(filepath.Join(t.TempDir(), "missing"), DefaultHardware()); err == nil {
		t.Error("missing directory loaded")
	}
}

// constant is a test kind: a fixed run time from its "seconds" default,
// order-dependent (it does not implement OrderFree).
type constant struct{ seconds float64 }

func (c constant) Predict(context.Context, Scenario) (float64, error) { return c.seconds, nil }

var registerConstant sync.Once

func TestRegister_NewKindLoadsFromFiles(t *testing.T) {
	registerConstant.Do(func() {
		Register("test-constant", func(spec Spec, hw *Hardware) (Model, error) {
			return constant{spec.Params["seconds"]}, nil
		})
	})
	if !slices.Contains(Kinds(), "test-constant") {
		t.Fatalf("kinds %v", Kinds())
	}
	dir := t.TempDir()
	writeFile(t, dir, "c.yaml", "name: c\nkind: test-constant\nparams: {seconds: 42}\n")
	lib, err := LoadDir(dir, DefaultHardware())
	if err != nil {
		t.Fatal(err)
	}
	m, _ := lib.Get("c")
	if got, _ := m.Predict(context.Background(), Scenario{}); got != 42 {
		t.Errorf("got %v", got)
	}
	if m.(OrderFree).HostOrderIrrelevant() {
		t.Error("a kind without OrderFree became order-free in the library")
	}
	for _, c := range []struct {
		kind string
		f    Factory
	}{{"warwick", newWarwick}, {"", newWarwick}, {"x", nil}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", c.kind)
				}
			}()
			Register(c.kind, c.f)
		}()
	}
}

func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
