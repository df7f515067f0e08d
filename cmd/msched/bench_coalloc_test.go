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
	out, err := runBenchCoalloc(t, "--jobs", "3000", "--bin-fills", "200", "--seed", "2", "--json")
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

// The table names the fit, and --fit worst changes unordered placements;
// a fit that does not exist is an error.
func TestBenchCoalloc_TableAndFit(t *testing.T) {
	out, err := runBenchCoalloc(t, "--jobs", "2000", "--bin-fills", "100", "--fit", "worst")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"worst fit", "saturated", "bin fill", "0.608", "MaxJumps"} {
		if !strings.Contains(out, s) {
			t.Errorf("no %q in:\n%s", s, out)
		}
	}
	if _, err := runBenchCoalloc(t, "--jobs", "100", "--fit", "best"); err == nil || !strings.Contains(err.Error(), "best") {
		t.Errorf("--fit best: %v", err)
	}
}
