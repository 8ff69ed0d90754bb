package ownership_test

import (
	"maps"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/ownership"
)

var keys = ownership.SourceKeys{Component: "c", Cluster: "x/cluster", Namespace: "x/namespace", Name: "x/name"}

// A source written into labels reads back the same, and an object missing any part of it has
// no source.
func TestSourceKeysRoundTrip(t *testing.T) {
	src := ownership.Source{Cluster: "aws", Namespace: "sys-log", Name: "fluentd"}
	l := keys.Labels(src)
	if !ownership.IsManagedBy(l, "c") {
		t.Errorf("Labels(%v) = %v: not managed by the component", src, l)
	}
	if got, ok := keys.SourceOf(l); !ok || got != src {
		t.Errorf("SourceOf(Labels(%v)) = %v, %v", src, got, ok)
	}
	for _, missing := range []string{keys.Cluster, keys.Namespace, keys.Name} {
		partial := maps.Clone(l)
		delete(partial, missing)
		if got, ok := keys.SourceOf(partial); ok {
			t.Errorf("SourceOf without %s = %v, true; want false", missing, got)
		}
	}
	if got := src.String(); got != "aws/sys-log/fluentd" {
		t.Errorf("String() = %q", got)
	}
}
