package models

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHardware_DefaultHasRealArchitectures(t *testing.T) {
	hw := DefaultHardware()
	for _, name := range []string{"generic", "SunUltra1", "SunUltra5", "SunSPARC10", "x86_64"} {
		a, err := hw.Lookup(name)
		if err != nil {
			t.Fatalf("default hardware lacks %s: %v", name, err)
		}
		if a.LoadStep != DefaultLoadStep {
			t.Errorf("%s: load step %v, want %v", name, a.LoadStep, DefaultLoadStep)
		}
	}
	if g, _ := hw.Lookup("generic"); g.Speed != 1 {
		t.Errorf("generic speed %v, want 1", g.Speed)
	}
	if _, err := hw.Lookup("Cray"); err == nil || err.Error() != `models: unknown architecture "Cray"` {
		t.Errorf("unknown arch: got %v", err)
	}
}

func TestHardware_Parse(t *testing.T) {
	cases := []struct {
		name    string
		yaml    string
		wantErr string // substring; "" = must parse
		check   func(t *testing.T, hw *Hardware)
	}{
		{name: "step defaults and overrides", yaml: `
default_load_step: 0.5
architectures:
  a: {speed: 2}
  b: {speed: 3, load_step: 0.1}
`, check: func(t *testing.T, hw *Hardware) {
			a, _ := hw.Lookup("a")
			b, _ := hw.Lookup("b")
			if a.Speed != 2 || a.LoadStep != 0.5 || b.Speed != 3 || b.LoadStep != 0.1 {
				t.Errorf("got %+v %+v", a, b)
			}
			if got := strings.Join(hw.Names(), ","); got != "a,b" {
				t.Errorf("names %s", got)
			}
		}},
		{name: "package default step", yaml: "architectures: {a: {speed: 1}}", check: func(t *testing.T, hw *Hardware) {
			if a, _ := hw.Lookup("a"); a.LoadStep != DefaultLoadStep {
				t.Errorf("step %v", a.LoadStep)
			}
		}},
		{name: "unknown top-level field", yaml: "architectures: {a: {speed: 1}}\nspeeds: 3\n", wantErr: "line 2: field speeds not found"},
		{name: "unknown arch field", yaml: "architectures:\n  a: {speed: 1}\n  b:\n    sped: 2\n", wantErr: "line 4: field sped not found"},
		{name: "zero speed", yaml: "architectures: {a: {speed: 0}}", wantErr: `architecture "a": speed must be positive`},
		{name: "missing speed", yaml: "architectures: {a: {load_step: 1}}", wantErr: `architecture "a": speed must be positive`},
		{name: "negative step", yaml: "architectures: {a: {speed: 1, load_step: -1}}", wantErr: `architecture "a": load_step must be positive`},
		{name: "negative default step", yaml: "default_load_step: -1\narchitectures: {a: {speed: 1}}", wantErr: "default_load_step must be positive"},
		{name: "bad name", yaml: "architectures: {'a,b': {speed: 1}}", wantErr: `invalid architecture name "a,b"`},
		{name: "no architectures", yaml: "default_load_step: 1\n", wantErr: "no architectures"},
		{name: "empty", yaml: "", wantErr: "empty document"},
		{name: "two documents", yaml: "architectures: {a: {speed: 1}}\n---\narchitectures: {b: {speed: 1}}\n", wantErr: "line 2: more than one YAML document"},
		{name: "duplicate arch", yaml: "architectures:\n  a: {speed: 1}\n  a: {speed: 2}\n", wantErr: "already defined"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hw, err := ParseHardware([]byte(c.yaml), "test.yaml")
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.HasPrefix(err.Error(), "models: hardware test.yaml: ") {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, hw)
		})
	}
}

func TestHardware_LoadFileAndFingerprint(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "hw.yaml")
	if err := os.WriteFile(p, []byte("architectures: {SunUltra1: {speed: 1}, x86_64: {speed: 30}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hw, err := LoadHardware(p)
	if err != nil {
		t.Fatal(err)
	}
	same, _ := ParseHardware([]byte("architectures: {x86_64: {speed: 30}, SunUltra1: {speed: 1}}"), "x")
	other, _ := ParseHardware([]byte("architectures: {x86_64: {speed: 31}, SunUltra1: {speed: 1}}"), "x")
	if hw.Fingerprint() != same.Fingerprint() {
		t.Error("same content, different fingerprints")
	}
	if hw.Fingerprint() == other.Fingerprint() {
		t.Error("different speeds, same fingerprint")
	}
	if _, err := LoadHardware(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("missing file loaded")
	}
}

func TestHardware_EffectiveSpeed(t *testing.T) {
	hw := DefaultHardware()
	cases := []struct {
		h       HostSpec
		want    float64
		wantErr bool
	}{
		{HostSpec{"SunUltra5", 0}, 1.6, false},
		{HostSpec{"SunUltra5", 1}, 0.8, false}, // 1.6/(1+1)
		{HostSpec{"x86_64", 4}, 5, false},      // 25/(1+4)
		{HostSpec{"SunUltra1", -1}, 0, true},
		{HostSpec{"nope", 0}, 0, true},
	}
	for _, c := range cases {
		got, err := hw.EffectiveSpeed(c.h)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("%+v: got %v, %v; want %v (error %v)", c.h, got, err, c.want, c.wantErr)
		}
	}
}

func TestValidName(t *testing.T) {
	for s, want := range map[string]bool{
		"SunUltra1": true, "x86_64": true, "C_cpu": true, "a-b.c": true, "_x": true,
		"": false, "1a": false, "a b": false, "a,b": false, "a=b": false, "a|b": false, "a:b": false, "-a": false,
	} {
		if ValidName(s) != want {
			t.Errorf("ValidName(%q) = %v", s, !want)
		}
	}
}
