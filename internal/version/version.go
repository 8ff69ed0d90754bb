// Package version holds the version of every program Semaphore ships, set at build time: the
// components (their *_build_info metric) and the kubectl plugin (`kubectl semaphore version`).
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is the release's version, set with
// -ldflags "-X github.com/kube-semaphore/semaphore/internal/version.Version=v1.2.3" by
// `make build`, `make images` and `make release`; "dev" for a plain go build.
var Version = "dev"

// Build describes the running program: its release, the Go it was built with, its platform,
// and the commit it was built from where the Go toolchain stamped one (a go build in a git
// checkout; not the release's builds, which are reproducible and leave it out).
type Build struct {
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	// Revision is the commit (vcs.revision), Modified whether the work tree had changes
	// (vcs.modified).
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

// Current is the running program's Build.
func Current() Build {
	info, _ := debug.ReadBuildInfo()
	return fromBuildInfo(info)
}

// fromBuildInfo is the Build of a program with build info info (nil when it has none).
func fromBuildInfo(info *debug.BuildInfo) Build {
	b := Build{Version: Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info == nil {
		return b
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the Build on one line: "v1.2.3 (go1.25.1, linux/amd64)", with the revision, and
// "modified", after the platform when known.
func (b Build) String() string {
	s := b.Version + " (" + b.GoVersion + ", " + b.Platform
	if b.Revision != "" {
		s += ", revision " + b.Revision
		if b.Modified {
			s += ", modified"
		}
	}
	return s + ")"
}
