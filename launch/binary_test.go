package launch

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestFindShepherd(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "msched")
	sib := filepath.Join(dir, ShepherdBinary)

	exe, args, how := findShepherd(self)
	if exe != self || len(args) != 1 || args[0] != "shepherd" || !strings.Contains(how, "no "+ShepherdBinary) {
		t.Errorf("no sibling: %q %q (%s), want %s shepherd", exe, args, how, self)
	}

	script := func(body string) {
		t.Helper()
		if err := os.WriteFile(sib, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script(`echo 0123456789abcdef`) // a shepherd of another build
	exe, args, how = findShepherd(self)
	if exe != self || len(args) != 1 || !strings.Contains(how, "passed over") {
		t.Errorf("stale sibling: %q %q (%s), want the fallback", exe, args, how)
	}
	script(`exit 3`) // broken
	if exe, _, how = findShepherd(self); exe != self {
		t.Errorf("broken sibling chosen: %s (%s)", exe, how)
	}

	script(`[ "$1" = --protocol ] && echo ` + Protocol())
	exe, args, how = findShepherd(self)
	if exe != sib || args != nil {
		t.Errorf("matching sibling: %q %q (%s), want %s", exe, args, how, sib)
	}
}

// The fingerprint changes with the shapes the two sides exchange.
func TestProtocol(t *testing.T) {
	if p := Protocol(); len(p) != 16 || p != Protocol() {
		t.Errorf("Protocol() = %q, want 16 stable hex digits", p)
	}
	// Types of one name, as two builds' Spec would be: only their fields differ.
	shapes := []reflect.Type{
		func() reflect.Type {
			type Spec struct {
				A string `json:"a"`
			}
			return reflectType[Spec]()
		}(),
		func() reflect.Type {
			type Spec struct {
				A string `json:"a"`
				B int    `json:"b"`
			}
			return reflectType[Spec]()
		}(),
		func() reflect.Type {
			type Spec struct {
				A string `json:"aa"`
			}
			return reflectType[Spec]()
		}(),
		func() reflect.Type {
			type Spec struct {
				A int `json:"a"`
			}
			return reflectType[Spec]()
		}(),
	}
	seen := map[string]int{}
	for i, st := range shapes {
		var b strings.Builder
		describe(&b, st)
		if j, dup := seen[b.String()]; dup {
			t.Errorf("shapes %d and %d describe the same: %s", j, i, b.String())
		}
		seen[b.String()] = i
	}
}
