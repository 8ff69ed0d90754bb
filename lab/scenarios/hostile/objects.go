package hostile

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// fakeNode is a Node of the hostile remote that no kubelet runs, annotated for the consumer as
// semaphore-wireguard would annotate it: what it claims, and the reason semaphore-wireguard
// in the consumer must skip it for.
type fakeNode struct {
	Name    string
	PodCIDR string
	// Address is its InternalIP; Endpoint the WireGuard endpoint it publishes for the consumer.
	Address, Endpoint string
	// Want is the reason label of semaphore_wg_skipped_peers it must be counted under.
	Want  string
	Claim string
}

// hostileNodes are the fake Nodes: remoteRange is the remote's pod range, consumerRange the
// consumer's, taken a real node's pod CIDR (which another node may not overlap), foreign the
// address of a real node of the remote (an endpoint another node may not take) and port the
// remote's WireGuard port for the consumer. Every node but one breaks one rule; the last
// breaks none and is skipped only because the remote has more nodes than its peer limit.
func hostileNodes(remoteRange, consumerRange, taken netip.Prefix, foreign string, port int) []fakeNode {
	network := netip.MustParsePrefix(layout.SpecOf(layout.HostileRemote).Network.CIDR).Addr()
	addr := func(i int) string { return layout.AddrAdd(network, 200+i).String() }
	endpoint := func(a string) string { return net.JoinHostPort(a, strconv.Itoa(port)) }
	// Single addresses inside the remote's range and inside a real node's pod CIDR: the one
	// overlap a node may have (an address borrowed from another node's IPAM block).
	single := func(i int) string { return netip.PrefixFrom(layout.AddrAdd(remoteRange.Addr(), 240+i), 32).String() }
	metadata := netip.MustParseAddr("169.254.169.254")
	nodes := []fakeNode{
		{Name: "half-low", PodCIDR: "0.0.0.0/1", Want: addrguard.ReasonTooWide, Claim: "pod CIDR 0.0.0.0/1"},
		{Name: "half-high", PodCIDR: "128.0.0.0/1", Want: addrguard.ReasonTooWide, Claim: "pod CIDR 128.0.0.0/1"},
		{Name: "consumer-range", PodCIDR: consumerRange.String(), Want: addrguard.ReasonOutsideRanges, Claim: "the consumer's own pod range"},
		{Name: "metadata-range", PodCIDR: netip.PrefixFrom(metadata, 24).Masked().String(), Want: addrguard.ReasonSpecial, Claim: "the metadata address's range"},
		// The metadata service's DNS port, as a hostile remote would aim at it.
		{Name: "metadata-endpoint", PodCIDR: single(1), Endpoint: net.JoinHostPort(metadata.String(), "53"), Want: peers.ReasonBadEndpoint, Claim: "endpoint 169.254.169.254:53"},
		{Name: "foreign-endpoint", PodCIDR: single(2), Endpoint: endpoint(foreign), Want: peers.ReasonForeignEndpoint, Claim: "endpoint " + foreign + ", a real node's address"},
		{Name: "same-endpoint-a", PodCIDR: single(3), Address: addr(7), Want: peers.ReasonDuplicateEndpoint, Claim: "the endpoint of same-endpoint-b"},
		{Name: "same-endpoint-b", PodCIDR: single(4), Address: addr(7), Want: peers.ReasonDuplicateEndpoint, Claim: "the endpoint of same-endpoint-a"},
		{Name: "overlap", PodCIDR: netip.PrefixFrom(taken.Addr(), taken.Bits()+1).String(), Want: peers.ReasonOverlappingIP, Claim: "half of " + taken.String() + ", a real node's pod CIDR"},
		{Name: "over-limit", PodCIDR: single(5), Want: peers.ReasonPeerLimit, Claim: "nothing wrong, beyond the peer limit"},
	}
	for i := range nodes {
		n := &nodes[i]
		n.Name = hostileNodePrefix + n.Name
		if n.Address == "" {
			n.Address = addr(i + 1)
		}
		if n.Endpoint == "" {
			n.Endpoint = endpoint(n.Address)
		}
	}
	return nodes
}

// nodeObject is f as a Node of the remote, annotated for consumer with key: unschedulable and
// tainted, without the kubernetes.io/os label (no DaemonSet, semaphore-wireguard's included,
// puts a pod there), and with its address in its status.
func (f fakeNode) nodeObject(consumer string, key wgtypes.Key) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   f.Name,
			Labels: map[string]string{layout.HostileLabel: "true"},
			Annotations: map[string]string{
				peers.PubKeyAnnotation(consumer):   key.String(),
				peers.EndpointAnnotation(consumer): f.Endpoint,
			},
		},
		Spec: corev1.NodeSpec{
			PodCIDR:       f.PodCIDR,
			PodCIDRs:      []string{f.PodCIDR},
			Unschedulable: true,
			Taints:        []corev1.Taint{{Key: layout.HostileLabel, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: f.Address}}},
	}
}

// wantSkips is how many of nodes each agent of the consumer must skip, by reason.
func wantSkips(nodes []fakeNode) map[string]float64 {
	out := map[string]float64{}
	for _, n := range nodes {
		out[n.Want]++
	}
	return out
}

// hostileAddr is an address the remote publishes, and why the consumer must refuse it.
type hostileAddr struct {
	Addr, Reason string
}

// hostileEndpoints are the endpoints of the hostile Service's EndpointSlice: claim (a consumer
// pod's address), two special addresses the API server accepts, an address outside every
// cluster's range, and honest, inside the remote's range, which is mirrored.
func hostileEndpoints(claim, honest string) []hostileAddr {
	return []hostileAddr{
		{claim, addrguard.ReasonOutsideRanges},
		{"192.0.2.10", addrguard.ReasonOutsideRanges}, // TEST-NET-1: nobody's pods
		{"168.63.129.16", addrguard.ReasonSpecial},    // Azure's host
		{"100.100.100.200", addrguard.ReasonSpecial},  // Alibaba Cloud's metadata
		{honest, ""},
	}
}

// metadataAddr is the metadata service's address, which a conforming API server refuses in an
// EndpointSlice (as it refuses loopback and link-local addresses): the lab tries it anyway.
const metadataAddr = "169.254.169.254"

// hostileServiceNames are the remote's labelled Services, sorted (namespace/name order, all in
// one namespace): the big one, the one with the hostile endpoints, and enough others to go
// over limit by over.
func hostileServiceNames(limit, over int) []string {
	names := []string{"big-annotation", "endpoints"}
	for i := 0; len(names) < limit+over; i++ {
		names = append(names, fmt.Sprintf("svc-%02d", i))
	}
	slices.Sort(names)
	return names
}

// hostileService is a Service labelled for mirroring, without a selector (the lab writes its
// EndpointSlice).
func hostileService(name string) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: layout.HostileNamespace, Labels: map[string]string{layout.MirrorLabel: "true", layout.HostileLabel: "true"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	if name == "big-annotation" {
		svc.Annotations = map[string]string{layout.HostileLabel + "-filler": strings.Repeat("x", hostileAnnotationBytes)}
	}
	return svc
}

// hostileSlice is an EndpointSlice of service, named name, with one ready endpoint per address.
func hostileSlice(name, service string, addrs ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: layout.HostileNamespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: service, discoveryv1.LabelManagedBy: "semaphore-lab", layout.HostileLabel: "true",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, a := range addrs {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return s
}

// hostilePod is a pod labelled for semaphore-policy (its set: <remote>-hostile-hostile), bound
// to node, which runs no kubelet: its status is what the lab writes (hostilePodStatus).
func hostilePod(name, node string, hostNetwork bool) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: layout.HostileNamespace, Labels: map[string]string{layout.PolicyLabel: layout.HostileNamespace, layout.HostileLabel: "true"}},
		Spec: corev1.PodSpec{
			NodeName:                     node,
			HostNetwork:                  hostNetwork,
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "app", Image: "registry.invalid/hostile:never-pulled"}},
			// The node goes unreachable (nothing posts its status): no eviction meanwhile.
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
	}
}

// hostilePodStatus is the status a kubelet would write for a running pod with address ip.
func hostilePodStatus(ip, hostIP string) corev1.PodStatus {
	return corev1.PodStatus{
		Phase:   corev1.PodRunning,
		PodIP:   ip,
		PodIPs:  []corev1.PodIP{{IP: ip}},
		HostIP:  hostIP,
		HostIPs: []corev1.HostIP{{IP: hostIP}},
	}
}

// create creates the scenario's objects in the remote: the fake Nodes, the Services and their
// EndpointSlices, and the pods with the status a kubelet would write; and says what it made.
func (h *hostileRun) create(ctx context.Context) error {
	for _, f := range h.nodes {
		if err := h.createNode(ctx, f); err != nil {
			return err
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: layout.HostileNamespace, Labels: map[string]string{layout.HostileLabel: "true"}}}
	if _, err := h.admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := h.createServices(ctx); err != nil {
		return err
	}
	for _, p := range []struct {
		name, ip    string
		hostNetwork bool
	}{{"claim", h.claim, false}, {"host-network", h.hostNetworkIP, true}, {"honest", h.honestPod, false}} {
		if err := h.createPod(ctx, p.name, p.ip, p.hostNetwork); err != nil {
			return fmt.Errorf("pod %s: %w", p.name, err)
		}
	}
	h.printCreated()
	return nil
}

// createNode creates fake node f with a key of its own, and writes its status.
func (h *hostileRun) createNode(ctx context.Context, f fakeNode) error {
	c := h.admin
	key, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		return err
	}
	h.keys[key.PublicKey().String()] = f.Name
	obj := f.nodeObject(h.consumer, key.PublicKey())
	if _, err := c.CoreV1().Nodes().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("node %s: %w", f.Name, err)
	}
	// As a kubelet does: the status, its addresses, apart (kube-controller-manager writes to
	// the new Node meanwhile).
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.CoreV1().Nodes().Get(ctx, f.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.Addresses = obj.Status.Addresses
		_, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("node %s's status: %w", f.Name, err)
	}
	return nil
}

// createServices creates the labelled Services and their EndpointSlices, and tries the
// EndpointSlice with the metadata address.
func (h *hostileRun) createServices(ctx context.Context) error {
	c := h.admin
	for _, name := range h.services {
		if _, err := c.CoreV1().Services(layout.HostileNamespace).Create(ctx, hostileService(name), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("service %s: %w", name, err)
		}
		addrs := floodAddrs(0)
		if name == "endpoints" {
			addrs = h.endpointAddrs()
		}
		if _, err := c.DiscoveryV1().EndpointSlices(layout.HostileNamespace).Create(ctx, hostileSlice(name, name, addrs...), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("EndpointSlice %s: %w", name, err)
		}
	}
	_, h.metadataErr = c.DiscoveryV1().EndpointSlices(layout.HostileNamespace).Create(ctx, hostileSlice("endpoints-metadata", "endpoints", metadataAddr), metav1.CreateOptions{})
	return nil
}

// endpointAddrs are the addresses of the hostile Service's EndpointSlice.
func (h *hostileRun) endpointAddrs() []string {
	var addrs []string
	for _, e := range hostileEndpoints(h.claim, h.honestEndpoint) {
		addrs = append(addrs, e.Addr)
	}
	return addrs
}

// printCreated says what create made.
func (h *hostileRun) printCreated() {
	out := h.l.Out()
	fmt.Fprintf(out, "  created in %s: %d fake Nodes annotated for %s, %d mirrored Services (the cap is %d), 3 pods labelled for semaphore-policy\n",
		h.remote, len(h.nodes), h.consumer, len(h.services), layout.HostileMirrorCap)
	for _, f := range h.nodes {
		fmt.Fprintf(out, "    node %-32s pod CIDR %-16s endpoint %-22s %s\n", f.Name, f.PodCIDR, f.Endpoint, f.Claim)
	}
	fmt.Fprintf(out, "    Service %s/endpoints: endpoints %s (%s is %s's pod %s)\n", layout.HostileNamespace, strings.Join(h.endpointAddrs(), ", "), h.claim, h.consumer, layout.ForwarderName)
	if h.metadataErr != nil {
		fmt.Fprintf(out, "    an EndpointSlice with %s: refused by %s's API server (%v), as a conforming one does\n", metadataAddr, h.remote, firstLine(h.metadataErr.Error()))
	} else {
		fmt.Fprintf(out, "    an EndpointSlice with %s: accepted by %s's API server\n", metadataAddr, h.remote)
	}
	fmt.Fprintf(out, "    pods: claim (status podIPs %s, %s's), host-network (%s), honest (%s)\n", h.claim, h.consumer, h.hostNetworkIP, h.honestPod)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// createPod creates a hostile pod on the first fake node and writes its status. The namespace's
// default ServiceAccount, which admission requires, comes a moment after the namespace.
func (h *hostileRun) createPod(ctx context.Context, name, ip string, hostNetwork bool) error {
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		pod, err = h.admin.CoreV1().Pods(layout.HostileNamespace).Create(ctx, hostilePod(name, h.nodes[0].Name, hostNetwork), metav1.CreateOptions{})
		if apierrors.IsForbidden(err) {
			return false, nil // no ServiceAccount yet
		}
		return err == nil, err
	})
	if err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := h.admin.CoreV1().Pods(layout.HostileNamespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod.Status = hostilePodStatus(ip, h.nodes[0].Address)
		_, err = h.admin.CoreV1().Pods(layout.HostileNamespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
}

// cleanUp deletes the scenario's objects: the pods at once (no kubelet would confirm their
// end), the namespace, the fake Nodes; and waits until they are gone.
func (h *hostileRun) cleanUp(ctx context.Context) error {
	if h.cleaned {
		return nil
	}
	h.cleaned = true
	c := h.admin
	selector := metav1.ListOptions{LabelSelector: layout.HostileLabel + "=true"}
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	var errs []error
	if err := c.CoreV1().Pods(layout.HostileNamespace).DeleteCollection(ctx, now, selector); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, err)
	}
	if err := c.CoreV1().Namespaces().Delete(ctx, layout.HostileNamespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, err)
	}
	if err := c.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, selector); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, hostileSettle, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Namespaces().Get(ctx, layout.HostileNamespace, metav1.GetOptions{})
		nodes, lerr := c.CoreV1().Nodes().List(ctx, selector)
		return apierrors.IsNotFound(err) && lerr == nil && len(nodes.Items) == 0, nil
	})
}
