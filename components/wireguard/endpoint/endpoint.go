// Package endpoint chooses the address a node publishes as its WireGuard endpoint for each remote
// cluster: the address an operator put in the Node's override annotation, else the first address
// of the first of the remote's address types (SEMAPHORE_WG_ENDPOINT_ADDRESS_TYPES) the Node
// lists, else none: then the node cannot be reached, and its peers learn where it is from the
// handshakes it starts (WireGuard's roaming).
package endpoint

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-semaphore/semaphore/components/wireguard/perremote"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
)

// OverrideAnnotation is the annotation an operator sets on a Node to give the address it is
// reached at, whatever its addresses: it wins over the address types of every remote.
// semaphore-wireguard only reads it.
const OverrideAnnotation = "wireguard.semaphore.uw.io/endpoint-address"

// DefaultTypes are the address types of the remotes SEMAPHORE_WG_ENDPOINT_ADDRESS_TYPES does not
// give a list: the public address where the Node has one (1:1 NAT on a cloud), else its own.
var DefaultTypes = []corev1.NodeAddressType{corev1.NodeExternalIP, corev1.NodeInternalIP}

// Types is SEMAPHORE_WG_ENDPOINT_ADDRESS_TYPES: the Node address types to publish, in order of
// preference, as "ExternalIP,InternalIP" for every remote or "aws:InternalIP,gcp:ExternalIP" per
// remote; items without a remote are the list of the remotes not named.
type Types struct {
	perremote.Values[[]corev1.NodeAddressType]
}

// Decode parses the variable's value (envconfig.Decoder).
func (t *Types) Decode(value string) error {
	v, err := perremote.ParseLists(value, "type", parseType)
	if err != nil {
		return err
	}
	t.Values = v
	return nil
}

// For is the list of address types of remote.
func (t Types) For(remote string) []corev1.NodeAddressType {
	return t.Values.For(remote, DefaultTypes)
}

func parseType(s string) (corev1.NodeAddressType, error) {
	switch t := corev1.NodeAddressType(s); t {
	case corev1.NodeExternalIP, corev1.NodeInternalIP:
		return t, nil
	}
	return "", fmt.Errorf("%q is not ExternalIP or InternalIP", s)
}

// Override is the address of the node's OverrideAnnotation; set is false without one, and err
// says why one that is set cannot be used (not an IP address, or one no other node can send to).
func Override(node *corev1.Node) (addr netip.Addr, set bool, err error) {
	text, set := node.Annotations[OverrideAnnotation]
	if !set {
		return netip.Addr{}, false, nil
	}
	addr, err = netip.ParseAddr(text)
	if err != nil {
		return netip.Addr{}, true, fmt.Errorf("%s=%q: %w", OverrideAnnotation, text, err)
	}
	if !usable(addr) {
		return netip.Addr{}, true, fmt.Errorf("%s=%q: no other node can send to %s", OverrideAnnotation, text, addr)
	}
	return addr.Unmap(), true, nil
}

// FirstOfTypes is the first address of the first of types the node lists in status.addresses,
// skipping the ones no other node could send to; ok is false when there is none.
func FirstOfTypes(node *corev1.Node, types []corev1.NodeAddressType) (netip.Addr, bool) {
	for _, t := range types {
		for _, a := range node.Status.Addresses {
			if a.Type != t {
				continue
			}
			if ip, err := netip.ParseAddr(a.Address); err == nil && usable(ip) {
				return ip.Unmap(), true
			}
		}
	}
	return netip.Addr{}, false
}

// usable reports whether another node can send to a: not a special address (unspecified,
// loopback, link-local, multicast), and without a zone.
func usable(a netip.Addr) bool {
	return addrguard.Special(a.Unmap()) == nil && a.Zone() == ""
}
