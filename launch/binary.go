package launch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"
)

// ShepherdBinary is the dedicated shepherd (cmd/msched-shepherd). Installed
// next to the msched binary (`go install ./cmd/...`), it is what Local runs
// by default: it links nothing but this package and the standard library,
// none of it using cgo (TestShepherdBinaryLinksNoCgo), so it is static and
// starts in about a third of the CPU time that a re-executed msched
// (dynamically linked, with every package's init) takes, and a shepherd is
// exec'd for every job.
const ShepherdBinary = "msched-shepherd"

// protocolFlag asks a shepherd binary for its Protocol instead of a spec.
const protocolFlag = "--protocol"

// Protocol fingerprints what a shepherd and its daemon exchange: the JSON
// shapes of Spec, Result and PidFile, and of this package's types inside
// them (Identity, SSH…). A shepherd binary is used only if it prints the
// same fingerprint as the daemon's own build, so a stale msched-shepherd
// left next to a newer msched is passed over, not trusted.
func Protocol() string {
	h := sha256.New()
	seen := map[reflect.Type]bool{}
	for _, t := range []reflect.Type{reflectType[Spec](), reflectType[Result](), reflectType[PidFile]()} {
		describe(h, t, seen)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

func reflectType[T any]() reflect.Type { return reflect.TypeOf((*T)(nil)).Elem() }

// describe writes the fields of struct type t, then those of the struct
// types of this package that its fields hold (through pointers, slices and
// maps), each once.
func describe(w interface{ Write([]byte) (int, error) }, t reflect.Type, seen map[reflect.Type]bool) {
	if seen[t] {
		return
	}
	seen[t] = true
	fmt.Fprintf(w, "%s{", t.Name())
	var inner []reflect.Type
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		fmt.Fprintf(w, "%s %s %q;", f.Name, f.Type, f.Tag.Get("json"))
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft.PkgPath() == t.PkgPath() {
			inner = append(inner, ft)
		}
	}
	fmt.Fprint(w, "}")
	for _, ft := range inner {
		describe(w, ft, seen)
	}
}

// DefaultShepherd is what a Local with no Exe runs: ShepherdBinary in the
// directory of this executable when it is there and speaks this build's
// Protocol, else this executable with the "shepherd" sub-command (which is
// what `go run ./cmd/msched` gets). The choice is made once per process;
// how says which, for the daemon's log.
func DefaultShepherd() (exe string, args []string, how string, err error) {
	defaultOnce.Do(func() {
		self, err := os.Executable()
		if err != nil {
			defaultErr = fmt.Errorf("launch: %w", err)
			return
		}
		defaultExe, defaultArgs, defaultHow = findShepherd(self)
	})
	return defaultExe, defaultArgs, defaultHow, defaultErr
}

var (
	defaultOnce            sync.Once
	defaultExe, defaultHow string
	defaultArgs            []string
	defaultErr             error
)

// findShepherd chooses the shepherd for the msched binary self.
func findShepherd(self string) (exe string, args []string, how string) {
	sib := filepath.Join(filepath.Dir(self), ShepherdBinary)
	if _, err := os.Stat(sib); err != nil {
		return self, []string{"shepherd"}, fmt.Sprintf("%s shepherd (no %s next to it: `go install ./cmd/...` for faster job starts)", self, ShepherdBinary)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, sib, protocolFlag).Output()
	if got, want := strings.TrimSpace(string(out)), Protocol(); err != nil || got != want {
		why := fmt.Sprintf("protocol %q, want %q", got, want)
		if err != nil {
			why = err.Error()
		}
		return self, []string{"shepherd"}, fmt.Sprintf("%s shepherd (%s passed over: %s)", self, sib, why)
	}
	return sib, nil, sib
}
