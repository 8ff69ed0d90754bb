package netset_test

import (
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/addrguard/addrguardtest"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

func TestSetNamePlain(t *testing.T) {
	tests := []struct {
		name string
		src  netset.Source
		want string
	}{
		{"lower case", netset.Source{Cluster: "gcp", Namespace: "sys-log", Name: "forwarder"}, "gcp-sys-log-forwarder"},
		{"digits and dashes", netset.Source{Cluster: "aws-2", Namespace: "team-1", Name: "web-0"}, "aws-2-team-1-web-0"},
		{"dot", netset.Source{Cluster: "merit", Namespace: "infra", Name: "dns.internal"}, "merit-infra-dns.internal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := netset.SetName(tt.src)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("SetName(%v) mismatch (-want +got):\n%s", tt.src, diff)
			}
		})
	}
}

// Label values may hold upper case, underscores and dots in places object names may not; the
// set's name must still be a valid name, the same every time, and distinct from that of every
// other value.
func TestSetNameFromAnyLabelValue(t *testing.T) {
	values := []string{
		"forwarder",
		"Fwd_A",
		"fwd-a",
		"FWD-A",
		"fwd_a",
		"fwd.a",
		"Fwd.A",
		"A",
		"a",
		"a_b_c",
		"a-b-c",
		"a..b",
		"a.-b",
		"a-.b",
		"a_.b",
		"a._b",
		strings.Repeat("A", 63),
		strings.Repeat("a", 63),
		strings.Repeat("a_", 31) + "a",
	}
	seen := map[string]string{}
	for _, v := range values {
		t.Run(v, func(t *testing.T) {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Fatalf("test value %q is not a label value: %v", v, errs)
			}
			// The longest cluster and namespace names there can be.
			for _, src := range []netset.Source{
				{Cluster: "gcp", Namespace: "sys-log", Name: v},
				{Cluster: strings.Repeat("c", 63), Namespace: strings.Repeat("n", 63), Name: v},
			} {
				got := netset.SetName(src)
				if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
					t.Errorf("SetName(%v) = %q is not a valid object name: %s", src, got, strings.Join(errs, "; "))
				}
				if again := netset.SetName(src); again != got {
					t.Errorf("SetName(%v) = %q, then %q", src, got, again)
				}
			}
			src := netset.Source{Cluster: "gcp", Namespace: "sys-log", Name: v}
			got := netset.SetName(src)
			if other, ok := seen[got]; ok {
				t.Errorf("SetName gives %q for label values %q and %q", got, other, v)
			}
			seen[got] = v
		})
	}
}

func TestSetNameDistinctForValuesThatMapAlike(t *testing.T) {
	a := netset.SetName(netset.Source{Cluster: "gcp", Namespace: "ns", Name: "Fwd_A"})
	b := netset.SetName(netset.Source{Cluster: "gcp", Namespace: "ns", Name: "fwd-a"})
	if a == b {
		t.Errorf("Fwd_A and fwd-a both give %q", a)
	}
	if diff := cmp.Diff("gcp-ns-fwd-a", b); diff != "" {
		t.Errorf("SetName(fwd-a) mismatch (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(a, "gcp-ns-fwd-a-") {
		t.Errorf("SetName(Fwd_A) = %q, want the cleaned name gcp-ns-fwd-a plus a hash", a)
	}
}

func TestLabelsAndSourceOf(t *testing.T) {
	src := netset.Source{Cluster: "gcp", Namespace: "sys-log", Name: "Fwd_A"}
	want := map[string]string{
		ownership.ManagedBy:      ownership.Policy,
		netset.OriginalManagedBy: ownership.Policy,
		netset.LabelCluster:      "gcp",
		netset.LabelNamespace:    "sys-log",
		netset.LabelName:         "Fwd_A",
	}
	got := netset.Labels(src)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Labels() mismatch (-want +got):\n%s", diff)
	}
	for k, v := range got {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("label %s=%q: %v", k, v, errs)
		}
	}
	back, ok := netset.SourceOf(got)
	if !ok {
		t.Fatalf("SourceOf(%v) not ok", got)
	}
	if diff := cmp.Diff(src, back); diff != "" {
		t.Errorf("SourceOf(Labels()) mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("gcp/sys-log/Fwd_A", src.String()); diff != "" {
		t.Errorf("String() mismatch (-want +got):\n%s", diff)
	}
}

func TestSourceOfIncomplete(t *testing.T) {
	full := netset.Labels(netset.Source{Cluster: "gcp", Namespace: "ns", Name: "set"})
	for _, missing := range []string{netset.LabelCluster, netset.LabelNamespace, netset.LabelName} {
		t.Run(missing, func(t *testing.T) {
			l := map[string]string{}
			for k, v := range full {
				if k != missing {
					l[k] = v
				}
			}
			if s, ok := netset.SourceOf(l); ok {
				t.Errorf("SourceOf without %s = %v, ok; want not ok", missing, s)
			}
		})
	}
	if s, ok := netset.SourceOf(nil); ok {
		t.Errorf("SourceOf(nil) = %v, ok; want not ok", s)
	}
}

// pod returns a pod in phase with PodIP and PodIPs set as a kubelet sets them.
func pod(name string, phase corev1.PodPhase, ips ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Status:     corev1.PodStatus{Phase: phase},
	}
	if len(ips) > 0 {
		p.Status.PodIP = ips[0]
	}
	for _, ip := range ips {
		p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	return p
}

// hostNetwork makes p run in its node's network namespace.
func hostNetwork(p *corev1.Pod) *corev1.Pod {
	p.Spec.HostNetwork = true
	return p
}

func TestIncluded(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"running with address", pod("p", corev1.PodRunning, "10.0.0.1"), true},
		{"pending with address", pod("p", corev1.PodPending, "10.0.0.1"), true},
		{"unknown phase with address", pod("p", corev1.PodUnknown, "10.0.0.1"), true},
		{"succeeded", pod("p", corev1.PodSucceeded, "10.0.0.1"), false},
		{"failed", pod("p", corev1.PodFailed, "10.0.0.1"), false},
		{"running without address", pod("p", corev1.PodRunning), false},
		{"pending without address", pod("p", corev1.PodPending), false},
		{"PodIP only", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"}}, true},
		{"PodIPs only", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}}}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := netset.Included(tt.pod); got != tt.want {
				t.Errorf("Included() = %v, want %v", got, tt.want)
			}
		})
	}
}

// guard holds aws to the ranges of the addresses of the cases below, and the local cluster has
// 10.0.7.0/24.
var guard = func() *addrguard.Guard {
	var ranges addrguard.Ranges
	if err := ranges.Decode("aws:10.0.0.0/16,aws:192.168.0.0/16,aws:9.0.0.0/8,aws:fd00::/64"); err != nil {
		panic(err)
	}
	g := addrguard.New(ranges)
	g.SetLocal("test", []netip.Prefix{netip.MustParsePrefix("10.0.7.0/24")})
	return g
}()

func TestNets(t *testing.T) {
	tests := []struct {
		name        string
		pods        []*corev1.Pod
		want        []string
		wantBad     []string
		wantRefused []addrguard.Refused
	}{
		{
			name: "addresses the remote may not publish are refused, each once",
			pods: []*corev1.Pod{
				pod("ok", corev1.PodRunning, "10.0.0.1"),
				pod("metadata", corev1.PodRunning, "169.254.169.254"),
				pod("elsewhere", corev1.PodRunning, "198.51.100.7", "fd00:99::1"),
				pod("ours", corev1.PodRunning, "10.0.7.9"),
			},
			want: []string{"10.0.0.1/32"},
			wantRefused: []addrguard.Refused{
				{Source: "ns/metadata", Addr: "169.254.169.254", Reason: addrguard.ReasonSpecial},
				{Source: "ns/elsewhere", Addr: "198.51.100.7", Reason: addrguard.ReasonOutsideRanges},
				{Source: "ns/elsewhere", Addr: "fd00:99::1", Reason: addrguard.ReasonOutsideRanges},
				{Source: "ns/ours", Addr: "10.0.7.9", Reason: addrguard.ReasonLocal},
			},
		},
		{
			// The node's address, shared by the kubelet and every host-network pod there: refused
			// even inside the remote's ranges, while a pod of the same labels with its own
			// address is in. A local address of a host-network pod is refused as host_network.
			name: "every address of a host-network pod is refused",
			pods: []*corev1.Pod{
				hostNetwork(pod("node-agent", corev1.PodRunning, "10.0.1.5", "fd00::5")),
				hostNetwork(pod("node-agent-local", corev1.PodRunning, "10.0.7.5")),
				pod("ok", corev1.PodRunning, "10.0.0.1"),
			},
			want: []string{"10.0.0.1/32"},
			wantRefused: []addrguard.Refused{
				{Source: "ns/node-agent", Addr: "10.0.1.5", Reason: netset.ReasonHostNetwork},
				{Source: "ns/node-agent", Addr: "fd00::5", Reason: netset.ReasonHostNetwork},
				{Source: "ns/node-agent-local", Addr: "10.0.7.5", Reason: netset.ReasonHostNetwork},
			},
		},
		{
			name: "none",
			want: []string{},
		},
		{
			name: "IPv4 is a /32",
			pods: []*corev1.Pod{pod("a", corev1.PodRunning, "10.0.0.1")},
			want: []string{"10.0.0.1/32"},
		},
		{
			name: "IPv6 is a /128",
			pods: []*corev1.Pod{pod("a", corev1.PodRunning, "fd00::1")},
			want: []string{"fd00::1/128"},
		},
		{
			name: "IPv6 in canonical form",
			pods: []*corev1.Pod{pod("a", corev1.PodRunning, "FD00:0:0:0:0:0:0:1")},
			want: []string{"fd00::1/128"},
		},
		{
			name: "dual stack gives both",
			pods: []*corev1.Pod{pod("a", corev1.PodRunning, "10.0.0.1", "fd00::1")},
			want: []string{"10.0.0.1/32", "fd00::1/128"},
		},
		{
			name: "dual stack listed IPv6 first",
			pods: []*corev1.Pod{pod("a", corev1.PodRunning, "fd00::1", "10.0.0.1")},
			want: []string{"10.0.0.1/32", "fd00::1/128"},
		},
		{
			name: "duplicates across pods removed",
			pods: []*corev1.Pod{
				pod("a", corev1.PodRunning, "10.0.0.1", "fd00::1"),
				pod("b", corev1.PodPending, "10.0.0.1", "fd00::1"),
				pod("c", corev1.PodRunning, "10.0.0.2"),
			},
			want: []string{"10.0.0.1/32", "10.0.0.2/32", "fd00::1/128"},
		},
		{
			name: "sorted numerically, IPv4 first",
			pods: []*corev1.Pod{
				pod("a", corev1.PodRunning, "fd00::10"),
				pod("b", corev1.PodRunning, "10.0.0.10"),
				pod("c", corev1.PodRunning, "fd00::2"),
				pod("d", corev1.PodRunning, "10.0.0.2"),
				pod("e", corev1.PodRunning, "9.255.255.255"),
				pod("f", corev1.PodRunning, "192.168.0.1"),
			},
			want: []string{"9.255.255.255/32", "10.0.0.2/32", "10.0.0.10/32", "192.168.0.1/32", "fd00::2/128", "fd00::10/128"},
		},
		{
			name: "finished and address-less pods left out",
			pods: []*corev1.Pod{
				pod("a", corev1.PodRunning, "10.0.0.1"),
				pod("b", corev1.PodSucceeded, "10.0.0.2"),
				pod("c", corev1.PodFailed, "10.0.0.3"),
				pod("d", corev1.PodPending),
			},
			want: []string{"10.0.0.1/32"},
		},
		{
			name: "PodIP only",
			pods: []*corev1.Pod{{Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"}}},
			want: []string{"10.0.0.1/32"},
		},
		{
			name: "PodIPs only",
			pods: []*corev1.Pod{{Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}}}}},
			want: []string{"10.0.0.1/32", "fd00::1/128"},
		},
		{
			name: "IPv4-mapped IPv6 address is the IPv4 address",
			pods: []*corev1.Pod{
				pod("a", corev1.PodRunning, "::ffff:10.0.0.1"),
				pod("b", corev1.PodRunning, "10.0.0.1"),
			},
			want: []string{"10.0.0.1/32"},
		},
		{
			name:    "unparsable address reported and left out",
			pods:    []*corev1.Pod{{Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.256"}}, pod("b", corev1.PodRunning, "10.0.0.2")},
			want:    []string{"10.0.0.2/32"},
			wantBad: []string{"10.0.0.256"},
		},
		{
			name:    "CIDR is not an address",
			pods:    []*corev1.Pod{{Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.0/24"}}},
			want:    []string{},
			wantBad: []string{"10.0.0.0/24"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := make([]*corev1.Pod, len(tt.pods))
			for i, p := range tt.pods {
				before[i] = p.DeepCopy()
			}
			got, bad, refused := netset.Nets(tt.pods, guard.For("aws"))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Nets() nets mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantBad, bad); diff != "" {
				t.Errorf("Nets() bad mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRefused, refused); diff != "" {
				t.Errorf("Nets() refused mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.pods, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Nets() changed its input (-want +got):\n%s", diff)
			}
		})
	}
}

// A set carrying the original semaphore-policy's labels and not ours was made by the original;
// ours, or one missing part of its source, was not.
func TestMadeByOriginal(t *testing.T) {
	src := netset.Source{Cluster: "gcp", Namespace: "sys-log", Name: "forwarder"}
	original := netset.Labels(src)
	delete(original, ownership.ManagedBy)
	if got, ok := netset.MadeByOriginal(original); !ok || got != src {
		t.Errorf("MadeByOriginal(original's labels) = %v, %v; want %v, true", got, ok, src)
	}
	if _, ok := netset.MadeByOriginal(netset.Labels(src)); ok {
		t.Error("MadeByOriginal(our labels) = true")
	}
	partial := maps.Clone(original)
	delete(partial, netset.LabelName)
	if _, ok := netset.MadeByOriginal(partial); ok {
		t.Error("MadeByOriginal(without the name label) = true")
	}
	other := maps.Clone(original)
	other[netset.OriginalManagedBy] = "someone-else"
	if _, ok := netset.MadeByOriginal(other); ok {
		t.Error("MadeByOriginal(managed-by someone else) = true")
	}
}

// The central property, on arbitrary pods: every net of a set is a host network of an address
// the remote may publish (inside its ranges, outside the local cluster's and the special ones)
// of a pod that is not host-network.
func FuzzNetsHoldOnlyWhatTheRemoteMayPublish(f *testing.F) {
	f.Add("198.18.1.5,198.18.7.9;169.254.169.254;::ffff:198.18.2.1,fd00:1::5", uint8(0b010))
	f.Add("10.0.0.1;198.18.3.3;fd00:1:0:7::1;not an address;198.18.3.3", uint8(0b1010))
	guard := addrguard.New(addrguard.Ranges{"aws": addrguardtest.Ranges})
	guard.SetLocal("test", addrguardtest.Local)
	f.Fuzz(func(t *testing.T, pods string, hostNetwork uint8) {
		var in []*corev1.Pod
		published := map[string]bool{} // by a pod that is not host-network
		for i, ips := range strings.Split(pods, ";") {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("p", i)}}
			p.Spec.HostNetwork = hostNetwork&(1<<(i%8)) != 0
			for ip := range strings.SplitSeq(ips, ",") {
				p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
				if a, err := netip.ParseAddr(ip); err == nil && !p.Spec.HostNetwork {
					published[a.Unmap().WithZone("").String()] = true
				}
			}
			in = append(in, p)
		}
		nets, _, _ := netset.Nets(in, guard.For("aws"))
		for _, n := range nets {
			p, err := netip.ParsePrefix(n)
			if err != nil || !p.IsSingleIP() {
				t.Fatalf("net %q is not a host network", n)
			}
			if !addrguardtest.Allowed(p.Addr().String()) || !published[p.Addr().String()] {
				t.Fatalf("net %s is in the set (published by a pod that is not host-network: %v)", n, published[p.Addr().String()])
			}
		}
	})
}
