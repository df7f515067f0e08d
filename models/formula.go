package models

import (
	"context"
	"fmt"
	"math"
)

// param is one parameter of a closed-form kind and the values it admits.
type param struct {
	name string
	rule string // what ok checks, for error messages
	ok   func(float64) bool
}

func positive(v float64) bool    { return v > 0 }
func nonNegative(v float64) bool { return v >= 0 }
func fraction(v float64) bool    { return v >= 0 && v <= 1 }
func atLeastOne(v float64) bool  { return v >= 1 }

// formula is the shared machinery of the closed-form built-in kinds
// (warwick, amdahl, downey): named parameters with defaults from the model
// file, and a run time computed from the parameter values, the host count i
// and the slowest effective speed s_min.
type formula struct {
	name     string // the model's name, for errors
	kind     string
	hw       *Hardware
	params   []param // eval receives the values in this order
	defaults map[string]float64
	eval     func(p []float64, i int, sMin float64) float64
}

// HostOrderIrrelevant reports true: every closed-form kind depends on the
// host vector only through i and s_min.
func (f *formula) HostOrderIrrelevant() bool { return true }

func newFormula(spec Spec, hw *Hardware, params []param, eval func([]float64, int, float64) float64) (*formula, error) {
	if hw == nil {
		return nil, fmt.Errorf("models: %s: model %q: nil hardware database", spec.Source, spec.Name)
	}
	if spec.Data.Kind != 0 {
		return nil, fmt.Errorf("models: %s: model %q: line %d: kind %s takes no data", spec.Source, spec.Name, spec.Data.Line, spec.Kind)
	}
	f := &formula{name: spec.Name, kind: spec.Kind, hw: hw, params: params, defaults: spec.Params, eval: eval}
	// Check the defaults the file gives now, so a bad file fails at load
	// time rather than at the first prediction.
	if err := f.check(spec.Params); err != nil {
		return nil, fmt.Errorf("models: %s: %w", spec.Source, err)
	}
	return f, nil
}

// check rejects unknown parameter names and values outside a parameter's
// rule.
func (f *formula) check(ps map[string]float64) error {
	for n, v := range ps {
		var p *param
		for k := range f.params {
			if f.params[k].name == n {
				p = &f.params[k]
			}
		}
		if p == nil {
			names := make([]string, len(f.params))
			for k := range f.params {
				names[k] = f.params[k].name
			}
			return fmt.Errorf("model %q (%s): unknown parameter %q (parameters: %v)", f.name, f.kind, n, names)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || !p.ok(v) {
			return fmt.Errorf("model %q (%s): parameter %s = %v, want %s", f.name, f.kind, n, v, p.rule)
		}
	}
	return nil
}

// Predict implements Model: the job's parameters override the model file's
// defaults by name; a parameter that neither gives is an error naming it.
func (f *formula) Predict(ctx context.Context, s Scenario) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := f.check(s.Params); err != nil {
		return 0, fmt.Errorf("models: %w", err)
	}
	p := make([]float64, len(f.params))
	for k, prm := range f.params {
		v, ok := s.Params[prm.name]
		if !ok {
			v, ok = f.defaults[prm.name]
		}
		if !ok {
			return 0, fmt.Errorf("models: model %q (%s): missing parameter %q", f.name, f.kind, prm.name)
		}
		p[k] = v
	}
	i, sMin, err := slowest(f.hw, s.Hosts)
	if err != nil {
		return 0, err
	}
	return f.eval(p, i, sMin), nil
}
