// Package version holds the version of every program Semaphore ships, set at build time: the
// components (their *_build_info metric) and the kubectl plugin (`kubectl semaphore version`).
package version

// Version is the release's version, set with
// -ldflags "-X github.com/kube-semaphore/semaphore/internal/version.Version=v1.2.3" by
// `make build`, `make images` and `make release`; "dev" for a plain go build.
var Version = "dev"
