package models

import (
	"fmt"
	"math"
	"os"

	"gopkg.in/yaml.v3"
)

// Spec is one model file, e.g.
//
//	name: particles
//	kind: warwick
//	description: N-body code measured on the Ultra 1 cluster
//	params: {C_cpu: 2000, C_com: 4}
//
// Params are defaults: a job's own params override them by name. Data is a
// kind-specific body (the table kind keeps its measurements there); a kind
// that reads it must check its fields with CheckFields.
type Spec struct {
	Name        string             `yaml:"name"`
	Kind        string             `yaml:"kind"`
	Description string             `yaml:"description,omitempty"`
	Params      map[string]float64 `yaml:"params,omitempty"`
	Data        yaml.Node          `yaml:"data,omitempty"`
	// Source is the file the spec was read from (not part of the YAML).
	Source string `yaml:"-"`
}

// ReadSpec reads and checks one model file.
func ReadSpec(path string) (Spec, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Spec{}, nil, fmt.Errorf("models: %w", err)
	}
	s, err := ParseSpec(data, path)
	return s, data, err
}

// ParseSpec parses one model file strictly; source names it in errors. It
// checks the fields every kind shares; the kind's factory checks the rest.
func ParseSpec(data []byte, source string) (Spec, error) {
	var s Spec
	if err := decodeStrict(data, &s); err != nil {
		return Spec{}, fmt.Errorf("models: %s: %w", source, err)
	}
	s.Source = source
	switch {
	case s.Name == "":
		return Spec{}, fmt.Errorf("models: %s: missing field \"name\"", source)
	case !ValidName(s.Name):
		return Spec{}, fmt.Errorf("models: %s: invalid model name %q", source, s.Name)
	case s.Kind == "":
		return Spec{}, fmt.Errorf("models: %s: model %q: missing field \"kind\"", source, s.Name)
	}
	for p, v := range s.Params {
		if !ValidName(p) {
			return Spec{}, fmt.Errorf("models: %s: model %q: invalid parameter name %q", source, s.Name, p)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Spec{}, fmt.Errorf("models: %s: model %q: parameter %q is not finite", source, s.Name, p)
		}
	}
	return s, nil
}
