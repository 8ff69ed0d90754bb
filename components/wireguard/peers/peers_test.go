package peers_test

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
)

// ---------------------------------------------------------------------------------------------
// Helpers.

// local is the name of our cluster, as the remote nodes know it.
const local = "gcp"

// pubKey is a deterministic, real (curve25519) public key for seed.
func pubKey(seed string) wgtypes.Key {
	sum := sha256.Sum256([]byte(seed))
	priv, err := wgtypes.NewKey(sum[:])
	if err != nil {
		panic(err)
	}
	return priv.PublicKey()
}

// node is a remote node annotated for cluster with key and endpoint ("" leaves an annotation
// out). When the endpoint is an address and port, the address is the node's own, its
// InternalIP, as on an honest node.
func node(name, cluster, key, endpoint string, podCIDRs ...string) peers.Node {
	n := peers.Node{Name: name, Annotations: map[string]string{"unrelated": "x"}, PodCIDRs: podCIDRs}
	if key != "" {
		n.Annotations[peers.PubKeyAnnotation(cluster)] = key
	}
	if endpoint != "" {
		n.Annotations[peers.EndpointAnnotation(cluster)] = endpoint
	}
	if ap, err := netip.ParseAddrPort(endpoint); err == nil {
		n.Addresses = []string{ap.Addr().String()}
	}
	return n
}

// keyOf is the public key of the node called name, as an annotation holds it.
func keyOf(name string) string { return pubKey(name).String() }

// good is a fully annotated node for local whose key derives from its name.
func good(name, endpoint string, podCIDRs ...string) peers.Node {
	return node(name, local, pubKey(name).String(), endpoint, podCIDRs...)
}

func udp(s string) *net.UDPAddr {
	a, err := net.ResolveUDPAddr("udp", s)
	if err != nil {
		panic(err)
	}
	return a
}

func cidrs(ss ...string) []net.IPNet {
	out := make([]net.IPNet, 0, len(ss))
	for _, s := range ss {
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			panic(err)
		}
		out = append(out, *n)
	}
	return out
}

func peer(name, endpoint string, podCIDRs ...string) peers.Peer {
	return peers.Peer{Node: name, PublicKey: pubKey(name), Endpoint: udp(endpoint), AllowedIPs: cidrs(podCIDRs...)}
}

// skipped are the skips of the nodes named, in that order, all for reason.
func skipped(reason string, names ...string) []peers.Skip {
	var out []peers.Skip
	for _, n := range names {
		out = append(out, peers.Skip{Node: n, Reason: reason})
	}
	return out
}

// netOpts compare addresses by meaning: an IPv4 address in 4- or 16-byte form is the same
// address, and a network is equal to another with the same text.
var netOpts = cmp.Options{
	cmp.Comparer(func(a, b net.IP) bool { return a.Equal(b) }),
	cmp.Comparer(func(a, b net.IPNet) bool { return a.String() == b.String() }),
}

// netsInAnyOrder compares lists of networks as sets.
var netsInAnyOrder = cmpopts.SortSlices(func(a, b net.IPNet) bool { return a.String() < b.String() })

// actualOf is what a device reports for peers configured exactly as desired.
func actualOf(desired []peers.Peer, keepalive time.Duration) []wgtypes.Peer {
	out := make([]wgtypes.Peer, 0, len(desired))
	for _, d := range desired {
		out = append(out, wgtypes.Peer{
			PublicKey:                   d.PublicKey,
			Endpoint:                    &net.UDPAddr{IP: slices.Clone(d.Endpoint.IP), Port: d.Endpoint.Port, Zone: d.Endpoint.Zone},
			AllowedIPs:                  slices.Clone(d.AllowedIPs),
			PersistentKeepaliveInterval: keepalive,
			LastHandshakeTime:           time.Unix(1700000000, 0),
			ReceiveBytes:                1234,
			TransmitBytes:               5678,
			ProtocolVersion:             1,
		})
	}
	return out
}

// apply does to actual what WireGuard does with changes (an address belongs to one peer only:
// giving it to a peer takes it from any other).
func apply(actual []wgtypes.Peer, changes []wgtypes.PeerConfig) []wgtypes.Peer {
	out := slices.Clone(actual)
	for _, c := range changes {
		i := slices.IndexFunc(out, func(p wgtypes.Peer) bool { return p.PublicKey == c.PublicKey })
		if c.Remove {
			if i >= 0 {
				out = slices.Delete(out, i, i+1)
			}
			continue
		}
		if i < 0 {
			out = append(out, wgtypes.Peer{PublicKey: c.PublicKey})
			i = len(out) - 1
		}
		p := &out[i]
		if c.Endpoint != nil {
			p.Endpoint = c.Endpoint
		}
		if c.PersistentKeepaliveInterval != nil {
			p.PersistentKeepaliveInterval = *c.PersistentKeepaliveInterval
		}
		if c.ReplaceAllowedIPs {
			p.AllowedIPs = nil
		}
		for _, a := range c.AllowedIPs {
			for j := range out {
				out[j].AllowedIPs = slices.DeleteFunc(slices.Clone(out[j].AllowedIPs), func(n net.IPNet) bool { return n.String() == a.String() })
			}
			p.AllowedIPs = append(p.AllowedIPs, a)
		}
	}
	return out
}

// validIfName is Linux's dev_valid_name: 1 to 15 bytes, not "." or "..", no '/', ':' or
// white space. We also want plain printable ASCII.
func validIfName(s string) bool {
	if s == "" || len(s) > peers.MaxDeviceName || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '/' || c == ':' || c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------------------------
// Annotations.

func TestAnnotations(t *testing.T) {
	tests := []struct {
		cluster                            string
		pubKey, endpoint, pathMTU, gateway string
	}{
		{"gcp", "gcp.wireguard.semaphore.uw.io/pubKey", "gcp.wireguard.semaphore.uw.io/endpoint", "gcp.wireguard.semaphore.uw.io/path-mtu", "gcp.wireguard.semaphore.uw.io/gateway"},
		{"aws", "aws.wireguard.semaphore.uw.io/pubKey", "aws.wireguard.semaphore.uw.io/endpoint", "aws.wireguard.semaphore.uw.io/path-mtu", "aws.wireguard.semaphore.uw.io/gateway"},
		{"merit-2", "merit-2.wireguard.semaphore.uw.io/pubKey", "merit-2.wireguard.semaphore.uw.io/endpoint", "merit-2.wireguard.semaphore.uw.io/path-mtu", "merit-2.wireguard.semaphore.uw.io/gateway"},
	}
	for _, tt := range tests {
		t.Run(tt.cluster, func(t *testing.T) {
			if diff := cmp.Diff(tt.pubKey, peers.PubKeyAnnotation(tt.cluster)); diff != "" {
				t.Errorf("PubKeyAnnotation(%q) mismatch (-want +got):\n%s", tt.cluster, diff)
			}
			if diff := cmp.Diff(tt.endpoint, peers.EndpointAnnotation(tt.cluster)); diff != "" {
				t.Errorf("EndpointAnnotation(%q) mismatch (-want +got):\n%s", tt.cluster, diff)
			}
			if diff := cmp.Diff(tt.pathMTU, peers.PathMTUAnnotation(tt.cluster)); diff != "" {
				t.Errorf("PathMTUAnnotation(%q) mismatch (-want +got):\n%s", tt.cluster, diff)
			}
			if diff := cmp.Diff(tt.gateway, peers.GatewayAnnotation(tt.cluster)); diff != "" {
				t.Errorf("GatewayAnnotation(%q) mismatch (-want +got):\n%s", tt.cluster, diff)
			}
			// All must be valid annotation keys for any cluster name (a DNS label), and ours.
			for _, k := range []string{peers.PubKeyAnnotation(tt.cluster), peers.EndpointAnnotation(tt.cluster), peers.PathMTUAnnotation(tt.cluster), peers.GatewayAnnotation(tt.cluster)} {
				if errs := validation.IsQualifiedName(k); len(errs) > 0 {
					t.Errorf("%q is not a valid annotation key: %v", k, errs)
				}
				if !peers.IsOwnAnnotation(k) {
					t.Errorf("IsOwnAnnotation(%q) = false", k)
				}
			}
		})
	}
	long := strings.Repeat("a", 63)
	for _, k := range []string{peers.PubKeyAnnotation(long), peers.EndpointAnnotation(long), peers.PathMTUAnnotation(long), peers.GatewayAnnotation(long)} {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			t.Errorf("annotation key for a 63-character cluster name %q is not valid: %v", k, errs)
		}
	}
}

// Only the annotations a node publishes for a cluster are ours: never an operator's endpoint
// override, nor anyone else's.
func TestIsOwnAnnotationLeavesOthersAlone(t *testing.T) {
	for _, k := range []string{
		"wireguard.semaphore.uw.io/endpoint-address", "aws.wireguard.semaphore.uw.io/endpoint-address",
		"aws.wireguard.semaphore.uw.io/", ".wireguard.semaphore.uw.io/pubKey", "aws.wireguard.example.com/pubKey",
		"example.com/owner", "aws.wireguard.semaphore.uw.io/pubkey", "a.b.wireguard.semaphore.uw.io/pubKey",
	} {
		if peers.IsOwnAnnotation(k) {
			t.Errorf("IsOwnAnnotation(%q) = true", k)
		}
	}
}

// ---------------------------------------------------------------------------------------------
// Device names.

func TestDeviceNameFits(t *testing.T) {
	tests := []struct {
		name    string
		cluster string
		want    string
	}{
		{"short", "aws", "wg-aws"},
		{"one character", "a", "wg-a"},
		{"digits and dashes", "gcp-eu-1", "wg-gcp-eu-1"},
		{"exactly 15 characters", "abcdefghijkl", "wg-abcdefghijkl"},
		{"exactly 15 with dashes", "merit-prod-1", "wg-merit-prod-1"},
		{"exactly 15 digits", "123456789012", "wg-123456789012"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, peers.DeviceName(tt.cluster)); diff != "" {
				t.Errorf("DeviceName(%q) mismatch (-want +got):\n%s", tt.cluster, diff)
			}
		})
	}
}

func TestDeviceNameLong(t *testing.T) {
	tests := []string{
		"abcdefghijklm", // one character too many
		"merit-prod-01",
		"production-europe-west-1",
		"a-b-c-d-e-f-g-h-i-j",
		"abcd-efghijklmnop", // the kept prefix would end in '-'
		"a----bcdefghijklmn",
		strings.Repeat("x", 63),
		strings.Repeat("9", 63),
	}
	for _, cluster := range tests {
		t.Run(cluster, func(t *testing.T) {
			got := peers.DeviceName(cluster)
			if len(got) > peers.MaxDeviceName {
				t.Errorf("DeviceName(%q) = %q, %d characters, want at most %d", cluster, got, len(got), peers.MaxDeviceName)
			}
			if !strings.HasPrefix(got, peers.DevicePrefix) {
				t.Errorf("DeviceName(%q) = %q, want prefix %q", cluster, got, peers.DevicePrefix)
			}
			if !validIfName(got) {
				t.Errorf("DeviceName(%q) = %q, not a valid interface name", cluster, got)
			}
			if got == peers.DevicePrefix+cluster[:peers.MaxDeviceName-len(peers.DevicePrefix)] {
				t.Errorf("DeviceName(%q) = %q, a plain truncation: names sharing a prefix would collide", cluster, got)
			}
			// Readable: it starts with the start of the cluster name.
			if got[len(peers.DevicePrefix)] != cluster[0] {
				t.Errorf("DeviceName(%q) = %q, does not start with the cluster name", cluster, got)
			}
			if strings.Contains(got, "--") {
				t.Errorf("DeviceName(%q) = %q, has a double dash", cluster, got)
			}
			for range 3 {
				if again := peers.DeviceName(cluster); again != got {
					t.Fatalf("DeviceName(%q) not deterministic: %q then %q", cluster, got, again)
				}
			}
		})
	}
}

func TestDeviceNameDistinct(t *testing.T) {
	pairs := [][2]string{
		{"production-europe-west-1", "production-europe-west-2"},
		{"production-europe-west-1", "production-europe-west-10"},
		{"abcdefghijklm", "abcdefghijkln"},
		{"abcdefghijklm", "abcdefghijklmn"},
		{strings.Repeat("x", 62) + "a", strings.Repeat("x", 62) + "b"},
		{"abcdefghijkl", "abcdefghijklm"}, // fits / one too many
		{"abcd-efghijklm", "abcdefghijklm"},
	}
	for _, p := range pairs {
		a, b := peers.DeviceName(p[0]), peers.DeviceName(p[1])
		if a == b {
			t.Errorf("DeviceName(%q) = DeviceName(%q) = %q, want distinct names", p[0], p[1], a)
		}
	}
}

// dnsLabel maps any bytes to a DNS label (RFC 1123), so that every fuzz input is exercised.
func dnsLabel(b []byte) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-"
	if len(b) == 0 {
		return "a"
	}
	if len(b) > validation.DNS1123LabelMaxLength {
		b = b[:validation.DNS1123LabelMaxLength]
	}
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = alphabet[int(c)%len(alphabet)]
	}
	if out[0] == '-' {
		out[0] = 'a'
	}
	if out[len(out)-1] == '-' {
		out[len(out)-1] = 'z'
	}
	return string(out)
}

func FuzzDeviceName(f *testing.F) {
	for _, s := range []string{"a", "aws", "gcp", "merit", "abcdefghijkl", "abcdefghijklm", "abcd-efghijklm",
		"a----bcdefghijklmn", "production-europe-west-1", strings.Repeat("z", 63), "0", "9-9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		clusters := []string{dnsLabel([]byte(s))}
		if len(validation.IsDNS1123Label(s)) == 0 {
			clusters = append(clusters, s)
		}
		for _, cluster := range clusters {
			if errs := validation.IsDNS1123Label(cluster); len(errs) > 0 {
				t.Fatalf("test bug: %q is not a DNS label: %v", cluster, errs)
			}
			got := peers.DeviceName(cluster)
			if len(got) > peers.MaxDeviceName {
				t.Errorf("DeviceName(%q) = %q, %d characters", cluster, got, len(got))
			}
			if !strings.HasPrefix(got, peers.DevicePrefix) {
				t.Errorf("DeviceName(%q) = %q, want prefix %q", cluster, got, peers.DevicePrefix)
			}
			if !validIfName(got) {
				t.Errorf("DeviceName(%q) = %q, not a valid interface name", cluster, got)
			}
			if fits := peers.DevicePrefix + cluster; len(fits) <= peers.MaxDeviceName && got != fits {
				t.Errorf("DeviceName(%q) = %q, want %q (it fits)", cluster, got, fits)
			}
			if again := peers.DeviceName(cluster); again != got {
				t.Errorf("DeviceName(%q) not deterministic: %q then %q", cluster, got, again)
			}
			if err := peers.CheckDeviceNames([]string{cluster}); err != nil {
				t.Errorf("CheckDeviceNames([%q]) = %v, want nil", cluster, err)
			}
		}
	})
}

// hashCollision finds two long cluster names of the form <prefix><n> with the same device name.
func hashCollision(t *testing.T, prefix string) (string, string) {
	t.Helper()
	seen := map[string]string{}
	for i := range 1 << 20 {
		c := fmt.Sprintf("%s%d", prefix, i)
		d := peers.DeviceName(c)
		if other, ok := seen[d]; ok {
			return other, c
		}
		seen[d] = c
	}
	t.Fatalf("no two names %s<n> share a device name", prefix)
	return "", ""
}

func TestCheckDeviceNames(t *testing.T) {
	// A long name's derived device name is wg-<5 characters>-<6 hex digits>, which is also
	// what a 12-character cluster name of that shape gets as is.
	long := "production-europe-west-1"
	short := strings.TrimPrefix(peers.DeviceName(long), peers.DevicePrefix)
	// The 6 hex digits are 24 bits: among a few thousand names sharing a prefix, two are likely
	// to share a device name (birthday bound), which CheckDeviceNames must then report.
	hashA, hashB := hashCollision(t, "production-cluster-")
	t.Logf("%q and %q both derive %q", hashA, hashB, peers.DeviceName(hashA))

	tests := []struct {
		name     string
		clusters []string
		conflict []string // the clusters named in the error; nil: no error
	}{
		{"none", nil, nil},
		{"one", []string{"aws"}, nil},
		{"distinct short", []string{"aws", "merit", "azure-eu"}, nil},
		{"distinct long", []string{"production-europe-west-1", "production-europe-west-2", "staging-europe-west-1"}, nil},
		{"short and long sharing a start", []string{"abcdefghijkl", "abcdefghijklm", "abcdefghijklmn"}, nil},
		{"the same name twice", []string{"aws", "merit", "aws"}, []string{"aws"}},
		{"a short name shaped like a derived one", []string{"merit", long, short}, []string{long, short}},
		{"a hash collision", []string{"aws", hashA, hashB}, []string{hashA, hashB}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := peers.CheckDeviceNames(tt.clusters)
			if tt.conflict == nil {
				if err != nil {
					t.Errorf("CheckDeviceNames(%q) = %v, want nil", tt.clusters, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckDeviceNames(%q) = nil, want an error naming %q", tt.clusters, tt.conflict)
			}
			msg := err.Error()
			for _, c := range tt.conflict {
				if !strings.Contains(msg, fmt.Sprintf("%q", c)) {
					t.Errorf("CheckDeviceNames(%q) = %q, does not name cluster %q", tt.clusters, msg, c)
				}
			}
			if d := peers.DeviceName(tt.conflict[0]); !strings.Contains(msg, d) {
				t.Errorf("CheckDeviceNames(%q) = %q, does not name device %q", tt.clusters, msg, d)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("CheckDeviceNames(%q) = %q, want one line", tt.clusters, msg)
			}
		})
	}
}

// A realistic set of remotes never collides: 1,000 long names sharing a prefix, and the
// names of 10,000 clusters with distinct 5-character starts.
func TestDeviceNamesOfManyClusters(t *testing.T) {
	var shared []string
	for i := range 1000 {
		shared = append(shared, fmt.Sprintf("kubernetes-cluster-%d", i))
	}
	if err := peers.CheckDeviceNames(shared); err != nil {
		t.Errorf("1,000 names sharing a prefix: %v", err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const alnum = "abcdefghijklmnopqrstuvwxyz0123456789"
	starts := map[string]bool{}
	var distinct []string
	for len(distinct) < 10000 {
		b := make([]byte, 13+rng.IntN(50))
		for i := range b {
			b[i] = alnum[rng.IntN(len(alnum))]
		}
		if starts[string(b[:5])] {
			continue
		}
		starts[string(b[:5])] = true
		distinct = append(distinct, string(b))
	}
	if err := peers.CheckDeviceNames(distinct); err != nil {
		t.Errorf("10,000 long names with distinct starts: %v", err)
	}
}

// ---------------------------------------------------------------------------------------------
// Desired peers.

func deepCopy(nodes []peers.Node) []peers.Node {
	if nodes == nil {
		return nil
	}
	out := make([]peers.Node, 0, len(nodes))
	for _, n := range nodes {
		var ann map[string]string
		if n.Annotations != nil {
			ann = map[string]string{}
			for k, v := range n.Annotations {
				ann[k] = v
			}
		}
		out = append(out, peers.Node{Name: n.Name, Annotations: ann, PodCIDRs: slices.Clone(n.PodCIDRs), Addresses: slices.Clone(n.Addresses)})
	}
	return out
}

// nodeA is the good node alongside every bad one: it must stay a peer.
func nodeA() peers.Node { return good("node-a", "192.0.2.1:51821", "198.18.1.0/24") }

var peerA = peer("node-a", "192.0.2.1:51821", "198.18.1.0/24")

func TestDesired(t *testing.T) {
	tests := []struct {
		name      string
		nodes     []peers.Node
		wantPeers []peers.Peer
		wantSkips []peers.Skip
	}{
		{
			name: "no nodes",
		},
		{
			name:      "fully annotated node, IPv4",
			nodes:     []peers.Node{nodeA()},
			wantPeers: []peers.Peer{peerA},
		},
		{
			name:      "IPv6 endpoint and pod CIDR",
			nodes:     []peers.Node{good("node-a", "[fd00::1]:51821", "fd00:18:1::/64")},
			wantPeers: []peers.Peer{peer("node-a", "[fd00::1]:51821", "fd00:18:1::/64")},
		},
		{
			name:      "IPv4-mapped IPv6 endpoint is IPv4",
			nodes:     []peers.Node{good("node-a", "[::ffff:192.0.2.1]:51821", "198.18.1.0/24")},
			wantPeers: []peers.Peer{peerA},
		},
		{
			name:      "dual-stack pod CIDRs",
			nodes:     []peers.Node{good("node-a", "192.0.2.1:51821", "198.18.1.0/24", "fd00:18:1::/64")},
			wantPeers: []peers.Peer{peer("node-a", "192.0.2.1:51821", "198.18.1.0/24", "fd00:18:1::/64")},
		},
		{
			name:      "dual-stack pod CIDRs, IPv6 first",
			nodes:     []peers.Node{good("node-a", "[fd00::1]:51821", "fd00:18:1::/64", "198.18.1.0/24")},
			wantPeers: []peers.Peer{peer("node-a", "[fd00::1]:51821", "fd00:18:1::/64", "198.18.1.0/24")},
		},
		{
			name:      "pod CIDR with host bits is masked",
			nodes:     []peers.Node{good("node-a", "192.0.2.1:51821", "198.18.1.7/24")},
			wantPeers: []peers.Peer{peerA},
		},
		{
			name: "sorted by node name",
			nodes: []peers.Node{
				good("node-c", "192.0.2.3:51821", "198.18.3.0/24"),
				nodeA(),
				good("node-b", "[fd00::2]:51821", "198.18.2.0/24", "fd00:18:2::/64"),
			},
			wantPeers: []peers.Peer{
				peerA,
				peer("node-b", "[fd00::2]:51821", "198.18.2.0/24", "fd00:18:2::/64"),
				peer("node-c", "192.0.2.3:51821", "198.18.3.0/24"),
			},
		},
		{
			name: "ours are used when annotated for several clusters",
			nodes: func() []peers.Node {
				n := nodeA()
				n.Annotations[peers.PubKeyAnnotation("aws")] = keyOf("other")
				n.Annotations[peers.EndpointAnnotation("aws")] = "192.0.2.1:51822"
				return []peers.Node{n}
			}(),
			wantPeers: []peers.Peer{peerA},
		},
		{
			// A node with an endpoint and no key is not a peer: the missing key counts as a bad
			// one. A node with a key and no endpoint cannot be reached: it is a peer without an
			// endpoint, which WireGuard learns from the handshakes it starts.
			name: "only one of the two annotations",
			nodes: []peers.Node{
				node("node-k", local, keyOf("node-k"), "", "198.18.2.0/24"),
				node("node-e", local, "", "192.0.2.3:51821", "198.18.3.0/24"),
				nodeA(),
			},
			wantPeers: []peers.Peer{peerA, {Node: "node-k", PublicKey: pubKey("node-k"), AllowedIPs: cidrs("198.18.2.0/24")}},
			wantSkips: []peers.Skip{
				{Node: "node-e", Reason: peers.ReasonBadKey},
			},
		},
		{
			// An empty endpoint is a bad one, not none.
			name: "empty endpoint",
			nodes: func() []peers.Node {
				n := node("node-k", local, keyOf("node-k"), "", "198.18.2.0/24")
				n.Annotations[peers.EndpointAnnotation(local)] = ""
				return []peers.Node{n, nodeA()}
			}(),
			wantPeers: []peers.Peer{peerA},
			wantSkips: []peers.Skip{{Node: "node-k", Reason: peers.ReasonBadEndpoint}},
		},
		{
			// Nodes that publish no endpoint share none.
			name: "several nodes without an endpoint",
			nodes: []peers.Node{
				node("node-k", local, keyOf("node-k"), "", "198.18.2.0/24"),
				node("node-l", local, keyOf("node-l"), "", "198.18.3.0/24"),
			},
			wantPeers: []peers.Peer{
				{Node: "node-k", PublicKey: pubKey("node-k"), AllowedIPs: cidrs("198.18.2.0/24")},
				{Node: "node-l", PublicKey: pubKey("node-l"), AllowedIPs: cidrs("198.18.3.0/24")},
			},
		},
		{
			// What a node publishes of its path MTU is passed on as it is, for package mtu.
			name: "published path MTU",
			nodes: func() []peers.Node {
				n := nodeA()
				n.Annotations[peers.PathMTUAnnotation(local)] = "1460"
				n.Annotations[peers.PathMTUAnnotation("aws")] = "9000"
				return []peers.Node{n}
			}(),
			wantPeers: []peers.Peer{func() peers.Peer { p := peerA; p.PublishedPathMTU = "1460"; return p }()},
		},
		{
			// The first node by name keeps the key, whatever the input order.
			name: "duplicate key",
			nodes: []peers.Node{
				node("node-z", local, keyOf("node-b"), "192.0.2.26:51821", "198.18.26.0/24"),
				node("node-b", local, keyOf("node-b"), "192.0.2.2:51821", "198.18.2.0/24"),
				node("node-c", local, keyOf("node-b"), "192.0.2.3:51821", "198.18.3.0/24"),
				nodeA(),
			},
			wantPeers: []peers.Peer{peerA, peer("node-b", "192.0.2.2:51821", "198.18.2.0/24")},
			wantSkips: skipped(peers.ReasonDuplicateKey, "node-c", "node-z"),
		},
		{
			// A node skipped for another reason does not hold its key.
			name: "key of a skipped node is free",
			nodes: []peers.Node{
				node("node-a", local, keyOf("node-b"), "192.0.2.1:51821", "bad"),
				node("node-b", local, keyOf("node-b"), "192.0.2.2:51821", "198.18.2.0/24"),
			},
			wantPeers: []peers.Peer{peer("node-b", "192.0.2.2:51821", "198.18.2.0/24")},
			wantSkips: []peers.Skip{{Node: "node-a", Reason: peers.ReasonBadPodCIDR}},
		},
		{
			name: "overlapping pod CIDR",
			nodes: []peers.Node{
				good("node-o1", "192.0.2.2:51821", "198.18.1.0/24"),                   // same
				good("node-o2", "192.0.2.3:51821", "198.18.1.128/25"),                 // inside
				good("node-o3", "192.0.2.4:51821", "198.18.0.0/16"),                   // around
				good("node-o4", "192.0.2.5:51821", "198.18.4.0/24", "fd00:18:1::/64"), // IPv6 overlaps
				good("node-o5", "192.0.2.6:51821", "198.18.5.0/24"),
				good("node-a", "192.0.2.1:51821", "198.18.1.0/24", "fd00:18:1::/64"),
			},
			wantPeers: []peers.Peer{
				peer("node-a", "192.0.2.1:51821", "198.18.1.0/24", "fd00:18:1::/64"),
				peer("node-o5", "192.0.2.6:51821", "198.18.5.0/24"),
			},
			wantSkips: skipped(peers.ReasonOverlappingIP, "node-o1", "node-o2", "node-o3", "node-o4"),
		},
		{
			name: "every reason at once, good nodes stay peers",
			nodes: []peers.Node{
				good("node-9", "192.0.2.9:51821", "198.18.9.0/24"),
				{Name: "node-1"},
				node("node-2", local, "bad", "192.0.2.2:51821", "198.18.2.0/24"),
				good("node-3", "host:51821", "198.18.3.0/24"),
				good("node-4", "192.0.2.4:51821"),
				good("node-5", "192.0.2.5:51821", "198.18.5.0/99"),
				node("node-6", local, keyOf("node-0"), "192.0.2.6:51821", "198.18.6.0/24"),
				good("node-7", "192.0.2.7:51821", "198.18.10.0/25"),
				good("node-0", "[fd00::10]:51821", "198.18.10.0/24", "fd00:18:10::/64"),
			},
			wantPeers: []peers.Peer{
				peer("node-0", "[fd00::10]:51821", "198.18.10.0/24", "fd00:18:10::/64"),
				peer("node-9", "192.0.2.9:51821", "198.18.9.0/24"),
			},
			wantSkips: []peers.Skip{
				{Node: "node-1", Reason: peers.ReasonNotAnnotated},
				{Node: "node-2", Reason: peers.ReasonBadKey},
				{Node: "node-3", Reason: peers.ReasonBadEndpoint},
				{Node: "node-4", Reason: peers.ReasonNoPodCIDR},
				{Node: "node-5", Reason: peers.ReasonBadPodCIDR},
				{Node: "node-6", Reason: peers.ReasonDuplicateKey},
				{Node: "node-7", Reason: peers.ReasonOverlappingIP},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDesired(t, tt.nodes, tt.wantPeers, tt.wantSkips)
		})
	}
}

// Nodes that are bad for one reason are each skipped for it, in name order; the good node
// next to them stays a peer.
func TestDesiredSkipsBadNodes(t *testing.T) {
	tests := []struct {
		name   string
		reason string
		bad    []peers.Node // sorted by name
	}{
		{
			name:   "not annotated",
			reason: peers.ReasonNotAnnotated,
			bad: []peers.Node{
				{Name: "node-x", PodCIDRs: []string{"198.18.9.0/24"}},
				{Name: "node-y", Annotations: map[string]string{"unrelated": "x"}, PodCIDRs: []string{"198.18.8.0/24"}},
			},
		},
		{
			name:   "annotations for another cluster are ignored",
			reason: peers.ReasonNotAnnotated,
			bad: []peers.Node{
				node("node-x", "aws", keyOf("node-x"), "192.0.2.9:51821", "198.18.9.0/24"),
				node("node-y", "gcp-2", keyOf("node-y"), "192.0.2.8:51821", "198.18.8.0/24"),
				node("node-z", "GCP", keyOf("node-z"), "192.0.2.7:51821", "198.18.7.0/24"),
			},
		},
		{
			name:   "bad key",
			reason: peers.ReasonBadKey,
			bad: []peers.Node{
				node("node-b1", local, "not-a-key", "192.0.2.2:51821", "198.18.2.0/24"),
				node("node-b2", local, "AAAA", "192.0.2.3:51821", "198.18.3.0/24"),
				node("node-b3", local, keyOf("node-b3")[:40], "192.0.2.4:51821", "198.18.4.0/24"),
				node("node-b4", local, " "+keyOf("node-b4"), "192.0.2.5:51821", "198.18.5.0/24"),
				node("node-b5", local, fmt.Sprintf("%x", pubKey("node-b5")), "192.0.2.6:51821", "198.18.6.0/24"),
			},
		},
		{
			name:   "bad endpoint",
			reason: peers.ReasonBadEndpoint,
			bad: []peers.Node{
				node("node-b1", local, keyOf("node-b1"), "node-b1.example.com:51821", "198.18.2.0/24"),
				node("node-b2", local, keyOf("node-b2"), "192.0.2.3:0", "198.18.3.0/24"),
				node("node-b3", local, keyOf("node-b3"), "192.0.2.4", "198.18.4.0/24"),
				node("node-b4", local, keyOf("node-b4"), "fd00::5:51821", "198.18.5.0/24"),
				node("node-b5", local, keyOf("node-b5"), "192.0.2.6:65536", "198.18.6.0/24"),
				node("node-b6", local, keyOf("node-b6"), "192.0.2.7:wireguard", "198.18.7.0/24"),
				node("node-b7", local, keyOf("node-b7"), "[fd00::8]:0", "198.18.8.0/24"),
				node("node-b8", local, keyOf("node-b8"), "localhost:51821", "198.18.9.0/24"),
				node("node-b9", local, keyOf("node-b9"), "169.254.169.254:53", "198.18.10.0/24"),
				node("node-c1", local, keyOf("node-c1"), "[fe80::1]:51821", "198.18.11.0/24"),
				node("node-c2", local, keyOf("node-c2"), "[fd00:ec2::254]:51821", "198.18.12.0/24"),
				// A port is 1-65535.
				node("node-c3", local, keyOf("node-c3"), "192.0.2.13:-1", "198.18.13.0/24"),
				node("node-c4", local, keyOf("node-c4"), "192.0.2.14:99999", "198.18.14.0/24"),
				node("node-c5", local, keyOf("node-c5"), "[fd00::15]:65536", "198.18.15.0/24"),
				node("node-c6", local, keyOf("node-c6"), "192.0.2.16:+51821", "198.18.16.0/24"),
			},
		},
		{
			name:   "pod CIDR too wide to be routed",
			reason: addrguard.ReasonTooWide,
			bad: []peers.Node{
				good("node-w1", "192.0.2.2:51821", "0.0.0.0/1"),
				good("node-w2", "192.0.2.3:51821", "128.0.0.0/1"),
				good("node-w3", "192.0.2.4:51821", "198.18.2.0/24", "198.16.0.0/15"), // one of two
				good("node-w4", "192.0.2.5:51821", "fd00::/8"),
			},
		},
		{
			name:   "pod CIDR outside the remote's ranges",
			reason: addrguard.ReasonOutsideRanges,
			bad: []peers.Node{
				good("node-o1", "192.0.2.2:51821", "100.64.2.0/24"),
				good("node-o2", "192.0.2.3:51821", "198.18.3.0/24", "fd00:19::/64"),
			},
		},
		{
			name:   "pod CIDR of the local cluster",
			reason: addrguard.ReasonLocal,
			bad: []peers.Node{
				good("node-l1", "192.0.2.2:51821", "198.19.252.0/24"),
				good("node-l2", "192.0.2.3:51821", "198.19.252.7/32"),
			},
		},
		{
			name:   "pod CIDR in a special range",
			reason: addrguard.ReasonSpecial,
			bad: []peers.Node{
				good("node-s1", "192.0.2.2:51821", "127.0.0.0/24"),
				good("node-s2", "192.0.2.3:51821", "169.254.169.254/32"),
			},
		},
		{
			name:   "no pod CIDR",
			reason: peers.ReasonNoPodCIDR,
			bad: []peers.Node{
				good("node-n1", "192.0.2.2:51821"),
				{Name: "node-n2", Annotations: good("node-n2", "192.0.2.3:51821").Annotations, PodCIDRs: []string{}, Addresses: []string{"192.0.2.3"}},
			},
		},
		{
			name:   "bad pod CIDR",
			reason: peers.ReasonBadPodCIDR,
			bad: []peers.Node{
				good("node-c1", "192.0.2.2:51821", "198.18.2.0/33"),
				good("node-c2", "192.0.2.3:51821", "not-a-cidr"),
				good("node-c3", "192.0.2.4:51821", "198.18.4.0"),
				good("node-c4", "192.0.2.5:51821", "198.18.5.0/24", "fd00:18:5::/129"), // one of two bad
				good("node-c5", "192.0.2.6:51821", ""),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []peers.Skip
			for _, n := range tt.bad {
				want = append(want, peers.Skip{Node: n.Name, Reason: tt.reason})
			}
			checkDesired(t, append(slices.Clone(tt.bad), nodeA()), []peers.Peer{peerA}, want)
		})
	}
}

// testGuard holds the remote to 198.18.0.0/15 and fd00:18::/32, and its local cluster has
// 198.19.252.0/24.
func testGuard() addrguard.Remote {
	g := addrguard.New(addrguard.Ranges{"remote": {netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("fd00:18::/32")}})
	g.SetLocal("test", []netip.Prefix{netip.MustParsePrefix("198.19.252.0/24")})
	return g.For("remote")
}

// desiredPeers is peers.Desired with testGuard and no other rule.
func desiredPeers(local string, nodes []peers.Node) ([]peers.Peer, []peers.Skip) {
	return peers.Desired(local, nodes, peers.Rules{Guard: testGuard()})
}

// checkDesired checks that Desired makes wantPeers of nodes and skips wantSkips, each with a
// one-line detail, and leaves nodes as they were.
func checkDesired(t *testing.T, nodes []peers.Node, wantPeers []peers.Peer, wantSkips []peers.Skip) {
	t.Helper()
	checkDesiredWith(t, peers.Rules{Guard: testGuard()}, nodes, wantPeers, wantSkips)
}

// checkDesiredWith is checkDesired with rules.
func checkDesiredWith(t *testing.T, rules peers.Rules, nodes []peers.Node, wantPeers []peers.Peer, wantSkips []peers.Skip) {
	t.Helper()
	before := deepCopy(nodes)
	gotPeers, gotSkips := peers.Desired(local, nodes, rules)
	if diff := cmp.Diff(wantPeers, gotPeers, netOpts, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Desired() peers mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantSkips, gotSkips, cmpopts.IgnoreFields(peers.Skip{}, "Detail"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Desired() skips mismatch (-want +got):\n%s", diff)
	}
	for _, s := range gotSkips {
		if s.Detail == "" || strings.Contains(s.Detail, "\n") {
			t.Errorf("skip %+v: want a one-line detail", s)
		}
	}
	if diff := cmp.Diff(before, nodes); diff != "" {
		t.Errorf("Desired() changed its input (-before +after):\n%s", diff)
	}
}

// The details say what was wrong, for the log line.
func TestDesiredSkipDetails(t *testing.T) {
	nodes := []peers.Node{
		node("node-1", local, "not-a-key", "192.0.2.1:51821", "198.18.1.0/24"),
		good("node-2", "node-2.example.com:51821", "198.18.2.0/24"),
		good("node-3", "192.0.2.3:51821", "198.18.3.0/33"),
		nodeA(),
		node("node-x4", local, pubKey("node-a").String(), "192.0.2.4:51821", "198.18.4.0/24"),
		good("node-x5", "192.0.2.5:51821", "198.18.1.0/25"),
	}
	_, skips := desiredPeers(local, nodes)
	want := map[string][]string{
		"node-1":  {peers.PubKeyAnnotation(local), "not-a-key"},
		"node-2":  {peers.EndpointAnnotation(local), "node-2.example.com:51821"},
		"node-3":  {"198.18.3.0/33"},
		"node-x4": {"node-a"},
		"node-x5": {"198.18.1.0/25", "198.18.1.0/24"},
	}
	if len(skips) != len(want) {
		t.Fatalf("Desired() skipped %+v, want %d nodes", skips, len(want))
	}
	for _, s := range skips {
		for _, w := range want[s.Node] {
			if !strings.Contains(s.Detail, w) {
				t.Errorf("skip of %s: detail %q does not mention %q", s.Node, s.Detail, w)
			}
		}
	}
}

// The peers share nothing with the input: changing one does not change the other.
func TestDesiredDoesNotAlias(t *testing.T) {
	nodes := []peers.Node{nodeA()}
	got, _ := desiredPeers(local, nodes)
	got[0].AllowedIPs[0].IP[0] = 1
	nodes[0].PodCIDRs[0] = "10.0.0.0/8"
	again, _ := desiredPeers(local, []peers.Node{nodeA()})
	if diff := cmp.Diff([]peers.Peer{peerA}, again, netOpts); diff != "" {
		t.Errorf("Desired() mismatch (-want +got):\n%s", diff)
	}
}

// ---------------------------------------------------------------------------------------------
// Routes.

func TestRoutes(t *testing.T) {
	tests := []struct {
		name  string
		peers []peers.Peer
		want  []net.IPNet
	}{
		{"no peers", nil, nil},
		{"one", []peers.Peer{peerA}, cidrs("198.18.1.0/24")},
		{
			"union, dual-stack",
			[]peers.Peer{
				peer("node-a", "192.0.2.1:51821", "198.18.1.0/24", "fd00:18:1::/64"),
				peer("node-b", "[fd00::2]:51821", "198.18.2.0/24"),
				peer("node-c", "192.0.2.3:51821", "fd00:18:3::/64"),
			},
			cidrs("198.18.1.0/24", "fd00:18:1::/64", "198.18.2.0/24", "fd00:18:3::/64"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := peers.Routes(tt.peers)
			if diff := cmp.Diff(tt.want, got, netOpts, cmpopts.EquateEmpty(), netsInAnyOrder); diff != "" {
				t.Errorf("Routes() mismatch (-want +got):\n%s", diff)
			}
		})
	}
	// The routes of Desired's peers: every pod CIDR of every peer.
	ps, _ := desiredPeers(local, []peers.Node{
		nodeA(),
		good("node-b", "[fd00::2]:51821", "198.18.2.0/24", "fd00:18:2::/64"),
		{Name: "node-x", PodCIDRs: []string{"198.18.9.0/24"}},
	})
	if diff := cmp.Diff(cidrs("198.18.1.0/24", "198.18.2.0/24", "fd00:18:2::/64"), peers.Routes(ps), netOpts); diff != "" {
		t.Errorf("Routes(Desired()) mismatch (-want +got):\n%s", diff)
	}
}

// ---------------------------------------------------------------------------------------------
// Changes.

const keepalive = 25 * time.Second

// later is long after the handshakes of actualOf: no session there is alive.
var later = time.Unix(1700000000, 0).Add(time.Hour)

func add(p peers.Peer, ka time.Duration) wgtypes.PeerConfig {
	return wgtypes.PeerConfig{PublicKey: p.PublicKey, Endpoint: p.Endpoint, PersistentKeepaliveInterval: &ka, ReplaceAllowedIPs: true, AllowedIPs: p.AllowedIPs}
}

// update is the same configuration as add, for a peer the device already has whose endpoint
// changes.
var update = add

// updateKeepEndpoint is update for a peer whose endpoint stays: it is left out, so that
// WireGuard keeps the one it has.
func updateKeepEndpoint(p peers.Peer, ka time.Duration) wgtypes.PeerConfig {
	c := add(p, ka)
	c.Endpoint = nil
	return c
}

func remove(k wgtypes.Key) wgtypes.PeerConfig { return wgtypes.PeerConfig{PublicKey: k, Remove: true} }

// byKey orders peer configurations, whose order does not matter for a device.
var byKey = cmpopts.SortSlices(func(a, b wgtypes.PeerConfig) bool {
	if a.PublicKey != b.PublicKey {
		return a.PublicKey.String() < b.PublicKey.String()
	}
	return !a.Remove && b.Remove
})

func TestChanges(t *testing.T) {
	a := peerA
	b := peer("node-b", "[fd00::2]:51821", "198.18.2.0/24", "fd00:18:2::/64")
	c := peer("node-c", "192.0.2.3:51821", "198.18.3.0/24")
	in := func(ps ...peers.Peer) []wgtypes.Peer { return actualOf(ps, keepalive) }

	// Variants of what a device reports for a, b and c.
	sixteenByte := in(a, c)
	for i := range sixteenByte {
		sixteenByte[i].Endpoint.IP = sixteenByte[i].Endpoint.IP.To16()
		for j := range sixteenByte[i].AllowedIPs {
			sixteenByte[i].AllowedIPs[j].IP = sixteenByte[i].AllowedIPs[j].IP.To16()
		}
	}
	reordered := in(b)
	slices.Reverse(reordered[0].AllowedIPs)
	aMoved := a
	aMoved.Endpoint = udp("192.0.2.101:51821")
	aPort := a
	aPort.Endpoint = udp("192.0.2.1:51999")
	aCIDR := a
	aCIDR.AllowedIPs = cidrs("198.18.101.0/24")
	aDual := a
	aDual.AllowedIPs = cidrs("198.18.1.0/24", "fd00:18:1::/64")
	aRekeyed := a
	aRekeyed.PublicKey = pubKey("node-a, new key")
	noEndpoint := in(a)
	noEndpoint[0].Endpoint = nil
	noKeepalive := in(a, b)
	for i := range noKeepalive {
		noKeepalive[i].PersistentKeepaliveInterval = 0
	}

	tests := []struct {
		name      string
		desired   []peers.Peer
		actual    []wgtypes.Peer
		keepalive time.Duration
		want      []wgtypes.PeerConfig
	}{
		{name: "nothing wanted, nothing there", keepalive: keepalive},
		{name: "in sync", desired: []peers.Peer{a, b, c}, actual: in(a, b, c), keepalive: keepalive},
		{name: "in sync, actual in another order", desired: []peers.Peer{a, b, c}, actual: in(c, a, b), keepalive: keepalive},
		{name: "in sync, allowed IPs in another order", desired: []peers.Peer{b}, actual: reordered, keepalive: keepalive},
		{name: "in sync, IPv4 reported in 16-byte form", desired: []peers.Peer{a, c}, actual: sixteenByte, keepalive: keepalive},
		{name: "in sync, no keepalive", desired: []peers.Peer{a, b}, actual: noKeepalive, keepalive: 0},
		{name: "new node", desired: []peers.Peer{a, b, c}, actual: in(a, c), keepalive: keepalive,
			want: []wgtypes.PeerConfig{add(b, keepalive)}},
		{name: "first node", desired: []peers.Peer{a}, keepalive: keepalive,
			want: []wgtypes.PeerConfig{add(a, keepalive)}},
		{name: "changed endpoint address", desired: []peers.Peer{aMoved, b, c}, actual: in(a, b, c), keepalive: keepalive,
			want: []wgtypes.PeerConfig{update(aMoved, keepalive)}},
		{name: "changed endpoint port", desired: []peers.Peer{aPort, b, c}, actual: in(a, b, c), keepalive: keepalive,
			want: []wgtypes.PeerConfig{update(aPort, keepalive)}},
		{name: "endpoint missing on the device", desired: []peers.Peer{a}, actual: noEndpoint, keepalive: keepalive,
			want: []wgtypes.PeerConfig{update(a, keepalive)}},
		{name: "changed pod CIDR", desired: []peers.Peer{aCIDR, b, c}, actual: in(a, b, c), keepalive: keepalive,
			want: []wgtypes.PeerConfig{updateKeepEndpoint(aCIDR, keepalive)}},
		{name: "added pod CIDR", desired: []peers.Peer{aDual, b, c}, actual: in(a, b, c), keepalive: keepalive,
			want: []wgtypes.PeerConfig{updateKeepEndpoint(aDual, keepalive)}},
		{name: "removed pod CIDR", desired: []peers.Peer{a, b, c}, actual: in(aDual, b, c), keepalive: keepalive,
			want: []wgtypes.PeerConfig{updateKeepEndpoint(a, keepalive)}},
		{name: "node re-keyed", desired: []peers.Peer{aRekeyed, b, c}, actual: in(a, b, c), keepalive: keepalive,
			want: []wgtypes.PeerConfig{add(aRekeyed, keepalive), remove(a.PublicKey)}},
		{name: "removed node", desired: []peers.Peer{a, c}, actual: in(a, b, c), keepalive: keepalive,
			want: []wgtypes.PeerConfig{remove(b.PublicKey)}},
		{name: "all removed", actual: in(a, b, c), keepalive: keepalive,
			want: []wgtypes.PeerConfig{remove(a.PublicKey), remove(b.PublicKey), remove(c.PublicKey)}},
		{name: "keepalive changed", desired: []peers.Peer{a, b}, actual: in(a, b), keepalive: 10 * time.Second,
			want: []wgtypes.PeerConfig{updateKeepEndpoint(a, 10*time.Second), updateKeepEndpoint(b, 10*time.Second)}},
		{name: "keepalive set", desired: []peers.Peer{a, b}, actual: noKeepalive, keepalive: keepalive,
			want: []wgtypes.PeerConfig{updateKeepEndpoint(a, keepalive), updateKeepEndpoint(b, keepalive)}},
		{name: "keepalive turned off", desired: []peers.Peer{a}, actual: in(a), keepalive: 0,
			want: []wgtypes.PeerConfig{updateKeepEndpoint(a, 0)}},
		{name: "one of each", desired: []peers.Peer{aMoved, c}, actual: in(a, b), keepalive: keepalive,
			want: []wgtypes.PeerConfig{update(aMoved, keepalive), add(c, keepalive), remove(b.PublicKey)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desired := slices.Clone(tt.desired)
			actual := slices.Clone(tt.actual)
			got := peers.Changes(tt.desired, tt.actual, tt.keepalive, later)
			if diff := cmp.Diff(tt.want, got, netOpts, byKey, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Changes() mismatch (-want +got):\n%s", diff)
			}
			// Unchanged peers never appear, whatever the rest.
			for _, g := range got {
				if g.Remove {
					continue
				}
				for _, p := range tt.actual {
					if p.PublicKey == g.PublicKey && slices.ContainsFunc(tt.desired, func(d peers.Peer) bool {
						return d.PublicKey == p.PublicKey && d.Endpoint.String() == p.Endpoint.String() &&
							tt.keepalive == p.PersistentKeepaliveInterval && cmp.Equal(d.AllowedIPs, p.AllowedIPs, netOpts, netsInAnyOrder, cmpopts.EquateEmpty())
					}) {
						t.Errorf("Changes() touches the unchanged peer %s", g.PublicKey)
					}
				}
			}
			// Applying the changes brings the device in sync.
			if again := peers.Changes(tt.desired, apply(tt.actual, got), tt.keepalive, later); len(again) != 0 {
				t.Errorf("after applying the changes, Changes() = %+v, want none", again)
			}
			if diff := cmp.Diff(desired, tt.desired, netOpts); diff != "" {
				t.Errorf("Changes() changed desired (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(actual, tt.actual, netOpts); diff != "" {
				t.Errorf("Changes() changed actual (-before +after):\n%s", diff)
			}
		})
	}
}

// Each change has its own keepalive value: changing one configuration's value must not change
// another's.
func TestChangesKeepaliveNotShared(t *testing.T) {
	got := peers.Changes([]peers.Peer{peerA, peer("node-b", "192.0.2.2:51821", "198.18.2.0/24")}, nil, keepalive, later)
	if len(got) != 2 {
		t.Fatalf("Changes() = %+v, want 2 adds", got)
	}
	if got[0].PersistentKeepaliveInterval == got[1].PersistentKeepaliveInterval {
		*got[0].PersistentKeepaliveInterval = time.Hour
		if *got[1].PersistentKeepaliveInterval != keepalive {
			t.Errorf("the changes share one keepalive value")
		}
	}
}

// ---------------------------------------------------------------------------------------------
// 500 nodes: one node changes, one peer operation.

// fleet is n remote nodes, dual-stack, in shuffled order.
func fleet(n int) []peers.Node {
	nodes := make([]peers.Node, 0, n)
	for i := range n {
		v4 := fmt.Sprintf("198.%d.%d.0/24", 18+i/256, i%256) // 198.18.0.0/15 holds 512 /24s
		v6 := fmt.Sprintf("fd00:18:%x::/64", i)
		endpoint := fmt.Sprintf("192.0.2.%d:%d", 1+i%250, 51821+i/250)
		if i%3 == 0 {
			endpoint = fmt.Sprintf("[fd00::%x]:51821", i+1)
		}
		nodes = append(nodes, good(fmt.Sprintf("node-%03d", i), endpoint, v4, v6))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	return nodes
}

func TestChangesOneNodeOf500(t *testing.T) {
	const n = 500
	nodes := fleet(n)
	desired, skips := desiredPeers(local, nodes)
	if len(desired) != n || len(skips) != 0 {
		t.Fatalf("Desired() = %d peers, skipped %+v; want %d peers", len(desired), skips, n)
	}
	if !slices.IsSortedFunc(desired, func(a, b peers.Peer) int { return strings.Compare(a.Node, b.Node) }) {
		t.Errorf("Desired() not sorted by node name")
	}
	if got := len(peers.Routes(desired)); got != 2*n {
		t.Errorf("Routes() has %d routes, want %d", got, 2*n)
	}

	// Cold start: every peer added, then in sync.
	cold := peers.Changes(desired, nil, keepalive, later)
	if len(cold) != n {
		t.Fatalf("cold start: %d changes, want %d", len(cold), n)
	}
	actual := apply(nil, cold)
	if again := peers.Changes(desired, actual, keepalive, later); len(again) != 0 {
		t.Fatalf("in sync: %d changes, want none", len(again))
	}

	find := func(nodes []peers.Node, name string) int {
		i := slices.IndexFunc(nodes, func(n peers.Node) bool { return n.Name == name })
		if i < 0 {
			t.Fatalf("no %s", name)
		}
		return i
	}
	tests := []struct {
		name   string
		change func([]peers.Node) []peers.Node
		want   int // peer operations
		add    int
		remove int
	}{
		{"endpoint", func(ns []peers.Node) []peers.Node {
			i := find(ns, "node-123")
			ns[i].Annotations[peers.EndpointAnnotation(local)] = "192.0.2.251:51821"
			ns[i].Addresses = []string{"192.0.2.251"}
			return ns
		}, 1, 0, 0},
		{"pod CIDR", func(ns []peers.Node) []peers.Node {
			ns[find(ns, "node-321")].PodCIDRs = []string{"198.19.250.0/24"}
			return ns
		}, 1, 0, 0},
		{"new node", func(ns []peers.Node) []peers.Node {
			return append(ns, good("node-500", "192.0.2.252:51821", "198.19.255.0/24"))
		}, 1, 1, 0},
		{"node deleted", func(ns []peers.Node) []peers.Node {
			i := find(ns, "node-042")
			return slices.Delete(ns, i, i+1)
		}, 1, 0, 1},
		{"annotation removed", func(ns []peers.Node) []peers.Node {
			i := find(ns, "node-043")
			delete(ns[i].Annotations, peers.PubKeyAnnotation(local))
			delete(ns[i].Annotations, peers.EndpointAnnotation(local))
			return ns
		}, 1, 0, 1},
		{"bad key", func(ns []peers.Node) []peers.Node {
			ns[find(ns, "node-044")].Annotations[peers.PubKeyAnnotation(local)] = "garbage"
			return ns
		}, 1, 0, 1},
		// A new key is a new peer: one add and one remove, in one device configuration.
		{"re-keyed", func(ns []peers.Node) []peers.Node {
			ns[find(ns, "node-250")].Annotations[peers.PubKeyAnnotation(local)] = pubKey("node-250, new key").String()
			return ns
		}, 2, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed, _ := desiredPeers(local, tt.change(deepCopy(nodes)))
			got := peers.Changes(changed, actual, keepalive, later)
			adds, removes := 0, 0
			for _, g := range got {
				switch {
				case g.Remove:
					removes++
				case !slices.ContainsFunc(actual, func(p wgtypes.Peer) bool { return p.PublicKey == g.PublicKey }):
					adds++
				}
			}
			if len(got) != tt.want || adds != tt.add || removes != tt.remove {
				t.Errorf("Changes() = %d operations (%d adds, %d removes), want %d (%d adds, %d removes): %+v",
					len(got), adds, removes, tt.want, tt.add, tt.remove, got)
			}
			if again := peers.Changes(changed, apply(actual, got), keepalive, later); len(again) != 0 {
				t.Errorf("after applying: %d more changes, want none", len(again))
			}
		})
	}
}

func BenchmarkDesiredAndChanges500(b *testing.B) {
	nodes := fleet(500)
	desired, _ := desiredPeers(local, nodes)
	actual := actualOf(desired, keepalive)
	b.ResetTimer()
	for b.Loop() {
		d, _ := desiredPeers(local, nodes)
		if len(peers.Changes(d, actual, keepalive, later)) != 0 {
			b.Fatal("changes")
		}
	}
}

// Endpoints no other node can send to, the all-zero key and a node whose own pod CIDRs
// overlap are skipped with a reason instead of becoming peers that never work (or, for the
// CIDRs, that would be updated on every sync).
func TestDesiredRejectsUnusableValues(t *testing.T) {
	good, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	// The package's node, for gcp (the function literal does not see itself).
	node := func(name, key, endpoint string, cidrs ...string) peers.Node {
		return node(name, "gcp", key, endpoint, cidrs...)
	}
	for _, tc := range []struct {
		node   peers.Node
		reason string
	}{
		{node("unspecified", good.PublicKey().String(), "0.0.0.0:51821", "198.18.1.0/24"), peers.ReasonBadEndpoint},
		{node("unspecified6", good.PublicKey().String(), "[::]:51821", "198.18.1.0/24"), peers.ReasonBadEndpoint},
		{node("loopback", good.PublicKey().String(), "127.0.0.1:51821", "198.18.1.0/24"), peers.ReasonBadEndpoint},
		{node("multicast", good.PublicKey().String(), "224.0.0.1:51821", "198.18.1.0/24"), peers.ReasonBadEndpoint},
		{node("broadcast", good.PublicKey().String(), "255.255.255.255:51821", "198.18.1.0/24"), peers.ReasonBadEndpoint},
		{node("zoned", good.PublicKey().String(), "[fe80::1%eth0]:51821", "198.18.1.0/24"), peers.ReasonBadEndpoint},
		{node("zero-key", wgtypes.Key{}.String(), "192.0.2.1:51821", "198.18.1.0/24"), peers.ReasonBadKey},
		{node("same-cidr-twice", good.PublicKey().String(), "192.0.2.1:51821", "198.18.1.0/24", "198.18.1.0/24"), peers.ReasonBadPodCIDR},
		{node("nested-cidrs", good.PublicKey().String(), "192.0.2.1:51821", "198.18.0.0/16", "198.18.1.0/24"), peers.ReasonBadPodCIDR},
	} {
		got, skipped := desiredPeers("gcp", []peers.Node{tc.node})
		if len(got) != 0 || len(skipped) != 1 || skipped[0].Reason != tc.reason {
			t.Errorf("%s: peers %v, skipped %+v, want skipped as %s", tc.node.Name, got, skipped, tc.reason)
		}
	}
}

// A peer whose endpoint WireGuard moved (a NAT, a node that cannot be reached at what it
// publishes) keeps it while its session lives, whatever the device was given before and
// whatever it publishes now: Changes remembers nothing, so a restarted controller keeps it too.
// Once the session is over, the published endpoint is set; until then KeptUntil says when.
func TestChangesKeepARoamedEndpointWhileItsSessionLives(t *testing.T) {
	b := peer("node-b", "192.0.2.2:51821", "198.18.2.0/24")
	desired := []peers.Peer{peerA, b}
	roamed := actualOf(desired, keepalive)
	roamed[0].Endpoint = udp("203.0.113.7:40001") // where node-a's packets now come from
	handshake := roamed[0].LastHandshakeTime
	alive, over := handshake.Add(30*time.Second), handshake.Add(peers.SessionLifetime+time.Second)

	if got := peers.Changes(desired, roamed, keepalive, alive); len(got) != 0 {
		t.Errorf("a roamed endpoint with a live session is set back: %+v", got)
	}
	if until, ok := peers.KeptUntil(desired, roamed, alive); !ok || !until.Equal(handshake.Add(peers.SessionLifetime)) {
		t.Errorf("KeptUntil = %v, %v; want the end of node-a's session, %v", until, ok, handshake.Add(peers.SessionLifetime))
	}
	got := peers.Changes(desired, roamed, keepalive, over)
	if len(got) != 1 || got[0].PublicKey != peerA.PublicKey || got[0].Endpoint.String() != "192.0.2.1:51821" {
		t.Errorf("after the session: Changes() = %+v, want node-a's published endpoint set", got)
	}
	if _, ok := peers.KeptUntil(desired, roamed, over); ok {
		t.Error("KeptUntil after the session: a kept endpoint")
	}
	if again := peers.Changes(desired, apply(roamed, got), keepalive, over); len(again) != 0 {
		t.Errorf("after applying, Changes() = %+v, want none", again)
	}

	// Never a handshake: the published endpoint is set.
	silent := slices.Clone(roamed)
	silent[0].LastHandshakeTime = time.Time{}
	if got := peers.Changes(desired, silent, keepalive, alive); len(got) != 1 || got[0].Endpoint.String() != "192.0.2.1:51821" {
		t.Errorf("a moved endpoint without a handshake: Changes() = %+v, want the published one set", got)
	}

	// A newly published endpoint waits for the session at the roamed one to end.
	moved := slices.Clone(desired)
	moved[0].Endpoint = udp("192.0.2.101:51821")
	if got := peers.Changes(moved, roamed, keepalive, alive); len(got) != 0 {
		t.Errorf("a new endpoint while the roamed one works: Changes() = %+v, want none", got)
	}
	if got := peers.Changes(moved, roamed, keepalive, over); len(got) != 1 || got[0].Endpoint.String() != "192.0.2.101:51821" {
		t.Errorf("a new endpoint after the session: Changes() = %+v, want it set", got)
	}

	// The rest of a roamed peer is still compared: a changed pod CIDR is applied.
	cidr := slices.Clone(desired)
	cidr[0].AllowedIPs = cidrs("198.18.101.0/24")
	got = peers.Changes(cidr, roamed, keepalive, alive)
	if len(got) != 1 || got[0].PublicKey != peerA.PublicKey || got[0].Endpoint != nil {
		t.Errorf("a roamed peer's new pod CIDR: Changes() = %+v, want one update that leaves the endpoint alone", got)
	}
}

// A node that publishes no endpoint is added without one, and the endpoint WireGuard learns
// from its handshakes is never replaced, its session alive or not.
func TestChangesNeverSetAnEndpointForANodeThatPublishesNone(t *testing.T) {
	hidden := peers.Peer{Node: "node-h", PublicKey: pubKey("node-h"), AllowedIPs: cidrs("198.18.8.0/24")}
	got := peers.Changes([]peers.Peer{hidden}, nil, keepalive, later)
	if len(got) != 1 || got[0].Endpoint != nil || got[0].Remove {
		t.Fatalf("new node without an endpoint: Changes() = %+v, want it added without one", got)
	}
	learned := apply(nil, got)
	learned[0].Endpoint = udp("203.0.113.9:41000")
	for _, now := range []time.Time{{}, later} {
		if again := peers.Changes([]peers.Peer{hidden}, learned, keepalive, now); len(again) != 0 {
			t.Errorf("at %v: Changes() = %+v, want the learned endpoint left alone", now, again)
		}
	}
	if _, ok := peers.KeptUntil([]peers.Peer{hidden}, learned, later); ok {
		t.Error("KeptUntil: a peer without a published endpoint has nothing to wait for")
	}
}

// Alive is a handshake within the session's lifetime, never the zero time.
func TestAliveIsAHandshakeWithinTheSessionLifetime(t *testing.T) {
	now := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		handshake time.Time
		want      bool
	}{
		{time.Time{}, false},
		{now, true},
		{now.Add(-peers.SessionLifetime + time.Second), true},
		{now.Add(-peers.SessionLifetime), false},
	} {
		if got := peers.Alive(wgtypes.Peer{LastHandshakeTime: tc.handshake}, now); got != tc.want {
			t.Errorf("Alive with a handshake at %v = %v, want %v", tc.handshake, got, tc.want)
		}
	}
}

// A single address inside another node's range (an address borrowed from another node's Calico
// IPAM block) goes to the node that claims it; any other overlap still skips the later node.
func TestDesiredLetsASingleAddressSitInsideAnotherNodesRange(t *testing.T) {
	blocks := good("node-a", "192.0.2.1:51821", "198.18.1.0/26", "198.18.1.64/26")
	borrower := good("node-b", "192.0.2.2:51821", "198.18.1.128/26", "198.18.1.70/32")
	got, skipped := desiredPeers(local, []peers.Node{blocks, borrower})
	if len(got) != 2 || len(skipped) != 0 {
		t.Fatalf("peers %v, skipped %+v; want both nodes as peers", got, skipped)
	}
	overlapping := good("node-c", "192.0.2.3:51821", "198.18.1.64/27")
	hostInHost := good("node-d", "192.0.2.4:51821", "198.18.1.70/32")
	_, skipped = desiredPeers(local, []peers.Node{blocks, borrower, overlapping, hostInHost})
	if len(skipped) != 2 || skipped[0].Reason != peers.ReasonOverlappingIP || skipped[1].Reason != peers.ReasonOverlappingIP {
		t.Fatalf("skipped %+v; want node-c (a range inside a range) and node-d (the same address) as overlapping", skipped)
	}
}

// The central property, on arbitrary pod CIDRs, endpoints, node addresses, names and limits:
// no route and no AllowedIPs entry Desired makes lies outside the remote's ranges, inside the
// local cluster's, in a special range, or is wider than the minimum prefix length; no peer's
// endpoint is special, or other than one of its node's addresses unless it lies in the remote's
// endpoint ranges; no two peers share an endpoint; there are never more peers than the limit;
// and every peer's name is a DNS subdomain (a valid metric label), every skip's valid UTF-8.
func FuzzDesiredConfiguresOnlyWhatTheRulesAdmit(f *testing.F) {
	f.Add("198.18.1.0/24", "0.0.0.0/1", "192.0.2.1:51821", "192.0.2.2:51821", "192.0.2.3:51821", "192.0.2.1", "192.0.2.2", "node-3", uint8(0))
	f.Add("198.19.252.0/25", "fd00:18:1::/64", "192.0.2.1:51821", "192.0.2.1:51821", "[fd00::3]:51821", "192.0.2.1", "fd00::3", "node-3", uint8(2))
	f.Add("::ffff:127.0.0.1/128", "169.254.169.254/32", "203.0.113.9:51821", "[::ffff:203.0.113.9]:51821", "192.0.2.9:0", "::ffff:192.0.2.9", "10.0.0.1", "Node\xff", uint8(1))
	f.Add("198.18.1.0/24", "198.18.2.0/24", "[2001:db8::1]:51821", "198.51.100.1:51821", "192.0.2.2:51821", "198.51.100.1", "192.0.2.2", "node-1", uint8(3))
	guard := testGuard()
	ranges := []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("2001:db8::/32")}
	f.Fuzz(func(t *testing.T, a, b, e1, e2, e3, addr1, addr2, name string, limit uint8) {
		nodes := []peers.Node{
			withAddresses(good("node-1", e1, a), addr1),
			withAddresses(good("node-2", e2, b, a), addr2, addr1),
			withAddresses(good(name, e3, "198.18.3.0/24"), addr1, addr2),
			good("node-4", "192.0.2.4:51821", "198.18.4.0/24"),
			good("node-5", "192.0.2.5:51821", "198.18.5.0/24"),
		}
		maxPeers := int(limit % 8) // 0: no limit
		ps, skips := peers.Desired(local, nodes, peers.Rules{Guard: guard, EndpointRanges: ranges, MaxPeers: maxPeers})
		var nets []net.IPNet
		for _, p := range ps {
			nets = append(nets, p.AllowedIPs...)
		}
		for _, n := range append(nets, peers.Routes(ps)...) {
			addr, _ := netip.AddrFromSlice(n.IP)
			bits, _ := n.Mask.Size()
			if err := guard.Routed(netip.PrefixFrom(addr, bits)); err != nil {
				t.Fatalf("pod CIDRs %q, %q: %s is routed: %v", a, b, n.String(), err)
			}
		}
		if maxPeers > 0 && len(ps) > maxPeers {
			t.Fatalf("%d peers, over the limit of %d", len(ps), maxPeers)
		}
		endpoints := map[netip.AddrPort]string{}
		for _, p := range ps {
			ep := p.Endpoint.AddrPort()
			ep = netip.AddrPortFrom(ep.Addr().Unmap(), ep.Port())
			if other, ok := endpoints[ep]; ok {
				t.Fatalf("peers %s and %s share the endpoint %s", other, p.Node, ep)
			}
			endpoints[ep] = p.Node
			if ep.Port() == 0 || addrguard.Special(ep.Addr()) != nil {
				t.Fatalf("peer %s has the endpoint %s", p.Node, ep)
			}
			if !slices.ContainsFunc(ranges, func(r netip.Prefix) bool { return r.Contains(ep.Addr()) }) && !ownedBy(nodes, p.Node, ep.Addr()) {
				t.Fatalf("peer %s has the endpoint %s, neither its node's address nor in the endpoint ranges", p.Node, ep)
			}
			if len(validation.IsDNS1123Subdomain(p.Node)) > 0 {
				t.Fatalf("peer %q: its name is not a DNS subdomain", p.Node)
			}
		}
		for _, s := range skips {
			if !utf8.ValidString(s.Node) {
				t.Fatalf("skip %+v: the name is not valid UTF-8", s)
			}
		}
	})
}

// ownedBy reports whether a node called name has a among its addresses.
func ownedBy(nodes []peers.Node, name string, a netip.Addr) bool {
	for _, n := range nodes {
		if n.Name != name {
			continue
		}
		for _, s := range n.Addresses {
			if own, err := netip.ParseAddr(s); err == nil && own.Unmap() == a {
				return true
			}
		}
	}
	return false
}
