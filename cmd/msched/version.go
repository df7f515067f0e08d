package main

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// version is what `msched --version` prints after "msched ": the module's
// version (a tag when installed with go install msched/cmd/msched@v1.2.3,
// "(devel)" when built in a checkout), the commit it was built from and
// when that was made, "modified" when the tree had uncommitted changes,
// and the Go toolchain and platform.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(no build information) " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	}
	return versionOf(bi, runtime.GOOS+"/"+runtime.GOARCH)
}

// versionOf renders bi (see version).
func versionOf(bi *debug.BuildInfo, platform string) string {
	v := bi.Main.Version
	if v == "" {
		v = "(unknown)"
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	parts := []string{v}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		c := "commit " + rev
		var notes []string
		if at != "" {
			notes = append(notes, at)
		}
		if modified {
			notes = append(notes, "modified")
		}
		if len(notes) > 0 {
			c += " (" + strings.Join(notes, ", ") + ")"
		}
		parts = append(parts, c)
	}
	return strings.Join(append(parts, bi.GoVersion, platform), " ")
}
