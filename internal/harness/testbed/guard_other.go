//go:build !linux

package testbed

// guardChildren is Linux-only: elsewhere a test binary that dies without stopping its clusters
// leaves their processes running.
func guardChildren() {}
