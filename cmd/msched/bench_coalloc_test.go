package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// runBenchCoalloc runs `msched bench coalloc` with args and returns its
// standard output.
func runBenchCoalloc(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newBenchCoallocCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// --json prints exactly one object of the documented shape.
func TestBenchCoalloc_JSON(t *testing.T) {
	out, err := runBenchCoalloc(t, "--jobs", "500", "--bin-fills", "20", "--seed", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	var obj struct {
		MaxUtil      map[string]float64 `json:"max_util"`
		FPFSResponse map[string]float64 `json:"fpfs_response"`
	}
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if dec.More() {
		t.Errorf("more than one object: %s", out)
	}
	for _, k := range []string{"ordered_1_4", "unordered_1_4", "total_1_4", "ordered_1_8", "unordered_1_8", "total_1_8"} {
		if x := obj.MaxUtil[k]; !(x > 0.4 && x < 1) {
			t.Errorf("max_util.%s = %v", k, x)
		}
	}
	for _, k := range []string{"0", "7", "20"} {
		if x := obj.FPFSResponse[k]; !(x > 1) {
			t.Errorf("fpfs_response.%s = %v", k, x)
		}
	}
	if len(obj.MaxUtil) != 6 || len(obj.FPFSResponse) != 3 {
		t.Errorf("keys %v %v", obj.MaxUtil, obj.FPFSResponse)
	}
}

// The table names the fit, and --fit worst changes unordered placements
// only: against --fit first, an unordered row of the table differs and the
// ordered and total rows do not. A fit that does not exist is an error.
func TestBenchCoalloc_TableAndFit(t *testing.T) {
	args := []string{"--jobs", "2000", "--bin-fills", "100"}
	out, err := runBenchCoalloc(t, append(args, "--fit", "worst")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"worst fit", "saturated", "bin fill", "0.608", "MaxJumps"} {
		if !strings.Contains(out, s) {
			t.Errorf("no %q in:\n%s", s, out)
		}
	}
	first, err := runBenchCoalloc(t, append(args, "--fit", "first")...)
	if err != nil {
		t.Fatal(err)
	}
	// rows maps "U[1,n] request" to its figures, for the max_util table.
	rows := func(out string) map[string]string {
		m := map[string]string{}
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 2 && strings.HasPrefix(f[0], "U[1,") {
				m[f[0]+" "+f[1]] = strings.Join(f[2:], " ")
			}
		}
		return m
	}
	w, f := rows(out), rows(first)
	if len(w) != 6 || len(f) != 6 {
		t.Fatalf("max_util rows: worst %v, first %v", w, f)
	}
	changed := false
	for k := range f {
		if strings.HasSuffix(k, " unordered") {
			changed = changed || w[k] != f[k]
		} else if w[k] != f[k] {
			t.Errorf("%s: worst fit %q, first fit %q; want the same", k, w[k], f[k])
		}
	}
	if !changed {
		t.Errorf("--fit worst changed no unordered figure:\n%s", out)
	}
	if _, err := runBenchCoalloc(t, "--jobs", "100", "--fit", "best"); err == nil || !strings.Contains(err.Error(), "best") {
		t.Errorf("--fit best: %v", err)
	}
}

// Settings no figure can come from are refused before anything runs: a
// simulation of a few jobs once printed NaN (and --json failed on it after
// the whole run), and a negative count silently ran the defaults.
func TestBenchCoalloc_RefusesTooFew(t *testing.T) {
	for _, c := range []struct{ flag, value, want string }{
		{"--jobs", "1", "1 jobs per simulation; at least 100"},
		{"--jobs", "-3", "-3 jobs per simulation; at least 100"},
		{"--bin-fills", "-1", "-1 bin fills; at least 1"},
	} {
		out, err := runBenchCoalloc(t, c.flag, c.value, "--json")
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(out, "max_util") {
			t.Errorf("%s %s: %v\n%s", c.flag, c.value, err, out)
		}
	}
}
