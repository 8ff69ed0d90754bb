//go:build tools

package conformance

// The suite is run as its own test binary (`go test -c sigs.k8s.io/mcs-api/conformance`,
// Build), which nothing of ours imports: this import, built by no build, keeps it and its
// dependencies in go.mod for `go mod tidy`.
import _ "sigs.k8s.io/mcs-api/conformance"
