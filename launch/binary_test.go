package launch

import (
	"os"
	"os/exec"
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
		// Only a type inside differs, as when a field of SSH changes.
		func() reflect.Type {
			type Inner struct {
				X string `json:"x"`
			}
			type Spec struct {
				I *Inner `json:"i"`
			}
			return reflectType[Spec]()
		}(),
		func() reflect.Type {
			type Inner struct {
				X int `json:"x"`
			}
			type Spec struct {
				I *Inner `json:"i"`
			}
			return reflectType[Spec]()
		}(),
	}
	seen := map[string]int{}
	for i, st := range shapes {
		var b strings.Builder
		describe(&b, st, map[reflect.Type]bool{})
		if j, dup := seen[b.String()]; dup {
			t.Errorf("shapes %d and %d describe the same: %s", j, i, b.String())
		}
		seen[b.String()] = i
	}
}

// msched-shepherd is a static binary (see ShepherdBinary): nothing it links
// may use cgo, which a C compiler being installed would switch on (os/user
// and net do, for example).
func TestShepherdBinaryLinksNoCgo(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command(gobin, "list", "-deps", "-f", "{{if .CgoFiles}}{{.ImportPath}}{{end}}", "msched/cmd/"+ShepherdBinary)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	if pkgs := strings.Fields(string(out)); len(pkgs) > 0 {
		t.Errorf("%s links packages that use cgo: %v", ShepherdBinary, pkgs)
	}
}
