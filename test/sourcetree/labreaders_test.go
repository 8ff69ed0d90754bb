package sourcetree_test

import (
	"slices"
	"testing"
)

// labReaders are the lab's packages that read a running lab without bringing one up: what `lab
// status` shows, and the MCS conformance suite run against the lab's clusters.
var labReaders = []string{"./lab/status", "./lab/conformance"}

// The lab's readers know what a lab is from lab/layout (its clusters, names and run record),
// never from lab/env, the machinery that builds, installs and tears it down: a change to how
// the lab comes up does not reach them, and they build without it.
func TestLabReadersLinkTheLayoutNotTheMachinery(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the build's packages with the go command")
	}
	deps := goList(t, append([]string{"-deps"}, labReaders...)...)
	if !slices.Contains(deps, module+"lab/layout") {
		t.Fatalf("go list -deps %v does not list lab/layout; it printed %d packages", labReaders, len(deps))
	}
	if slices.Contains(deps, module+"lab/env") {
		t.Errorf("%v link lab/env: take what they need of a lab from lab/layout", labReaders)
	}
}
