// Package dist builds the artifacts of a release that are not images (internal/tooling/images builds
// those): the kubectl plugin's archives for every platform it is released for, the charts
// packaged with the release's version, SHA256SUMS over all of them, the plugin's krew manifest
// and the release notes taken from CHANGELOG.md. hack/release drives it (`make release`).
package dist
