package controller

import (
	"fmt"
	"strings"
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
	value = strings.TrimSpace(value)
	if value == "" {
		return nil
	}
	if !strings.Contains(value, ":") {
		if !isSource(value) {
			return fmt.Errorf("%q is not node or calico-ipam", value)
		}
		s.All = Source(value)
		return nil
	}
	s.ByRemote = map[string]Source{}
	for _, pair := range strings.Split(value, ",") {
		remote, src, ok := strings.Cut(strings.TrimSpace(pair), ":")
		if !ok || remote == "" {
			return fmt.Errorf("%q is not remote:source", pair)
		}
		if !isSource(src) {
			return fmt.Errorf("source %q of %q is not node or calico-ipam", src, remote)
		}
		if _, dup := s.ByRemote[remote]; dup {
			return fmt.Errorf("remote %q is named twice", remote)
		}
		s.ByRemote[remote] = Source(src)
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
