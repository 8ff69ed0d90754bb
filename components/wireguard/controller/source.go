package controller

import (
	"fmt"

	"github.com/kube-semaphore/semaphore/internal/remotepairs"
)

// Source is where a remote node's pod addresses come from.
type Source string

const (
	// SourceNode reads each remote node's spec.podCIDRs.
	SourceNode Source = "node"
	// SourceCalicoIPAM reads the remote's Calico IPAM blocks: the blocks affine to each node,
	// and every address a pod on that node borrowed from another block.
	SourceCalicoIPAM Source = "calico-ipam"
)

// Sources is SEMAPHORE_WG_POD_CIDRS_FROM: one source for every remote ("calico-ipam"), or
// remote:source pairs ("aws:calico-ipam,merit:node"); remotes not named read SourceNode.
type Sources struct {
	// All is the source of every remote not in ByRemote; empty means SourceNode.
	All      Source
	ByRemote map[string]Source
}

// Decode parses the variable's value (envconfig.Decoder).
func (s *Sources) Decode(value string) error {
	*s = Sources{}
	items := remotepairs.Split(value)
	if len(items) == 1 && !items[0].Pair {
		if !isSource(items[0].Value) {
			return fmt.Errorf("%q is not node or calico-ipam", items[0].Value)
		}
		s.All = Source(items[0].Value)
		return nil
	}
	for _, item := range items {
		if item.Remote == "" {
			return fmt.Errorf("%q is not remote:source", item.Text)
		}
		if !isSource(item.Value) {
			return fmt.Errorf("source %q of %q is not node or calico-ipam", item.Value, item.Remote)
		}
		if _, dup := s.ByRemote[item.Remote]; dup {
			return fmt.Errorf("remote %q is named twice", item.Remote)
		}
		if s.ByRemote == nil {
			s.ByRemote = map[string]Source{}
		}
		s.ByRemote[item.Remote] = Source(item.Value)
	}
	return nil
}

// For returns the source of a remote.
func (s Sources) For(remote string) Source {
	if src, ok := s.ByRemote[remote]; ok {
		return src
	}
	if s.All != "" {
		return s.All
	}
	return SourceNode
}

func isSource(v string) bool {
	return v == string(SourceNode) || v == string(SourceCalicoIPAM)
}
