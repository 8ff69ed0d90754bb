package endpoint_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/wireguard/endpoint"
)

const (
	external = corev1.NodeExternalIP
	internal = corev1.NodeInternalIP
)

// Each remote gets its own list in the order written; the remotes not named get the bare
// items, or ExternalIP,InternalIP without any.
func TestTypesPerRemote(t *testing.T) {
	for value, want := range map[string]map[string][]corev1.NodeAddressType{
		"":           {"aws": {external, internal}, "gcp": {external, internal}},
		"InternalIP": {"aws": {internal}, "gcp": {internal}},
		"aws:InternalIP,gcp:ExternalIP,gcp:InternalIP": {"aws": {internal}, "gcp": {external, internal}, "merit": {external, internal}},
		"aws:InternalIP,ExternalIP":                    {"aws": {internal}, "gcp": {external}},
	} {
		var types endpoint.Types
		if err := types.Decode(value); err != nil {
			t.Errorf("Decode(%q): %v", value, err)
			continue
		}
		for remote, w := range want {
			if diff := cmp.Diff(w, types.For(remote)); diff != "" {
				t.Errorf("Decode(%q).For(%s) (-want +got):\n%s", value, remote, diff)
			}
		}
	}
}

// Only ExternalIP and InternalIP are addresses; the other types and pairs without a remote are
// refused, quoted.
func TestTypesRefuseWhatIsNotAnAddressType(t *testing.T) {
	for _, value := range []string{"Hostname", "ExternalDNS", "internalip", "aws:InternalDNS", ":InternalIP"} {
		var types endpoint.Types
		if err := types.Decode(value); err == nil {
			t.Errorf("Decode(%q): no error", value)
		}
	}
	var types endpoint.Types
	if err := types.Decode("merit:InternalIP"); err != nil {
		t.Fatal(err)
	}
	if err := types.CheckRemotes([]string{"aws"}); err == nil || !strings.Contains(err.Error(), `"merit"`) {
		t.Errorf("CheckRemotes with merit unknown: %v", err)
	}
}

func nodeWith(annotations map[string]string, addresses ...corev1.NodeAddress) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: annotations}, Status: corev1.NodeStatus{Addresses: addresses}}
}

// The first address of the first type the node lists, skipping what no node can send to; none
// when it has no address of the types.
func TestFirstOfTypesPrefersTheFirstTypeListed(t *testing.T) {
	n := nodeWith(nil,
		corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n1"},
		corev1.NodeAddress{Type: internal, Address: "10.0.0.5"},
		corev1.NodeAddress{Type: external, Address: "127.0.0.1"},
		corev1.NodeAddress{Type: external, Address: "203.0.113.5"},
		corev1.NodeAddress{Type: external, Address: "203.0.113.6"},
	)
	for _, tc := range []struct {
		types []corev1.NodeAddressType
		want  string
	}{
		{[]corev1.NodeAddressType{external, internal}, "203.0.113.5"},
		{[]corev1.NodeAddressType{internal, external}, "10.0.0.5"},
		{[]corev1.NodeAddressType{internal}, "10.0.0.5"},
	} {
		if got, ok := endpoint.FirstOfTypes(n, tc.types); !ok || got.String() != tc.want {
			t.Errorf("FirstOfTypes(%v) = %v, %v; want %s", tc.types, got, ok, tc.want)
		}
	}
	onPrem := nodeWith(nil, corev1.NodeAddress{Type: internal, Address: "10.0.0.5"})
	if got, ok := endpoint.FirstOfTypes(onPrem, []corev1.NodeAddressType{external}); ok {
		t.Errorf("a node without an ExternalIP: %v, want none", got)
	}
}

// The override is an address other nodes can send to; anything else is reported, never used.
func TestOverrideIsAUsableAddress(t *testing.T) {
	for text, want := range map[string]string{"203.0.113.9": "203.0.113.9", "2001:db8::9": "2001:db8::9", "::ffff:203.0.113.9": "203.0.113.9"} {
		got, set, err := endpoint.Override(nodeWith(map[string]string{endpoint.OverrideAnnotation: text}))
		if !set || err != nil || got != netip.MustParseAddr(want) {
			t.Errorf("Override(%q) = %v, %v, %v; want %s", text, got, set, err, want)
		}
	}
	for _, text := range []string{"", "node-1.example.com", "203.0.113.9:51821", "127.0.0.1", "169.254.169.254", "fe80::1%eth0", "0.0.0.0"} {
		if got, set, err := endpoint.Override(nodeWith(map[string]string{endpoint.OverrideAnnotation: text})); !set || err == nil || got.IsValid() {
			t.Errorf("Override(%q) = %v, %v, %v; want an error", text, got, set, err)
		}
	}
	if _, set, err := endpoint.Override(nodeWith(nil)); set || err != nil {
		t.Errorf("without the annotation: set %v, %v", set, err)
	}
}
