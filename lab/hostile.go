package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/testbed"
)

// The hostile remote (lab check, after the global service's failover): merit turns hostile
// towards gcp. With merit's admin credentials the lab creates in merit what a hostile or broken
// remote would publish: Nodes no kubelet runs, claiming half the internet, gcp's own pod range,
// the metadata range, endpoints that are not theirs; a mirrored Service whose EndpointSlice
// points at a gcp pod, a special address and one outside merit's range; a pod claiming a gcp
// pod's address and a host-network pod; more mirrored Services than gcp mirrors of one remote,
// one with 200 KiB of annotations; and a flood of EndpointSlice updates. Meanwhile gcp's
// forwarders keep sending to aws's fluentd. The lab then asserts that nothing of it reached
// gcp's (and aws's, merit's other consumer) mirrors, network sets, WireGuard devices or routes,
// that every refusal was counted and alerted on, that the honest traffic kept flowing and the
// controllers stayed within their memory limits, and, once the objects are deleted, that the
// lab is as healthy as before.
const (
	hostileRemote   = "merit"
	hostileConsumer = "gcp"
	// hostileNamespace holds the hostile Services, EndpointSlices and pods in the remote.
	hostileNamespace = "hostile"
	// hostileLabel marks every object of the scenario (value "true"), so that the status finds
	// them and the cleanup deletes exactly them.
	hostileLabel = "lab.semaphore.uw.io/hostile"
	// hostileNodePrefix starts the fake Nodes' names: after "merit-node-", so that the real
	// nodes come first by name and remain the peers within the peer limit.
	hostileNodePrefix = "z-hostile-"
	// hostileMirrorCap is serviceMirror.maxServicesPerRemote in the lab's values: small, so that
	// the scenario goes over it with a few dozen Services.
	hostileMirrorCap = 30
	// hostileOverCap is how many labelled Services beyond the cap the remote creates.
	hostileOverCap = 20
	// hostileAnnotationBytes is the size of the big Service's annotation (the API server allows
	// 256 KiB of annotations per object).
	hostileAnnotationBytes = 200 << 10
	// hostileFloodFor is how long the EndpointSlice updates go on.
	hostileFloodFor = 40 * time.Second
	// hostileSettle bounds the wait for the consumers to show the scenario's effects, for the
	// alert to fire, and for the lab to be healthy again after the cleanup.
	hostileSettle = 2 * time.Minute
	// hostileBaseline is the window of honest traffic before the scenario that the flood's is
	// compared with.
	hostileBaseline = 30 * time.Second
	// hostileAlert is the alert the refusals must fire.
	hostileAlert = "SemaphoreRemoteAddressesRefused"
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
	underlay := netip.MustParsePrefix(underlayCIDR).Addr()
	addr := func(i int) string { return addrAdd(underlay, 200+i).String() }
	endpoint := func(a string) string { return net.JoinHostPort(a, strconv.Itoa(port)) }
	// Single addresses inside the remote's range and inside a real node's pod CIDR: the one
	// overlap a node may have (an address borrowed from another node's IPAM block).
	single := func(i int) string { return netip.PrefixFrom(addrAdd(remoteRange.Addr(), 240+i), 32).String() }
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
			Labels: map[string]string{hostileLabel: "true"},
			Annotations: map[string]string{
				peers.PubKeyAnnotation(consumer):   key.String(),
				peers.EndpointAnnotation(consumer): f.Endpoint,
			},
		},
		Spec: corev1.NodeSpec{
			PodCIDR:       f.PodCIDR,
			PodCIDRs:      []string{f.PodCIDR},
			Unschedulable: true,
			Taints:        []corev1.Taint{{Key: hostileLabel, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
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
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: hostileNamespace, Labels: map[string]string{mirrorLabel: "true", hostileLabel: "true"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	if name == "big-annotation" {
		svc.Annotations = map[string]string{hostileLabel + "-filler": strings.Repeat("x", hostileAnnotationBytes)}
	}
	return svc
}

// hostileSlice is an EndpointSlice of service, named name, with one ready endpoint per address.
func hostileSlice(name, service string, addrs ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: hostileNamespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: service, discoveryv1.LabelManagedBy: "semaphore-lab", hostileLabel: "true",
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
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: hostileNamespace, Labels: map[string]string{policyLabel: hostileNamespace, hostileLabel: "true"}},
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

// hostileRun is one run of the scenario.
type hostileRun struct {
	l                        *lab
	remote, consumer         string
	admin                    kubernetes.Interface
	nodes                    []fakeNode
	keys                     map[string]string // public key -> fake node
	services                 []string
	claim, honestEndpoint    string
	honestPod, hostNetworkIP string
	// refused are the addresses no consumer object may hold, with the reason.
	refused map[string]string
	// metadataErr is how the remote's API server answered the EndpointSlice with the metadata
	// address (nil: it took it).
	metadataErr error
	// cleaned tells whether the objects have been deleted.
	cleaned bool
}

// checkHostileRemote runs the scenario and returns the problems.
func (l *lab) checkHostileRemote(ctx context.Context) []string {
	fmt.Fprintf(l.out, "Hostile remote (%s towards %s, with %s's admin credentials)\n", hostileRemote, hostileConsumer, hostileRemote)
	st := l.snapshot()
	if st.nodesSkipped() {
		fmt.Fprintln(l.out, "  skipped: no nodes, so no controllers run")
		return nil
	}
	h, err := l.newHostileRun(st)
	if err != nil {
		return []string{fmt.Sprintf("hostile remote: %v", err)}
	}
	start := time.Now()
	defer func() {
		if err := h.cleanUp(context.WithoutCancel(ctx)); err != nil {
			l.logf("hostile remote: cleaning up: %v", err)
		}
	}()
	if err := h.create(ctx); err != nil {
		return []string{fmt.Sprintf("hostile remote: creating the objects in %s: %v", h.remote, err)}
	}
	floodStart := time.Now()
	flood, seen := h.floodWatching(ctx, hostileFloodFor)
	floodEnd := time.Now()
	fmt.Fprintf(l.out, "  flood: %d EndpointSlice updates in %s (%.0f/s, one client without a rate limit), %d failed; %d looks at the consumers meanwhile\n",
		flood.ok+flood.failed, floodEnd.Sub(floodStart).Round(100*time.Millisecond), float64(flood.ok)/floodEnd.Sub(floodStart).Seconds(), flood.failed, flood.looks)
	problems := append(seen, h.trafficDuring(st, start, floodStart, floodEnd)...)
	problems = append(problems, h.waitFor(ctx, "the consumers to show exactly the scenario's effects", func(ctx context.Context) []string {
		return h.leaks(ctx, expectScenario)
	})...)
	problems = append(problems, h.countsAndAlert(ctx)...)
	problems = append(problems, h.pluginCheck(ctx)...)
	problems = append(problems, h.memory(ctx, time.Since(start))...)
	l.printRefusals(ctx)
	if err := h.cleanUp(ctx); err != nil {
		return append(problems, fmt.Sprintf("hostile remote: cleaning up: %v", err))
	}
	return append(problems, h.backToNormal(ctx)...)
}

// newHostileRun picks the addresses the scenario claims and publishes.
func (l *lab) newHostileRun(st *State) (*hostileRun, error) {
	remoteRange := netip.MustParsePrefix(specOf(hostileRemote).PodCIDR)
	consumerPods := st.podIPs(forwarderCluster, forwarderName)
	if len(consumerPods) == 0 || forwarderCluster != hostileConsumer {
		return nil, fmt.Errorf("no %s pod in %s whose address to claim", forwarderName, hostileConsumer)
	}
	var foreign string
	for _, n := range st.Nodes.Nodes {
		if n.Name == nodeName(hostileRemote, 0) {
			foreign = n.Underlay
		}
	}
	h := &hostileRun{
		l: l, remote: hostileRemote, consumer: hostileConsumer, admin: l.clusters[hostileRemote].Client,
		nodes: hostileNodes(remoteRange, netip.MustParsePrefix(specOf(hostileConsumer).PodCIDR),
			nodePodCIDR(hostileRemote, nodesPerCluster-1), foreign, wireguardPorts[hostileConsumer]),
		keys:           map[string]string{},
		services:       hostileServiceNames(hostileMirrorCap, hostileOverCap),
		claim:          consumerPods[0],
		honestEndpoint: addrAdd(remoteRange.Addr(), 250).String(),
		honestPod:      addrAdd(remoteRange.Addr(), 249).String(),
		hostNetworkIP:  addrAdd(remoteRange.Addr(), 252).String(),
	}
	for _, p := range st.Pods {
		if slices.Contains([]string{h.honestEndpoint, h.honestPod, h.hostNetworkIP}, p.IP) {
			return nil, fmt.Errorf("pod %s/%s of %s has address %s, which the scenario publishes", p.Namespace, p.Name, p.Cluster, p.IP)
		}
	}
	h.refused = map[string]string{metadataAddr: addrguard.ReasonSpecial, h.hostNetworkIP: netset.ReasonHostNetwork}
	for _, e := range hostileEndpoints(h.claim, h.honestEndpoint) {
		if e.Reason != "" {
			h.refused[e.Addr] = e.Reason
		}
	}
	return h, nil
}

// create creates the scenario's objects in the remote: the fake Nodes, the Services and their
// EndpointSlices, and the pods with the status a kubelet would write.
func (h *hostileRun) create(ctx context.Context) error {
	c := h.admin
	for _, f := range h.nodes {
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
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostileNamespace, Labels: map[string]string{hostileLabel: "true"}}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, name := range h.services {
		if _, err := c.CoreV1().Services(hostileNamespace).Create(ctx, hostileService(name), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("service %s: %w", name, err)
		}
		var addrs []string
		if name == "endpoints" {
			for _, e := range hostileEndpoints(h.claim, h.honestEndpoint) {
				addrs = append(addrs, e.Addr)
			}
		} else {
			addrs = floodAddrs(0)
		}
		if _, err := c.DiscoveryV1().EndpointSlices(hostileNamespace).Create(ctx, hostileSlice(name, name, addrs...), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("EndpointSlice %s: %w", name, err)
		}
	}
	_, h.metadataErr = c.DiscoveryV1().EndpointSlices(hostileNamespace).Create(ctx, hostileSlice("endpoints-metadata", "endpoints", metadataAddr), metav1.CreateOptions{})
	for _, p := range []struct {
		name, ip    string
		hostNetwork bool
	}{{"claim", h.claim, false}, {"host-network", h.hostNetworkIP, true}, {"honest", h.honestPod, false}} {
		if err := h.createPod(ctx, p.name, p.ip, p.hostNetwork); err != nil {
			return fmt.Errorf("pod %s: %w", p.name, err)
		}
	}
	fmt.Fprintf(h.l.out, "  created in %s: %d fake Nodes annotated for %s, %d mirrored Services (the cap is %d), 3 pods labelled for semaphore-policy\n",
		h.remote, len(h.nodes), h.consumer, len(h.services), hostileMirrorCap)
	for _, f := range h.nodes {
		fmt.Fprintf(h.l.out, "    node %-32s pod CIDR %-16s endpoint %-22s %s\n", f.Name, f.PodCIDR, f.Endpoint, f.Claim)
	}
	var eps []string
	for _, e := range hostileEndpoints(h.claim, h.honestEndpoint) {
		eps = append(eps, e.Addr)
	}
	fmt.Fprintf(h.l.out, "    Service %s/endpoints: endpoints %s (%s is %s's pod %s)\n", hostileNamespace, strings.Join(eps, ", "), h.claim, h.consumer, forwarderName)
	if h.metadataErr != nil {
		fmt.Fprintf(h.l.out, "    an EndpointSlice with %s: refused by %s's API server (%v), as a conforming one does\n", metadataAddr, h.remote, firstLine(h.metadataErr.Error()))
	} else {
		fmt.Fprintf(h.l.out, "    an EndpointSlice with %s: accepted by %s's API server\n", metadataAddr, h.remote)
	}
	fmt.Fprintf(h.l.out, "    pods: claim (status podIPs %s, %s's), host-network (%s), honest (%s)\n", h.claim, h.consumer, h.hostNetworkIP, h.honestPod)
	return nil
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
		pod, err = h.admin.CoreV1().Pods(hostileNamespace).Create(ctx, hostilePod(name, h.nodes[0].Name, hostNetwork), metav1.CreateOptions{})
		if apierrors.IsForbidden(err) {
			return false, nil // no ServiceAccount yet
		}
		return err == nil, err
	})
	if err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := h.admin.CoreV1().Pods(hostileNamespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod.Status = hostilePodStatus(ip, h.nodes[0].Address)
		_, err = h.admin.CoreV1().Pods(hostileNamespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
}

// floodAddrs are the endpoint of a flooded EndpointSlice at its i-th update: in the remote's
// range, so that the mirrors follow each one.
func floodAddrs(i int) []string {
	return []string{addrAdd(netip.MustParsePrefix(specOf(hostileRemote).PodCIDR).Addr(), 200+i%2).String()}
}

// floodResult counts the flood's updates, and how often the consumers were looked at meanwhile.
type floodResult struct{ ok, failed, looks int }

// floodWatching floods the remote for d and meanwhile looks at the consumers again and again:
// nothing refused may reach them at any moment. It returns the problems seen, each once.
func (h *hostileRun) floodWatching(ctx context.Context, d time.Duration) (floodResult, []string) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	done := make(chan floodResult, 1)
	go func() { done <- h.flood(ctx) }()
	var seen []string
	looks := 0
	for ctx.Err() == nil {
		looks++
		for _, p := range h.leaks(ctx, expectNoLeak) {
			if p = "during the flood: " + p; ctx.Err() == nil && !slices.Contains(seen, p) {
				seen = append(seen, p)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	r := <-done
	r.looks = looks
	return r, seen
}

// flood updates the EndpointSlices of the hostile Services, one after the other, as fast as a
// client without a rate limit gets answers, until ctx is done.
func (h *hostileRun) flood(ctx context.Context) floodResult {
	cfg := rest.CopyConfig(h.l.clusters[h.remote].Config)
	cfg.QPS = -1 // no client-side rate limit
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return floodResult{failed: 1}
	}
	var names []string
	for _, n := range h.services {
		if strings.HasPrefix(n, "svc-") {
			names = append(names, n)
		}
	}
	var r floodResult
	for i := 0; ctx.Err() == nil; i++ {
		patch := fmt.Appendf(nil, `{"endpoints":[{"addresses":[%q],"conditions":{"ready":true}}]}`, floodAddrs(i/len(names) + 1)[0])
		_, err := client.DiscoveryV1().EndpointSlices(hostileNamespace).Patch(ctx, names[i%len(names)], types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil:
			r.ok++
		case ctx.Err() == nil:
			r.failed++
		}
	}
	return r
}

// trafficStats are the attempts of senders in a window: how many, how many failed, and their
// durations' median and 99th percentile.
type trafficStats struct {
	Sent, Failed int
	P50, P99     time.Duration
}

func (t trafficStats) String() string {
	return fmt.Sprintf("%d requests, %d failed, p50 %s, p99 %s", t.Sent, t.Failed, roundDuration(t.P50), roundDuration(t.P99))
}

// roundDuration keeps three digits or so.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(10 * time.Microsecond)
}

// sentStats are the statistics of the "sent" records in [from, to).
func sentStats(records []logRecord, from, to time.Time) trafficStats {
	var s trafficStats
	var durations []time.Duration
	for _, r := range records {
		if r.Msg != "sent" || r.Time.Before(from) || !r.Time.Before(to) {
			continue
		}
		s.Sent++
		if r.failed() {
			s.Failed++
		}
		if d, err := time.ParseDuration(r.Duration); err == nil {
			durations = append(durations, d)
		}
	}
	slices.Sort(durations)
	s.P50, s.P99 = percentile(durations, 0.50), percentile(durations, 0.99)
	return s
}

// percentile is the q-th quantile of sorted (nearest rank), 0 for none.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// senderStats reads the logs of pods and returns the statistics of their attempts in the window.
func senderStats(pods []PodState, from, to time.Time) (trafficStats, error) {
	var all []logRecord
	for _, p := range pods {
		records, err := readLog(p.Log)
		if err != nil {
			return trafficStats{}, err
		}
		all = append(all, records...)
	}
	return sentStats(all, from, to), nil
}

// trafficDuring compares the honest traffic during the flood with the traffic before the
// scenario, and returns the problems: a forwarder's request that failed during the flood, or
// none that fluentd logged, and whatever the lab's traffic part finds.
func (h *hostileRun) trafficDuring(st *State, start, from, to time.Time) []string {
	forwarders := st.podsOf(forwarderCluster, forwarderName)
	var problems []string
	for _, s := range []struct {
		what string
		pods []PodState
		// between tells whether the traffic goes to another cluster: the echo client's is
		// served by its own cluster's echo, local-first, and is shown only.
		between bool
	}{
		{fmt.Sprintf("%s/%s -> %s's %s", forwarderCluster, forwarderName, fluentdCluster, fluentdName), forwarders, true},
		{fmt.Sprintf("%s/%s -> %s (local-first)", globalCluster, globalClientName, globalName), st.podsOf(globalCluster, globalClientName), false},
	} {
		before, err1 := senderStats(s.pods, start.Add(-hostileBaseline), start)
		during, err2 := senderStats(s.pods, from, to)
		if err := errors.Join(err1, err2); err != nil {
			problems = append(problems, fmt.Sprintf("reading the logs of %s: %v", s.what, err))
			continue
		}
		fmt.Fprintf(h.l.out, "  honest traffic %s: before, %s; during the flood, %s\n", s.what, before, during)
		if s.between && (during.Failed > 0 || during.Sent == 0) {
			problems = append(problems, fmt.Sprintf("honest traffic %s during the flood: %s", s.what, during))
		}
	}
	served := 0
	for _, f := range st.podsOf(fluentdCluster, fluentdName) {
		records, err := readLog(f.Log)
		if err != nil {
			problems = append(problems, fmt.Sprintf("reading fluentd's log: %v", err))
		}
		for _, r := range records {
			if r.Msg == "request" && !r.Time.Before(from) && r.Time.Before(to) && slices.ContainsFunc(forwarders, func(p PodState) bool { return p.IP == r.Client }) {
				served++
			}
		}
	}
	fmt.Fprintf(h.l.out, "  %s logged %d requests of the forwarders during the flood\n", fluentdName, served)
	if served == 0 {
		problems = append(problems, fmt.Sprintf("%s logged no request of the forwarders during the flood", fluentdName))
	}
	t := &trafficStatus{}
	t.collect(context.Background(), st)
	return append(problems, t.problems(st)...)
}

// waitFor runs check every second until it finds no problem, for up to hostileSettle, and
// returns the last problems.
func (h *hostileRun) waitFor(ctx context.Context, what string, check func(ctx context.Context) []string) []string {
	start := time.Now()
	for {
		problems := check(ctx)
		if len(problems) == 0 {
			fmt.Fprintf(h.l.out, "  waited %s for %s\n", time.Since(start).Round(100*time.Millisecond), what)
			return nil
		}
		if time.Since(start) > hostileSettle || ctx.Err() != nil {
			return problems
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// consumers are the clusters that read the hostile remote: all the others.
func (h *hostileRun) consumers() []string { return remotesOf(h.remote) }

// expect is what the consumers must show.
type expect int

const (
	// expectNoLeak: nothing refused in any mirror, set, peer or route, no mirror beyond the
	// limit: what must hold at every moment, the flood's included.
	expectNoLeak expect = iota
	// expectScenario: that, and exactly the scenario's effects, once the consumers have caught
	// up: the first hostileMirrorCap Services mirrored, the honest endpoint and pod address
	// there, every fake node skipped under its reason.
	expectScenario
	// expectGone: the objects are deleted, and nothing of them is left.
	expectGone
)

// leaks are the problems of the consumers, every cluster that reads the remote, and of the
// hostile consumer's WireGuard devices.
func (h *hostileRun) leaks(ctx context.Context, e expect) []string {
	var problems []string
	for _, c := range h.consumers() {
		problems = append(problems, h.mirrorLeaks(ctx, c, e)...)
		problems = append(problems, h.setLeaks(ctx, c, e)...)
	}
	return append(problems, h.wireguardLeaks(ctx, e)...)
}

// mirrorLeaks are the problems of cluster's mirrors of the remote: a refused address in any
// mirror's EndpointSlice, a mirror of a Service beyond the limit, the big Service's annotation
// in its mirror; with expectScenario the mirrors not those of the first hostileMirrorCap
// Services, or the hostile endpoints' mirror without exactly the honest one; with expectGone
// any mirror of the hostile namespace.
func (h *hostileRun) mirrorLeaks(ctx context.Context, cluster string, e expect) []string {
	client := h.l.clusters[cluster].Client
	ours := labels.Set{ownership.ManagedBy: ownership.ServiceMirror}.String()
	svcs, err := client.CoreV1().Services(semaphoreNamespace).List(ctx, metav1.ListOptions{LabelSelector: ours})
	if err != nil {
		return []string{fmt.Sprintf("%s: listing the mirrors: %v", cluster, err)}
	}
	slicesList, err := client.DiscoveryV1().EndpointSlices(semaphoreNamespace).List(ctx, metav1.ListOptions{LabelSelector: ours})
	if err != nil {
		return []string{fmt.Sprintf("%s: listing the mirrors' EndpointSlices: %v", cluster, err)}
	}
	problems := sliceLeaks(cluster, h.remote, slicesList.Items, h.refused)
	var got []string
	for _, s := range svcs.Items {
		src, ok := mirror.SourceOf(s.Labels)
		if !ok || src.Cluster != h.remote || src.Namespace != hostileNamespace {
			continue
		}
		got = append(got, src.Name)
		if len(s.Annotations[hostileLabel+"-filler"]) > 0 {
			problems = append(problems, fmt.Sprintf("%s: mirror %s carries the remote Service's %d-byte annotation", cluster, s.Name, hostileAnnotationBytes))
		}
	}
	slices.Sort(got)
	first := mirroredFirst(h.services, hostileMirrorCap)
	if beyond := slices.DeleteFunc(slices.Clone(got), func(n string) bool { return slices.Contains(first, n) }); len(beyond) > 0 {
		problems = append(problems, fmt.Sprintf("%s: mirrors of %s's Services beyond the first %d: %s", cluster, h.remote, hostileMirrorCap, most(beyond, 4)))
	}
	switch e {
	case expectScenario:
		if !slices.Equal(got, first) {
			problems = append(problems, fmt.Sprintf("%s: %d mirrors of %s's Services in %s, want the first %d by name", cluster, len(got), h.remote, hostileNamespace, hostileMirrorCap))
		}
		if got, want := mirrorEndpoints(slicesList.Items, h.remote, "endpoints"), []string{h.honestEndpoint}; !slices.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("%s: the mirror of %s/%s/endpoints holds %v, want %v (what is not refused)", cluster, h.remote, hostileNamespace, got, want))
		}
	case expectGone:
		if len(got) > 0 {
			problems = append(problems, fmt.Sprintf("%s: %d mirrors of %s's deleted Services are left: %s", cluster, len(got), h.remote, most(got, 4)))
		}
	}
	return problems
}

// mirroredFirst are the first limit of the sorted names: those a consumer mirrors.
func mirroredFirst(names []string, limit int) []string {
	names = slices.Sorted(slices.Values(names))
	return names[:min(limit, len(names))]
}

// most lists at most n of s, saying how many more there are.
func most(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(s[:n], ", "), len(s)-n)
}

// sliceLeaks are the refused addresses in the service mirror's EndpointSlices of cluster that
// stand for remote's (a mirror's, or remote's share of a global service): the same address may
// be another cluster's to publish.
func sliceLeaks(cluster, remote string, items []discoveryv1.EndpointSlice, refused map[string]string) []string {
	var out []string
	for _, s := range items {
		if sliceSource(s.Labels) != remote {
			continue
		}
		for _, e := range s.Endpoints {
			for _, a := range e.Addresses {
				if reason, ok := refused[a]; ok {
					out = append(out, fmt.Sprintf("%s: EndpointSlice %s/%s holds %s, which %s may not publish (%s)", cluster, s.Namespace, s.Name, a, remote, reason))
				}
			}
		}
	}
	return out
}

// sliceSource is the cluster a slice of the service mirror's stands for.
func sliceSource(l map[string]string) string {
	if src, ok := mirror.SourceOf(l); ok {
		return src.Cluster
	}
	return l[global.LabelCluster]
}

// mirrorEndpoints are the addresses of the mirror slices of remote's hostile Service name.
func mirrorEndpoints(items []discoveryv1.EndpointSlice, remote, name string) []string {
	var out []string
	for _, s := range items {
		if src, ok := mirror.SourceOf(s.Labels); !ok || src != (mirror.Source{Cluster: remote, Namespace: hostileNamespace, Name: name}) {
			continue
		}
		for _, e := range s.Endpoints {
			out = append(out, e.Addresses...)
		}
	}
	slices.Sort(out)
	return out
}

// setLeaks are the problems of cluster's network sets: a refused address in any; with
// expectScenario the hostile pods' set other than the honest pod's address, with expectGone
// that set there at all.
func (h *hostileRun) setLeaks(ctx context.Context, cluster string, e expect) []string {
	sets, err := listNetworkSets(ctx, h.l.clusters[cluster].DirectKubeconfig)
	if err != nil {
		return []string{fmt.Sprintf("%s: listing the network sets: %v", cluster, err)}
	}
	problems := netSetLeaks(cluster, h.remote, sets, h.refused)
	name := netset.SetName(netset.Source{Cluster: h.remote, Namespace: hostileNamespace, Name: hostileNamespace})
	i := slices.IndexFunc(sets, func(s NetSetStatus) bool { return s.Name == name })
	switch want := []string{h.honestPod + "/32"}; {
	case e == expectScenario && i < 0:
		problems = append(problems, fmt.Sprintf("%s: no network set %s of the honest hostile pod", cluster, name))
	case e == expectScenario && !slices.Equal(sets[i].Nets, want):
		problems = append(problems, fmt.Sprintf("%s: network set %s holds %v, want %v", cluster, name, sets[i].Nets, want))
	case e == expectGone && i >= 0:
		problems = append(problems, fmt.Sprintf("%s: network set %s is still there after the hostile pods went", cluster, name))
	}
	return problems
}

// netSetLeaks are the refused addresses in cluster's network sets of remote's pods.
func netSetLeaks(cluster, remote string, sets []NetSetStatus, refused map[string]string) []string {
	var out []string
	for _, s := range sets {
		if s.Source.Cluster != remote {
			continue
		}
		for _, n := range s.Nets {
			p, err := netip.ParsePrefix(n)
			if err != nil {
				continue
			}
			if reason, ok := refused[p.Addr().String()]; ok {
				out = append(out, fmt.Sprintf("%s: network set %s holds %s, which %s may not publish (%s)", cluster, s.Name, n, remote, reason))
			}
		}
	}
	return out
}

// claims are the ranges of the fake nodes: none may be a peer's allowed IP or a route.
func (h *hostileRun) claims() []netip.Prefix {
	var out []netip.Prefix
	for _, n := range h.nodes {
		out = append(out, netip.MustParsePrefix(n.PodCIDR))
	}
	return out
}

// wireguardLeaks reads every node of the consumer: its device for the remote may have no fake
// node as a peer, no claimed range among its allowed IPs and no route for one, no route
// outside the remote's range; its agent must count every fake node under its reason
// (expectScenario), or none (expectGone).
func (h *hostileRun) wireguardLeaks(ctx context.Context, e expect) []string {
	st := h.l.snapshot()
	device := peers.DeviceName(h.remote)
	remoteRange := netip.MustParsePrefix(specOf(h.remote).PodCIDR)
	var problems []string
	for _, n := range st.Nodes.Nodes {
		if n.Cluster != h.consumer {
			continue
		}
		ci := slices.IndexFunc(st.Controllers, func(c ControllerState) bool { return c.Component == wireguardComponent && c.Node == n.Name })
		if ci < 0 {
			problems = append(problems, fmt.Sprintf("%s: semaphore-wireguard does not run", n.Name))
			continue
		}
		root, err := cachedContainerRoot(st.Controllers[ci].PodUID)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", n.Name, err))
			continue
		}
		allowed, err := deviceAllowedIPs(root, device)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: reading %s: %v", n.Name, device, err))
			continue
		}
		problems = append(problems, deviceLeaks(n.Name, device, allowed, h.keys, h.claims())...)
		out, err := execOutput("ip", "-n", n.Netns, "-o", "route", "show", "table", "all")
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: reading the routes: %v", n.Name, err))
			continue
		}
		problems = append(problems, routeLeaks(n.Name, out, device, remoteRange, h.claims())...)
		if e == expectNoLeak {
			continue
		}
		skips, err := scrapeSkips(ctx, st.Controllers[ci], h.remote)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: semaphore-wireguard's metrics: %v", n.Name, err))
			continue
		}
		want := map[string]float64{}
		if e == expectScenario {
			want = wantSkips(h.nodes)
		}
		if !equalCounts(skips, want) {
			problems = append(problems, fmt.Sprintf("%s: semaphore_wg_skipped_peers{remote=%q} is %v, want %v", n.Name, h.remote, skips, want))
		}
	}
	return problems
}

// deviceLeaks are the peers of a device (allowed IPs by public key) that are fake nodes, and
// the allowed IPs that are claims.
func deviceLeaks(node, device string, allowed map[string][]string, fake map[string]string, claims []netip.Prefix) []string {
	var out []string
	for key, ips := range allowed {
		if name, ok := fake[key]; ok {
			out = append(out, fmt.Sprintf("%s: %s has fake node %s as a peer, allowed IPs %v", node, device, name, ips))
			continue
		}
		for _, ip := range ips {
			if p, err := netip.ParsePrefix(ip); err == nil && slices.Contains(claims, p.Masked()) {
				out = append(out, fmt.Sprintf("%s: %s gives a peer the claimed range %s", node, device, ip))
			}
		}
	}
	return out
}

// routeKinds are the route types `ip route` prints before a destination.
var routeKinds = []string{"unicast", "local", "broadcast", "anycast", "multicast", "unreachable", "prohibit", "blackhole", "throw", "nat"}

// routeLeaks are the routes of `ip -o route show table all` (out) for a claimed range, whatever
// their device, and those through device outside remoteRange, of its family (the kernel gives
// every device its IPv6 link-local and multicast routes).
func routeLeaks(node, out, device string, remoteRange netip.Prefix, claims []netip.Prefix) []string {
	var leaks []string
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) > 1 && slices.Contains(routeKinds, f[0]) {
			f = f[1:]
		}
		if len(f) == 0 {
			continue
		}
		dst, err := netip.ParsePrefix(f[0])
		if err != nil {
			a, aerr := netip.ParseAddr(f[0])
			if aerr != nil {
				continue // default, or something else that is no claim
			}
			dst = netip.PrefixFrom(a, a.BitLen())
		}
		dev := ""
		if i := slices.Index(f, "dev"); i >= 0 && i+1 < len(f) {
			dev = f[i+1]
		}
		switch {
		case slices.Contains(claims, dst.Masked()):
			leaks = append(leaks, fmt.Sprintf("%s: a route for the claimed %s: %s", node, dst, strings.TrimSpace(line)))
		case dev == device && dst.Addr().Is4() == remoteRange.Addr().Is4() && (dst.Bits() < remoteRange.Bits() || !remoteRange.Contains(dst.Addr())):
			leaks = append(leaks, fmt.Sprintf("%s: a route through %s outside %s: %s", node, device, remoteRange, strings.TrimSpace(line)))
		}
	}
	return leaks
}

// scrapeSkips are an agent's semaphore_wg_skipped_peers of remote by reason (not_annotated, a
// node that does not peer with this cluster at all, left out), the zero ones too.
func scrapeSkips(ctx context.Context, c ControllerState, remote string) (map[string]float64, error) {
	ss, err := scrapeMetrics(ctx, c.Admin)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, s := range ss {
		if s.Name == "semaphore_wg_skipped_peers" && s.Labels["remote"] == remote && s.Labels["reason"] != peers.ReasonNotAnnotated && s.Value != 0 {
			out[s.Labels["reason"]] += s.Value
		}
	}
	return out, nil
}

func equalCounts(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// countsAndAlert checks that every consumer's service mirror and policy controller counted
// their refusals and the Services over the limit, and that the alert fires for each component.
func (h *hostileRun) countsAndAlert(ctx context.Context) []string {
	problems := h.waitFor(ctx, "the consumers' controllers to count every refusal", h.countProblems)
	st := h.l.snapshot()
	if st.Prometheus == nil {
		return append(problems, fmt.Sprintf("Prometheus does not run: cannot see %s fire", hostileAlert))
	}
	start := time.Now()
	want := []string{ownership.Policy, ownership.ServiceMirror, ownership.WireGuard}
	var firing []string
	_ = wait.PollUntilContextTimeout(ctx, 2*time.Second, hostileSettle, true, func(ctx context.Context) (bool, error) {
		firing = firingJobs(ctx, st.Prometheus.URL, hostileAlert, h.remote)
		return !slices.ContainsFunc(want, func(j string) bool { return !slices.Contains(firing, j) }), nil
	})
	if slices.ContainsFunc(want, func(j string) bool { return !slices.Contains(firing, j) }) {
		return append(problems, fmt.Sprintf("alert %s fires for remote %s from %v within %s, want %v", hostileAlert, h.remote, firing, hostileSettle, want))
	}
	fmt.Fprintf(h.l.out, "  alert %s firing for remote %s from %s (%s after the counts were there)\n", hostileAlert, h.remote, strings.Join(firing, ", "), time.Since(start).Round(time.Second))
	return problems
}

// countProblems are the counts of wantCounts the consumers' controllers do not show.
func (h *hostileRun) countProblems(ctx context.Context) []string {
	all, err := collectRefusals(ctx, h.l.snapshot())
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for _, want := range h.wantCounts() {
		var got float64
		if i := slices.IndexFunc(all, func(r refusalCount) bool {
			return r.Cluster == want.Cluster && r.Component == want.Component && r.Remote == h.remote && r.Reason == want.Reason
		}); i >= 0 {
			got = all[i].Value
		}
		if (want.Value > 0 && got != want.Value) || (want.Value == 0 && got == 0) {
			problems = append(problems, fmt.Sprintf("%s %s counts %v for %s, %s; want %s", want.Cluster, want.Component, got, h.remote, want.Reason, wantText(want.Value)))
		}
	}
	return problems
}

// wantText says what a wanted count is: exactly n, or (0) any but none.
func wantText(n float64) string {
	if n == 0 {
		return "more than 0"
	}
	return strconv.FormatFloat(n, 'f', -1, 64)
}

// wantCounts are the counts each consumer's controllers must show: Value 0 for a counter that
// must be more than 0 (refusals are counted once each, and a flood may add some), otherwise
// exactly Value.
func (h *hostileRun) wantCounts() []refusalCount {
	var out []refusalCount
	for _, c := range h.consumers() {
		out = append(out,
			refusalCount{Cluster: c, Component: ownership.ServiceMirror, Reason: addrguard.ReasonOutsideRanges},
			refusalCount{Cluster: c, Component: ownership.ServiceMirror, Reason: addrguard.ReasonSpecial},
			refusalCount{Cluster: c, Component: ownership.ServiceMirror, Reason: overLimit("services"), Value: hostileOverCap},
			refusalCount{Cluster: c, Component: ownership.Policy, Reason: addrguard.ReasonOutsideRanges},
			refusalCount{Cluster: c, Component: ownership.Policy, Reason: netset.ReasonHostNetwork},
		)
	}
	return out
}

// firingJobs are the jobs for which alert fires for remote.
func firingJobs(ctx context.Context, base, alert, remote string) []string {
	var r struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	}
	if err := promAPI(ctx, base, "/api/v1/alerts", nil, &r); err != nil {
		return nil
	}
	var out []string
	for _, a := range r.Alerts {
		if a.Labels["alertname"] == alert && a.State == "firing" && a.Labels["remote"] == remote && !slices.Contains(out, a.Labels["job"]) {
			out = append(out, a.Labels["job"])
		}
	}
	slices.Sort(out)
	return out
}

// pluginCheck runs `kubectl semaphore check` in the consumer while the scenario's objects
// exist: it must run, and fail on nothing but what the hostile remote did that it reports: the
// fake nodes that are no peers (semaphore_wg_skipped_peers says why); the Services beyond the
// limit that have no mirror are a warning.
func (h *hostileRun) pluginCheck(ctx context.Context) []string {
	kubeconfig, err := h.l.underlayKubeconfig()
	if err != nil {
		return []string{fmt.Sprintf("kubeconfig for the underlay: %v", err)}
	}
	results, code, err := h.l.runCheck(ctx, kubeconfig, h.consumer)
	if err != nil {
		return []string{fmt.Sprintf("kubectl semaphore --context %s check with the hostile remote: %v", h.consumer, err)}
	}
	var problems, reported []string
	setsOK := false
	for _, r := range results {
		switch {
		case r.Remote == h.remote && r.Check == "network-sets":
			setsOK = r.OK
		case r.OK && r.Warning && r.Remote == h.remote:
			reported = append(reported, fmt.Sprintf("%s (warning): %s", r.Check, r.Message))
		case r.OK:
		case r.Remote == h.remote && (r.Check == "peers" || r.Check == "mirrors"):
			reported = append(reported, fmt.Sprintf("%s: %s", r.Check, r.Message))
			continue
		default:
			problems = append(problems, fmt.Sprintf("kubectl semaphore --context %s check with the hostile remote: %s %s<-%s %s: %s", h.consumer, r.Check, r.Cluster, r.Remote, r.Component, r.Message))
		}
	}
	if !setsOK {
		problems = append(problems, fmt.Sprintf("kubectl semaphore --context %s check: the network sets of %s do not pass with the hostile pods (their refused addresses must be no difference)", h.consumer, h.remote))
	}
	fmt.Fprintf(h.l.out, "  kubectl semaphore --context %s check: exit status %d, %d results; about %s it reports:\n", h.consumer, code, len(results), h.remote)
	for _, r := range reported {
		fmt.Fprintf(h.l.out, "    %s\n", r)
	}
	return problems
}

// memory checks that no controller's resident memory reached its container's limit during the
// scenario (the peaks Prometheus scraped over the last over), and prints each component's.
func (h *hostileRun) memory(ctx context.Context, over time.Duration) []string {
	st := h.l.snapshot()
	if st.Prometheus == nil {
		return nil
	}
	r, err := promQuery(ctx, st.Prometheus.URL, fmt.Sprintf("max_over_time(process_resident_memory_bytes[%ds])", int(over.Seconds())+1))
	if err != nil {
		return []string{fmt.Sprintf("peak memory during the scenario: %v", err)}
	}
	var problems []string
	peak := map[string]float64{} // component -> MiB
	limit := map[string]int64{}
	for _, res := range r {
		v, _ := strconv.ParseFloat(fmt.Sprint(res.Value[1]), 64)
		i := slices.IndexFunc(st.Controllers, func(c ControllerState) bool { return c.Admin == res.Metric["instance"] })
		if i < 0 {
			continue
		}
		c := st.Controllers[i]
		peak[c.Component] = max(peak[c.Component], v)
		limit[c.Component] = c.MemoryLimit
		if c.MemoryLimit > 0 && v >= float64(c.MemoryLimit) {
			problems = append(problems, fmt.Sprintf("%s %s reached %.1f MiB during the scenario, its limit is %d MiB", c.Component, c.where(), v/(1<<20), c.MemoryLimit>>20))
		}
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(peak)) {
		parts = append(parts, fmt.Sprintf("%s %.1f MiB (limit %d MiB)", c, peak[c]/(1<<20), limit[c]>>20))
	}
	fmt.Fprintf(h.l.out, "  peak resident memory during the scenario: %s\n", strings.Join(parts, ", "))
	return problems
}

// cleanUp deletes the scenario's objects: the pods at once (no kubelet would confirm their
// end), the namespace, the fake Nodes; and waits until they are gone.
func (h *hostileRun) cleanUp(ctx context.Context) error {
	if h.cleaned {
		return nil
	}
	h.cleaned = true
	c := h.admin
	selector := metav1.ListOptions{LabelSelector: hostileLabel + "=true"}
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	var errs []error
	if err := c.CoreV1().Pods(hostileNamespace).DeleteCollection(ctx, now, selector); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, err)
	}
	if err := c.CoreV1().Namespaces().Delete(ctx, hostileNamespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, err)
	}
	if err := c.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, selector); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, hostileSettle, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Namespaces().Get(ctx, hostileNamespace, metav1.GetOptions{})
		nodes, lerr := c.CoreV1().Nodes().List(ctx, selector)
		return apierrors.IsNotFound(err) && lerr == nil && len(nodes.Items) == 0, nil
	})
}

// backToNormal checks, once the scenario's objects are gone, that the consumers hold nothing of
// them (no mirror, set, peer, route or skipped peer) and that the lab's status is as healthy as
// before: what was refused stays refused, and what the remote no longer publishes goes.
func (h *hostileRun) backToNormal(ctx context.Context) []string {
	problems := h.waitFor(ctx, "the consumers to forget the hostile objects", func(ctx context.Context) []string {
		return h.leaks(ctx, expectGone)
	})
	if len(problems) > 0 {
		return problems
	}
	if problems := h.reportSelfHarmed(ctx); len(problems) > 0 {
		return problems
	}
	start := time.Now()
	if _, problems := waitReady(ctx, h.l.snapshot(), hostileSettle, h.l.exited); len(problems) > 0 {
		for i, p := range problems {
			problems[i] = "after the hostile remote: " + p
		}
		return problems
	}
	fmt.Fprintf(h.l.out, "  the lab's status is healthy again %s after the cleanup (mirrors, sets, WireGuard peers, global service, DNS, readiness)\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// reportSelfHarmed says which of the remote's own controllers refused addresses of their
// remotes as local_address: they took the fake Nodes' ranges (0.0.0.0/1 and 128.0.0.0/1 hold
// every cluster's) for their own cluster's, as they must. Once the Nodes are gone, the change of
// their local ranges makes them reconcile every remote object again, so they admit those
// addresses by themselves: the healthy status that follows shows it, with no restart.
func (h *hostileRun) reportSelfHarmed(ctx context.Context) []string {
	all, err := collectRefusals(ctx, h.l.snapshot())
	if err != nil {
		return []string{fmt.Sprintf("the controllers' refusals after the cleanup: %v", err)}
	}
	var counts []string
	for _, r := range all {
		if r.Cluster == h.remote && r.Reason == addrguard.ReasonLocal {
			counts = append(counts, fmt.Sprintf("%s %.0f of %s", r.Component, r.Value, r.Remote))
		}
	}
	if len(counts) == 0 {
		fmt.Fprintf(h.l.out, "  %s's own controllers refused nothing as local while its fake Nodes were there\n", h.remote)
		return nil
	}
	fmt.Fprintf(h.l.out, "  %s's own controllers took the fake Nodes' ranges for %s's and refused addresses of their remotes as %s (%s);\n"+
		"    with the Nodes gone they admit them again by themselves\n", h.remote, h.remote, addrguard.ReasonLocal, strings.Join(counts, ", "))
	return nil
}

// refusalCount is a count of refusals (or of what was left out over a limit) of one component
// in one cluster, summed over its pods.
type refusalCount struct {
	Cluster, Component, Remote, Reason string
	Value                              float64
	Pods                               int
}

// overLimit is the Reason of an over_limit gauge's what.
func overLimit(what string) string { return "over_limit:" + what }

// refusalSamples maps each metric of refusals to its component and the label that says why.
var refusalSamples = map[string]struct{ component, label, prefix string }{
	"semaphore_service_mirror_refused_addresses_total": {ownership.ServiceMirror, "reason", ""},
	"semaphore_service_mirror_over_limit":              {ownership.ServiceMirror, "what", "over_limit:"},
	"semaphore_policy_refused_addresses_total":         {ownership.Policy, "reason", ""},
	"semaphore_policy_over_limit":                      {ownership.Policy, "what", "over_limit:"},
	"semaphore_wg_skipped_peers":                       {ownership.WireGuard, "reason", ""},
}

// collectRefusals scrapes every controller and sums its refusals by cluster, component,
// remote and reason; skipped peers that are merely not annotated are no refusal.
func collectRefusals(ctx context.Context, st *State) ([]refusalCount, error) {
	type key struct{ cluster, component, remote, reason string }
	sums := map[key]*refusalCount{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	for _, c := range st.Controllers {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			ss, err := scrapeSemaphore(sctx, c.Admin)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w", c.Component, c.where(), err))
				return
			}
			for _, s := range ss {
				m, ok := refusalSamples[s.Name]
				if !ok || s.Value == 0 || (s.Name == "semaphore_wg_skipped_peers" && s.Labels["reason"] == peers.ReasonNotAnnotated) {
					continue
				}
				k := key{c.Cluster, m.component, s.Labels["remote"], m.prefix + s.Labels[m.label]}
				if sums[k] == nil {
					sums[k] = &refusalCount{Cluster: k.cluster, Component: k.component, Remote: k.remote, Reason: k.reason}
				}
				sums[k].Value += s.Value
				sums[k].Pods++
			}
		})
	}
	wg.Wait()
	out := make([]refusalCount, 0, len(sums))
	for _, r := range sums {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.Cluster+a.Component+a.Remote+a.Reason < b.Cluster+b.Component+b.Remote+b.Reason
	})
	return out, errors.Join(errs...)
}

// printRefusals prints every count of refusals the controllers show now.
func (l *lab) printRefusals(ctx context.Context) {
	s := &hostileStatus{present: true}
	s.refusals, s.err = collectRefusals(ctx, l.snapshot())
	s.printCounts(l.out)
}

// scrapeSemaphore reads the samples of every semaphore_ metric from the admin server at addr.
func scrapeSemaphore(ctx context.Context, addr string) ([]testbed.Sample, error) {
	return testbed.Scrape(ctx, http.DefaultClient, "http://"+addr+"/metrics", "semaphore_")
}

// execOutput runs a command and returns its output, or its error with what it wrote to stderr.
func execOutput(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(exit.Stderr)))
	}
	return string(out), err
}

// hostileStatus is the status part of the hostile remote: while the scenario's objects exist
// in the remote, the refusals every controller counts.
type hostileStatus struct {
	// present tells whether the scenario's objects exist; nodes is how many fake Nodes.
	present  bool
	nodes    int
	refusals []refusalCount
	err      error
}

func (s *hostileStatus) collect(ctx context.Context, st *State) {
	if st.Nodes == nil || st.nodesSkipped() {
		return
	}
	i := slices.IndexFunc(st.Clusters, func(c ClusterState) bool { return c.Name == hostileRemote })
	if i < 0 {
		return
	}
	client, err := clientsetOf(st.Clusters[i].DirectKubeconfig)
	if err != nil {
		return
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: hostileLabel + "=true"})
	if err != nil {
		return
	}
	_, nsErr := client.CoreV1().Namespaces().Get(ctx, hostileNamespace, metav1.GetOptions{})
	if s.nodes, s.present = len(nodes.Items), len(nodes.Items) > 0 || nsErr == nil; s.present {
		s.refusals, s.err = collectRefusals(ctx, st)
	}
}

// problems: none; lab check asserts what the scenario must show (checkHostileRemote).
func (s *hostileStatus) problems(*State) []string { return nil }

func (s *hostileStatus) print(w io.Writer, _ *State) {
	if !s.present {
		return
	}
	section(w, fmt.Sprintf("Hostile remote (lab check's scenario: %s towards %s, %d fake Nodes and namespace %s in %s): refusals by cluster, component, remote and reason",
		hostileRemote, hostileConsumer, s.nodes, hostileNamespace, hostileRemote))
	s.printCounts(w)
}

// printCounts prints the counts, a row each; semaphore-wireguard's are summed over the
// cluster's agents, each of which skips each node.
func (s *hostileStatus) printCounts(w io.Writer) {
	tw := table(w)
	fmt.Fprintf(tw, "  cluster\tcomponent\tremote\treason\tcount\tpods\n")
	for _, r := range s.refusals {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%.0f\t%d\n", r.Cluster, r.Component, r.Remote, r.Reason, r.Value, r.Pods)
	}
	tw.Flush()
	if len(s.refusals) == 0 {
		fmt.Fprintln(w, "  (no refusal counted)")
	} else {
		fmt.Fprintln(w, "  (refused addresses since each pod started; over_limit: Services or sets left out now;\n"+
			"   semaphore-wireguard: nodes skipped now, summed over the cluster's agents)")
	}
	if s.err != nil {
		fmt.Fprintf(w, "  error: %v\n", s.err)
	}
}
