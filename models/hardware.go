package models

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// DefaultLoadStep is the load step used when a hardware file names none: a
// quarter of a run-queue slot is finer than load averages are meaningful.
const DefaultLoadStep = 0.25

//go:embed hardware.yaml
var defaultHardwareYAML []byte

// Arch is one hardware model: an architecture and how fast it is.
type Arch struct {
	Name string
	// Speed is relative to the reference machine (1.0).
	Speed float64
	// LoadStep is the granularity of cached loads: the evaluator rounds a
	// host's load to the nearest multiple of it.
	LoadStep float64
}

// Hardware is a read-only hardware database: architecture name → Arch. It
// is safe for concurrent use.
type Hardware struct {
	archs       map[string]Arch
	fingerprint string
}

type hardwareFile struct {
	DefaultLoadStep float64                 `yaml:"default_load_step"`
	Architectures   map[string]hardwareArch `yaml:"architectures"`
}

type hardwareArch struct {
	Speed    float64 `yaml:"speed"`
	LoadStep float64 `yaml:"load_step"`
}

// DefaultHardware returns the embedded default database (hardware.yaml in
// this package): a few real architectures and "generic" at speed 1.
func DefaultHardware() *Hardware {
	hw, err := ParseHardware(defaultHardwareYAML, "embedded hardware.yaml")
	if err != nil {
		panic(err) // the embedded file is tested; this cannot happen at run time
	}
	return hw
}

// LoadHardware reads a hardware database from a YAML file.
func LoadHardware(path string) (*Hardware, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	return ParseHardware(data, path)
}

// ParseHardware parses a hardware database. source names it in errors. The
// format is strict: unknown fields are errors, every speed must be positive
// and finite, every load step positive, every name a ValidName.
func ParseHardware(data []byte, source string) (*Hardware, error) {
	var f hardwareFile
	if err := decodeStrict(data, &f); err != nil {
		return nil, fmt.Errorf("models: hardware %s: %w", source, err)
	}
	if f.DefaultLoadStep == 0 {
		f.DefaultLoadStep = DefaultLoadStep
	}
	if !(f.DefaultLoadStep > 0) || math.IsInf(f.DefaultLoadStep, 0) {
		return nil, fmt.Errorf("models: hardware %s: default_load_step must be positive, got %v", source, f.DefaultLoadStep)
	}
	if len(f.Architectures) == 0 {
		return nil, fmt.Errorf("models: hardware %s: no architectures", source)
	}
	hw := &Hardware{archs: make(map[string]Arch, len(f.Architectures))}
	for name, a := range f.Architectures {
		if !ValidName(name) {
			return nil, fmt.Errorf("models: hardware %s: invalid architecture name %q", source, name)
		}
		if !(a.Speed > 0) || math.IsInf(a.Speed, 0) {
			return nil, fmt.Errorf("models: hardware %s: architecture %q: speed must be positive, got %v", source, name, a.Speed)
		}
		if a.LoadStep == 0 {
			a.LoadStep = f.DefaultLoadStep
		}
		if !(a.LoadStep > 0) || math.IsInf(a.LoadStep, 0) {
			return nil, fmt.Errorf("models: hardware %s: architecture %q: load_step must be positive, got %v", source, name, a.LoadStep)
		}
		hw.archs[name] = Arch{Name: name, Speed: a.Speed, LoadStep: a.LoadStep}
	}
	hw.fingerprint = hw.computeFingerprint()
	return hw, nil
}

// Lookup returns the named architecture, or an error naming it.
func (hw *Hardware) Lookup(name string) (Arch, error) {
	a, ok := hw.archs[name]
	if !ok {
		return Arch{}, fmt.Errorf("models: unknown architecture %q", name)
	}
	return a, nil
}

// Names returns the architecture names, sorted.
func (hw *Hardware) Names() []string {
	names := make([]string, 0, len(hw.archs))
	for n := range hw.archs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// EffectiveSpeed is the speed a job sees on host h: the architecture's speed
// shared with the load already running there, s_h = speed(arch_h)/(1+load_h).
func (hw *Hardware) EffectiveSpeed(h HostSpec) (float64, error) {
	a, err := hw.Lookup(h.Arch)
	if err != nil {
		return 0, err
	}
	if !(h.Load >= 0) || math.IsInf(h.Load, 0) {
		return 0, fmt.Errorf("models: host %s: invalid load %v", h.Arch, h.Load)
	}
	return a.Speed / (1 + h.Load), nil
}

// Fingerprint identifies the database's content (names, speeds, steps). It
// goes into model fingerprints, so a persistent cache never serves a
// prediction made with other speeds.
func (hw *Hardware) Fingerprint() string { return hw.fingerprint }

func (hw *Hardware) computeFingerprint() string {
	var b strings.Builder
	for _, n := range hw.Names() {
		a := hw.archs[n]
		b.WriteString(n)
		b.WriteByte(' ')
		b.WriteString(strconv.FormatFloat(a.Speed, 'g', -1, 64))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatFloat(a.LoadStep, 'g', -1, 64))
		b.WriteByte('\n')
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}
