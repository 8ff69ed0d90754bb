package controller

import (
	"fmt"

	"github.com/kube-semaphore/semaphore/components/wireguard/perremote"
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

// Decode parses the variable's value (envconfig.Decoder). One source for every remote, or
// pairs; not both.
func (s *Sources) Decode(value string) error {
	*s = Sources{}
	v, err := perremote.Parse(value, "source", parseSource)
	if err != nil {
		return err
	}
	if v.HasRest && len(v.ByRemote) > 0 {
		return fmt.Errorf("%q: one source for every remote or remote:source pairs, not both", value)
	}
	s.All, s.ByRemote = v.Rest, v.ByRemote
	return nil
}

// CheckRemotes reports a remote named in the pairs that is not one of remotes.
func (s Sources) CheckRemotes(remotes []string) error {
	return perremote.Values[Source]{ByRemote: s.ByRemote}.CheckRemotes(remotes)
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

func parseSource(v string) (Source, error) {
	if v != string(SourceNode) && v != string(SourceCalicoIPAM) {
		return "", fmt.Errorf("%q is not node or calico-ipam", v)
	}
	return Source(v), nil
}
