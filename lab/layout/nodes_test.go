package layout

import (
	"slices"
	"testing"
)

// Every node of a cluster is in a zone of its own, named after the cluster.
func TestNodeZones(t *testing.T) {
	rec := &Record{Nodes: &Nodes{Nodes: LabNodes(t.TempDir())}}
	for _, c := range ClusterNames() {
		if got, want := rec.LocalZones(c), []string{c + "-a", c + "-b"}; !slices.Equal(got, want) {
			t.Errorf("zones of %s: %v, want %v", c, got, want)
		}
	}
	if got := (&Record{Nodes: &Nodes{Skipped: "no root"}}).LocalZones("gcp"); len(got) != 0 {
		t.Errorf("zones without nodes: %v", got)
	}
}
