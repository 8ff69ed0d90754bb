package controller_test

import (
	"testing"

	"github.com/kube-semaphore/semaphore/components/wireguard/controller"
)

func TestSourcesReadOneValueForAllOrPairs(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  map[string]controller.Source
	}{
		{"", map[string]controller.Source{"aws": controller.SourceNode, "merit": controller.SourceNode}},
		{"node", map[string]controller.Source{"aws": controller.SourceNode, "merit": controller.SourceNode}},
		{"calico-ipam", map[string]controller.Source{"aws": controller.SourceCalicoIPAM, "merit": controller.SourceCalicoIPAM}},
		{"aws:calico-ipam", map[string]controller.Source{"aws": controller.SourceCalicoIPAM, "merit": controller.SourceNode}},
		{" aws:calico-ipam, merit:node ", map[string]controller.Source{"aws": controller.SourceCalicoIPAM, "merit": controller.SourceNode}},
		// Empty items are skipped, as in every per-remote setting (remotepairs).
		{"aws:calico-ipam,,merit:node,", map[string]controller.Source{"aws": controller.SourceCalicoIPAM, "merit": controller.SourceNode}},
	} {
		var s controller.Sources
		if err := s.Decode(tc.value); err != nil {
			t.Errorf("Decode(%q): %v", tc.value, err)
			continue
		}
		for remote, want := range tc.want {
			if got := s.For(remote); got != want {
				t.Errorf("Decode(%q).For(%s) = %s, want %s", tc.value, remote, got, want)
			}
		}
	}
}

func TestSourcesRefuseWhatTheyCannotRead(t *testing.T) {
	for _, value := range []string{"calico", "aws:ipam", "aws:", ":node", "aws:node,aws:calico-ipam", "node,aws:calico-ipam", "node,calico-ipam"} {
		var s controller.Sources
		if err := s.Decode(value); err == nil {
			t.Errorf("Decode(%q) = %+v, want an error", value, s)
		}
	}
}
