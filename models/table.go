package models

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// tableModel is the "table" kind: measured run times per host count, e.g.
//
//	name: particles-measured
//	kind: table
//	data:
//	  reference: SunUltra1          # where `times` was measured (default "generic")
//	  times: {1: 1000, 2: 520, 4: 290, 8: 180}
//	  arch:                         # optional rows measured on other architectures
//	    x86_64: {1: 38, 4: 11}
//
// Each row gives idle-host run times in seconds for some host counts. For i
// hosts, a row is read by linear interpolation in the host count between the
// two nearest measured counts. Outside the measured counts the row is
// extrapolated conservatively: above the largest count c_max the time stays
// T(c_max) (clamped: no speedup beyond what was measured is assumed); below
// the smallest count c_min the work is conserved, T(i) = T(c_min)·c_min/i (a
// clamp there would predict that fewer hosts finish as early as more, which
// the scheduler would exploit).
//
// A host h of architecture a with its own row takes T_a(i)·(1+load_h); a host
// whose architecture has no row takes T_ref(i)·speed(ref)/speed(a)·(1+load_h),
// the reference row scaled by relative speed. The work is split evenly, so the
// run time is the largest of these over the host vector. The kind takes no
// parameters.
type tableModel struct {
	name string
	hw   *Hardware
	ref  Arch
	refT row
	rows map[string]row
}

// row is one measured curve, sorted by host count.
type row []point

type point struct{ n, t float64 }

type tableData struct {
	Reference string                     `yaml:"reference"`
	Times     map[int]float64            `yaml:"times"`
	Arch      map[string]map[int]float64 `yaml:"arch"`
}

func newTable(spec Spec, hw *Hardware) (Model, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("models: %s: model %q: "+format, append([]any{spec.Source, spec.Name}, args...)...)
	}
	if hw == nil {
		return nil, fail("nil hardware database")
	}
	if len(spec.Params) > 0 {
		return nil, fail("kind table takes no params")
	}
	if spec.Data.Kind == 0 {
		return nil, fail("kind table needs data: {times: {hosts: seconds, ...}}")
	}
	if err := CheckFields(&spec.Data, "reference", "times", "arch"); err != nil {
		return nil, fail("data: %w", err)
	}
	var d tableData
	if err := spec.Data.Decode(&d); err != nil {
		return nil, fail("data: %w", err)
	}
	if d.Reference == "" {
		d.Reference = "generic"
	}
	ref, err := hw.Lookup(d.Reference)
	if err != nil {
		return nil, fail("data.reference: %w", err)
	}
	m := &tableModel{name: spec.Name, hw: hw, ref: ref, rows: make(map[string]row)}
	if m.refT, err = newRow(d.Times); err != nil {
		return nil, fail("data.times: %w", err)
	}
	for a, times := range d.Arch {
		if a == ref.Name {
			return nil, fail("data.arch.%s: the reference architecture's times belong in data.times", a)
		}
		if _, err := hw.Lookup(a); err != nil {
			return nil, fail("data.arch: %w", err)
		}
		if m.rows[a], err = newRow(times); err != nil {
			return nil, fail("data.arch.%s: %w", a, err)
		}
	}
	m.rows[ref.Name] = m.refT
	return m, nil
}

func newRow(times map[int]float64) (row, error) {
	if len(times) == 0 {
		return nil, fmt.Errorf("no measurements")
	}
	r := make(row, 0, len(times))
	for n, t := range times {
		if n < 1 {
			return nil, fmt.Errorf("host count %d < 1", n)
		}
		if !(t > 0) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("time for %d hosts must be positive, got %v", n, t)
		}
		r = append(r, point{float64(n), t})
	}
	slices.SortFunc(r, func(a, b point) int { return int(a.n - b.n) })
	return r, nil
}

// at reads the row at host count i (see tableModel for the extrapolation).
func (r row) at(i float64) float64 {
	first, last := r[0], r[len(r)-1]
	switch {
	case i <= first.n:
		return first.t * first.n / i
	case i >= last.n:
		return last.t
	}
	k, _ := slices.BinarySearchFunc(r, i, func(p point, i float64) int {
		switch {
		case p.n < i:
			return -1
		case p.n > i:
			return 1
		}
		return 0
	})
	if r[k].n == i {
		return r[k].t
	}
	lo, hi := r[k-1], r[k]
	return lo.t + (hi.t-lo.t)*(i-lo.n)/(hi.n-lo.n)
}

// HostOrderIrrelevant reports true: the prediction is a maximum over hosts.
func (m *tableModel) HostOrderIrrelevant() bool { return true }

// Predict implements Model.
func (m *tableModel) Predict(ctx context.Context, s Scenario) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	for p := range s.Params {
		return 0, fmt.Errorf("models: model %q (table): unknown parameter %q (the kind takes none)", m.name, p)
	}
	if len(s.Hosts) == 0 {
		return 0, fmt.Errorf("models: no hosts")
	}
	i := float64(len(s.Hosts))
	var worst float64
	for _, h := range s.Hosts {
		a, err := m.hw.Lookup(h.Arch)
		if err != nil {
			return 0, err
		}
		if !(h.Load >= 0) || math.IsInf(h.Load, 0) {
			return 0, fmt.Errorf("models: host %s: invalid load %v", h.Arch, h.Load)
		}
		var t float64
		if r, ok := m.rows[a.Name]; ok {
			t = r.at(i)
		} else {
			t = m.refT.at(i) * m.ref.Speed / a.Speed
		}
		worst = max(worst, t*(1+h.Load))
	}
	return worst, nil
}
