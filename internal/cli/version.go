package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version describes the running binary's build: the main module's version when it
// was built from a tagged module (go install ...@v1.2.3), else the VCS revision it
// was built from (with "+dirty" for uncommitted changes), else "(devel)".
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	return versionOf(bi)
}

// versionOf is Version for the given build information.
func versionOf(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, when, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return "(devel)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if when != "" {
		return fmt.Sprintf("(devel) %s%s %s", rev, dirty, when)
	}
	return "(devel) " + rev + dirty
}

// VersionLine is what -version prints: the program's name, its version and the Go
// release that built it.
func VersionLine(prog string) string {
	return fmt.Sprintf("%s %s %s %s/%s", prog, Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
