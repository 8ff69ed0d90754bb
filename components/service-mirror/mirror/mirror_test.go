package mirror_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/addrguard/addrguardtest"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

const ns = "semaphore"

var src = mirror.Source{Cluster: "aws", Namespace: "sys-log", Name: "fluentd"}

func TestServiceName(t *testing.T) {
	// 63 characters exactly: aws-<n>-73736d-<name> with a name padded to fit.
	exact := mirror.Source{Cluster: "aws", Namespace: "ns", Name: strings.Repeat("a", 63-len("aws-ns-73736d-"))}
	tests := []struct {
		name string
		src  mirror.Source
		want string
	}{
		{"plain", src, "aws-sys-log-73736d-fluentd"},
		{"exactly 63", exact, "aws-ns-73736d-" + exact.Name},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mirror.ServiceName(tt.src)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ServiceName(%v) mismatch (-want +got):\n%s", tt.src, diff)
			}
			if len(got) > 63 {
				t.Errorf("ServiceName(%v) = %q has %d characters, want at most 63", tt.src, got, len(got))
			}
		})
	}
}

func TestServiceNameLong(t *testing.T) {
	long := func(last string) mirror.Source {
		return mirror.Source{
			Cluster:   "merit",
			Namespace: strings.Repeat("n", 40),
			Name:      strings.Repeat("s", 50) + last,
		}
	}
	a, b := long("a"), long("b")
	gotA, gotB := mirror.ServiceName(a), mirror.ServiceName(b)

	for _, got := range []string{gotA, gotB} {
		if len(got) > 63 {
			t.Errorf("ServiceName = %q has %d characters, want at most 63", got, len(got))
		}
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("ServiceName = %q is not a DNS label: %v", got, errs)
		}
		if !strings.HasPrefix(got, "merit-nnnn") {
			t.Errorf("ServiceName = %q, want it to keep the readable prefix of the full name", got)
		}
	}
	if again := mirror.ServiceName(a); again != gotA {
		t.Errorf("ServiceName is not deterministic: %q then %q", gotA, again)
	}
	if gotA == gotB {
		t.Errorf("ServiceName(%v) = ServiceName(%v) = %q: names differing only at the end collide", a, b, gotA)
	}
}

func TestSliceName(t *testing.T) {
	short := mirror.ServiceName(src)
	long := mirror.ServiceName(mirror.Source{Cluster: "gcp", Namespace: strings.Repeat("n", 63), Name: strings.Repeat("s", 63)})
	for _, service := range []string{short, long} {
		a := mirror.SliceName(service, "fluentd-abcde")
		b := mirror.SliceName(service, "fluentd-fghij")
		for _, got := range []string{a, b} {
			if len(got) > 63 {
				t.Errorf("SliceName(%q) = %q has %d characters, want at most 63", service, got, len(got))
			}
			if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
				t.Errorf("SliceName(%q) = %q is not a DNS label: %v", service, got, errs)
			}
		}
		if a == b {
			t.Errorf("SliceName(%q, ...) = %q for two different remote slices", service, a)
		}
		if again := mirror.SliceName(service, "fluentd-abcde"); again != a {
			t.Errorf("SliceName is not stable: %q then %q", a, again)
		}
	}
	if got := mirror.SliceName(short, "fluentd-abcde"); !strings.HasPrefix(got, short+"-") {
		t.Errorf("SliceName(%q) = %q, want the service name as prefix", short, got)
	}
}

func TestSourceOfLabels(t *testing.T) {
	l := mirror.Labels(src)
	if l[ownership.ManagedBy] != ownership.ServiceMirror {
		t.Errorf("Labels()[%s] = %q, want %q", ownership.ManagedBy, l[ownership.ManagedBy], ownership.ServiceMirror)
	}
	got, ok := mirror.SourceOf(l)
	if !ok {
		t.Fatalf("SourceOf(%v) = _, false, want true", l)
	}
	if diff := cmp.Diff(src, got); diff != "" {
		t.Errorf("SourceOf(Labels()) mismatch (-want +got):\n%s", diff)
	}

	for _, missing := range []string{mirror.LabelCluster, mirror.LabelNamespace, mirror.LabelName} {
		l := mirror.Labels(src)
		delete(l, missing)
		if _, ok := mirror.SourceOf(l); ok {
			t.Errorf("SourceOf without %s = _, true, want false", missing)
		}
	}
}

// The ports of the source Service and slice, which mirrors copy as they are.
func servicePorts() []corev1.ServicePort {
	return []corev1.ServicePort{
		{Name: "forward", Protocol: corev1.ProtocolTCP, Port: 24224, TargetPort: intstr.FromInt32(24224)},
		{Name: "http", Protocol: corev1.ProtocolTCP, AppProtocol: ptr.To("http"), Port: 80, TargetPort: intstr.FromString("web")},
	}
}

func slicePorts() []discoveryv1.EndpointPort {
	return []discoveryv1.EndpointPort{
		{Name: ptr.To("forward"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](24224)},
		{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](8080), AppProtocol: ptr.To("http")},
	}
}

// modified is obj after mod (if any): the fixtures below are one object and a change of it.
func modified[T any](obj *T, mod func(*T)) *T {
	if mod != nil {
		mod(obj)
	}
	return obj
}

func remoteService(mod func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "fluentd",
			Namespace:   "sys-log",
			Labels:      map[string]string{"app": "fluentd", "mirror.semaphore.uw.io/mirror-service": "true"},
			Annotations: map[string]string{"remote": "only"},
			UID:         "remote-uid",
		},
		Spec: corev1.ServiceSpec{
			Type:            corev1.ServiceTypeClusterIP,
			Selector:        map[string]string{"app": "fluentd"},
			ClusterIP:       "10.0.0.10",
			ClusterIPs:      []string{"10.0.0.10"},
			IPFamilies:      []corev1.IPFamily{corev1.IPv4Protocol},
			SessionAffinity: corev1.ServiceAffinityNone,
			Ports:           servicePorts(),
		},
	}
	return modified(s, mod)
}

// wantLabels are the labels of every mirrored object of aws/sys-log/fluentd, and extra.
func wantLabels(extra map[string]string) map[string]string {
	l := map[string]string{
		ownership.ManagedBy:   ownership.ServiceMirror,
		mirror.LabelCluster:   "aws",
		mirror.LabelNamespace: "sys-log",
		mirror.LabelName:      "fluentd",
	}
	maps.Copy(l, extra)
	return l
}

func wantService(mod func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "aws-sys-log-73736d-fluentd",
			Namespace: ns,
			Labels:    wantLabels(nil),
		},
		Spec: corev1.ServiceSpec{
			Type:            corev1.ServiceTypeClusterIP,
			SessionAffinity: corev1.ServiceAffinityNone,
			IPFamilyPolicy:  ptr.To(corev1.IPFamilyPolicyPreferDualStack),
			Ports:           servicePorts(),
		},
	}
	return modified(s, mod)
}

func TestService(t *testing.T) {
	tests := []struct {
		name   string
		remote *corev1.Service
		want   *corev1.Service
	}{
		{
			name:   "ClusterIP: selector, IPs, remote labels and annotations dropped",
			remote: remoteService(nil),
			want:   wantService(nil),
		},
		{
			name: "NodePort becomes ClusterIP without node ports",
			remote: remoteService(func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeNodePort
				s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
				s.Spec.Ports[0].NodePort = 30001
				s.Spec.Ports[1].NodePort = 30002
			}),
			want: wantService(nil),
		},
		{
			name: "LoadBalancer becomes ClusterIP without node ports",
			remote: remoteService(func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeLoadBalancer
				s.Spec.LoadBalancerClass = ptr.To("example.com/lb")
				s.Spec.HealthCheckNodePort = 30100
				s.Spec.Ports[0].NodePort = 30001
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
			}),
			want: wantService(nil),
		},
		{
			name: "headless stays headless",
			remote: remoteService(func(s *corev1.Service) {
				s.Spec.ClusterIP = corev1.ClusterIPNone
				s.Spec.ClusterIPs = []string{corev1.ClusterIPNone}
				s.Spec.PublishNotReadyAddresses = true
			}),
			want: wantService(func(s *corev1.Service) {
				s.Spec.ClusterIP = corev1.ClusterIPNone
				s.Spec.PublishNotReadyAddresses = true
			}),
		},
		{
			name: "dual-stack source prefers dual-stack",
			remote: remoteService(func(s *corev1.Service) {
				s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
				s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
				s.Spec.ClusterIPs = []string{"10.0.0.10", "fd00::10"}
			}),
			want: wantService(nil),
		},
		{
			name: "single-stack IPv6 source prefers dual-stack too, so a dual-stack local cluster serves it",
			remote: remoteService(func(s *corev1.Service) {
				s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
				s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
				s.Spec.ClusterIP = "fd00::10"
				s.Spec.ClusterIPs = []string{"fd00::10"}
			}),
			want: wantService(nil),
		},
		{
			name: "session affinity copied",
			remote: remoteService(func(s *corev1.Service) {
				s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
				s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](600)}}
			}),
			want: wantService(func(s *corev1.Service) {
				s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
				s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](600)}}
			}),
		},
		{
			name: "UDP and SCTP ports",
			remote: remoteService(func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{
					{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(5353)},
					{Name: "sctp", Protocol: corev1.ProtocolSCTP, Port: 9999, TargetPort: intstr.FromInt32(9999)},
				}
			}),
			want: wantService(func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{
					{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(5353)},
					{Name: "sctp", Protocol: corev1.ProtocolSCTP, Port: 9999, TargetPort: intstr.FromInt32(9999)},
				}
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.remote.DeepCopy()
			checkResult(t, "Service", mirror.Service(src, ns, tt.remote), tt.want, before, tt.remote)
		})
	}
}

func TestServiceDoesNotAliasInput(t *testing.T) {
	remote := remoteService(func(s *corev1.Service) {
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](600)}}
	})
	got := mirror.Service(src, ns, remote)
	*got.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds = 1
	got.Spec.Ports[0].Port = 1
	if *remote.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds != 600 || remote.Spec.Ports[0].Port != 24224 {
		t.Errorf("changing the mirror changed the remote Service (a cache object): %+v", remote.Spec)
	}
}

func remoteSlice(name string, mod func(*discoveryv1.EndpointSlice)) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   "sys-log",
			Labels:      map[string]string{discoveryv1.LabelServiceName: "fluentd", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"},
			Annotations: map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": "2024-01-01T00:00:00Z"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{
				Addresses:  []string{"198.18.0.10"},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
				Hostname:   ptr.To("fluentd-0"),
				NodeName:   ptr.To("aws-node-1"),
				Zone:       ptr.To("eu-west-1a"),
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "sys-log", Name: "fluentd-0", UID: "pod-uid"},
				Hints:      &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "eu-west-1a"}}},
			},
			{
				Addresses:  []string{"198.18.0.11"},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)},
				NodeName:   ptr.To("aws-node-2"),
			},
		},
		Ports: slicePorts(),
	}
	return modified(s, mod)
}

func wantSlice(remoteName string, mod func(*discoveryv1.EndpointSlice)) *discoveryv1.EndpointSlice {
	service := "aws-sys-log-73736d-fluentd"
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:      mirror.SliceName(service, remoteName),
			Namespace: ns,
			Labels: wantLabels(map[string]string{
				discoveryv1.LabelServiceName: service,
				discoveryv1.LabelManagedBy:   mirror.SliceManager,
			}),
			Annotations: map[string]string{mirror.AnnotationSourceSlice: remoteName},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{
				Addresses:  []string{"198.18.0.10"},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
				Hostname:   ptr.To("fluentd-0"),
			},
			{
				Addresses:  []string{"198.18.0.11"},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)},
			},
		},
		Ports: slicePorts(),
	}
	return modified(s, mod)
}

func TestEndpointSlices(t *testing.T) {
	tests := []struct {
		name   string
		remote []*discoveryv1.EndpointSlice
		want   []*discoveryv1.EndpointSlice
	}{
		{
			name:   "no slices",
			remote: nil,
			want:   []*discoveryv1.EndpointSlice{},
		},
		{
			name:   "remote-only fields dropped, the rest kept",
			remote: []*discoveryv1.EndpointSlice{remoteSlice("fluentd-abcde", nil)},
			want:   []*discoveryv1.EndpointSlice{wantSlice("fluentd-abcde", nil)},
		},
		{
			name: "dual-stack: one mirror per remote slice",
			remote: []*discoveryv1.EndpointSlice{
				remoteSlice("fluentd-v4", nil),
				remoteSlice("fluentd-v6", func(s *discoveryv1.EndpointSlice) {
					s.AddressType = discoveryv1.AddressTypeIPv6
					s.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"fd00::10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}}
				}),
			},
			want: []*discoveryv1.EndpointSlice{
				wantSlice("fluentd-v4", nil),
				wantSlice("fluentd-v6", func(s *discoveryv1.EndpointSlice) {
					s.AddressType = discoveryv1.AddressTypeIPv6
					s.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"fd00::10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}}
				}),
			},
		},
		{
			name: "slice without endpoints",
			remote: []*discoveryv1.EndpointSlice{remoteSlice("fluentd-empty", func(s *discoveryv1.EndpointSlice) {
				s.Endpoints = nil
				s.Ports = nil
			})},
			want: []*discoveryv1.EndpointSlice{wantSlice("fluentd-empty", func(s *discoveryv1.EndpointSlice) {
				s.Endpoints = []discoveryv1.Endpoint{}
				s.Ports = []discoveryv1.EndpointPort{}
			})},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before []*discoveryv1.EndpointSlice
			for _, r := range tt.remote {
				before = append(before, r.DeepCopy())
			}
			checkResult(t, "EndpointSlices", mirror.EndpointSlices(src, ns, tt.remote), tt.want, before, tt.remote)
		})
	}
}

func TestEndpointSlicesDoNotAliasInput(t *testing.T) {
	remote := remoteSlice("fluentd-abcde", nil)
	got := mirror.EndpointSlices(src, ns, []*discoveryv1.EndpointSlice{remote})[0]
	got.Endpoints[0].Addresses[0] = "192.0.2.99"
	*got.Endpoints[0].Conditions.Ready = false
	*got.Endpoints[0].Hostname = "changed"
	*got.Ports[0].Port = 1
	if diff := cmp.Diff(remoteSlice("fluentd-abcde", nil), remote); diff != "" {
		t.Errorf("changing the mirror changed the remote slice, a cache object (-want +got):\n%s", diff)
	}
}

// actualService is what the API server returns for a created mirror: desired plus defaults
// and metadata, and whatever other parties added.
func actualService(desired *corev1.Service) *corev1.Service {
	a := desired.DeepCopy()
	a.UID = "local-uid"
	a.ResourceVersion = "42"
	a.Labels["team"] = "logging"
	a.Annotations = map[string]string{"example.com/note": "added by someone else"}
	if a.Spec.ClusterIP == "" {
		a.Spec.ClusterIP = "10.96.0.20"
	}
	a.Spec.ClusterIPs = []string{a.Spec.ClusterIP}
	a.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	if a.Spec.IPFamilyPolicy == nil {
		a.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	}
	a.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	if a.Spec.SessionAffinity == "" {
		a.Spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	for i := range a.Spec.Ports {
		if a.Spec.Ports[i].Protocol == "" {
			a.Spec.Ports[i].Protocol = corev1.ProtocolTCP
		}
		if a.Spec.Ports[i].TargetPort == (intstr.IntOrString{}) {
			a.Spec.Ports[i].TargetPort = intstr.FromInt32(a.Spec.Ports[i].Port)
		}
	}
	return a
}

func TestUpdateService(t *testing.T) {
	desired := wantService(nil)
	headless := wantService(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone })

	tests := []struct {
		name       string
		desired    *corev1.Service
		actual     *corev1.Service
		wantChange mirror.Change
		want       *corev1.Service // the object to write, for Update
	}{
		{
			name:       "API server defaults and foreign metadata only",
			desired:    desired,
			actual:     actualService(desired),
			wantChange: mirror.NoChange,
		},
		{
			name:       "headless with defaults only",
			desired:    headless,
			actual:     actualService(headless),
			wantChange: mirror.NoChange,
		},
		{
			name:       "desired without session affinity keeps the defaulted one",
			desired:    wantService(func(s *corev1.Service) { s.Spec.SessionAffinity = "" }),
			actual:     actualService(desired),
			wantChange: mirror.NoChange,
		},
		{
			name: "desired port without protocol or targetPort takes the defaulted values",
			desired: wantService(func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{{Name: "forward", Port: 24224}}
			}),
			actual: actualService(wantService(func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{{Name: "forward", Protocol: corev1.ProtocolTCP, Port: 24224, TargetPort: intstr.FromInt32(24224)}}
			})),
			wantChange: mirror.NoChange,
		},
		{
			name:    "port changed",
			desired: wantService(func(s *corev1.Service) { s.Spec.Ports[0].Port = 24225 }),
			actual:  actualService(desired),
			want: modified(actualService(desired), func(w *corev1.Service) {
				w.Spec.Ports[0].Port = 24225
			}),
			wantChange: mirror.Update,
		},
		{
			name:    "port removed",
			desired: wantService(func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[:1] }),
			actual:  actualService(desired),
			want: modified(actualService(desired), func(w *corev1.Service) {
				w.Spec.Ports = w.Spec.Ports[:1]
			}),
			wantChange: mirror.Update,
		},
		{
			name:    "appProtocol changed",
			desired: wantService(func(s *corev1.Service) { s.Spec.Ports[1].AppProtocol = ptr.To("kubernetes.io/h2c") }),
			actual:  actualService(desired),
			want: modified(actualService(desired), func(w *corev1.Service) {
				w.Spec.Ports[1].AppProtocol = ptr.To("kubernetes.io/h2c")
			}),
			wantChange: mirror.Update,
		},
		{
			name:    "type changed by hand to NodePort is set back, node ports dropped",
			desired: desired,
			actual: modified(actualService(desired), func(a *corev1.Service) {
				a.Spec.Type = corev1.ServiceTypeNodePort
				a.Spec.Ports[0].NodePort = 30001
				a.Spec.Ports[1].NodePort = 30002
			}),
			want:       actualService(desired),
			wantChange: mirror.Update,
		},
		{
			name:       "node ports in desired are never written",
			desired:    wantService(func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30001 }),
			actual:     actualService(desired),
			wantChange: mirror.NoChange,
		},
		{
			name:    "selector added by hand is removed",
			desired: desired,
			actual: modified(actualService(desired), func(a *corev1.Service) {
				a.Spec.Selector = map[string]string{"app": "fluentd"}
			}),
			want:       actualService(desired),
			wantChange: mirror.Update,
		},
		{
			name:    "owned label changed, foreign labels kept",
			desired: desired,
			actual: modified(actualService(desired), func(a *corev1.Service) {
				a.Labels[mirror.LabelName] = "other"
			}),
			want:       actualService(desired),
			wantChange: mirror.Update,
		},
		{
			name:    "publishNotReadyAddresses changed",
			desired: wantService(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }),
			actual:  actualService(desired),
			want: modified(actualService(desired), func(w *corev1.Service) {
				w.Spec.PublishNotReadyAddresses = true
			}),
			wantChange: mirror.Update,
		},
		{
			name: "session affinity changed",
			desired: wantService(func(s *corev1.Service) {
				s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
				s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}}
			}),
			actual: actualService(desired),
			want: modified(actualService(desired), func(w *corev1.Service) {
				w.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
				w.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}}
			}),
			wantChange: mirror.Update,
		},
		{
			name:    "a mirror made single-stack by someone is set back to PreferDualStack",
			desired: desired,
			actual: modified(actualService(desired), func(a *corev1.Service) {
				a.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
			}),
			want:       actualService(desired),
			wantChange: mirror.Update,
		},
		{
			name:       "ClusterIP to headless",
			desired:    headless,
			actual:     actualService(desired),
			wantChange: mirror.Recreate,
		},
		{
			name:       "headless to ClusterIP",
			desired:    desired,
			actual:     actualService(headless),
			wantChange: mirror.Recreate,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkUpdate(t, "UpdateService", mirror.UpdateService, tt.desired, tt.actual, tt.want, tt.wantChange)
		})
	}
}

// actualSlice is what the API server returns for a created mirror slice.
func actualSlice(desired *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	a := desired.DeepCopy()
	a.UID = "local-uid"
	a.ResourceVersion = "7"
	a.Labels["team"] = "logging"
	a.Annotations["example.com/note"] = "added by someone else"
	return a
}

func TestUpdateEndpointSlice(t *testing.T) {
	desired := wantSlice("fluentd-abcde", nil)
	empty := wantSlice("fluentd-abcde", func(s *discoveryv1.EndpointSlice) {
		s.Endpoints = []discoveryv1.Endpoint{}
		s.Ports = []discoveryv1.EndpointPort{}
	})
	withActual := func(mod func(*discoveryv1.EndpointSlice)) *discoveryv1.EndpointSlice {
		a := actualSlice(desired)
		mod(a)
		return a
	}

	tests := []struct {
		name       string
		desired    *discoveryv1.EndpointSlice
		actual     *discoveryv1.EndpointSlice
		wantChange mirror.Change
		want       *discoveryv1.EndpointSlice
	}{
		{
			name:       "identical but for foreign metadata",
			desired:    desired,
			actual:     actualSlice(desired),
			wantChange: mirror.NoChange,
		},
		{
			name:    "empty desired lists vs nil actual lists",
			desired: empty,
			actual: func() *discoveryv1.EndpointSlice {
				a := actualSlice(empty)
				a.Endpoints, a.Ports = nil, nil
				return a
			}(),
			wantChange: mirror.NoChange,
		},
		{
			name:       "nil desired lists vs empty actual lists",
			desired:    wantSlice("fluentd-abcde", func(s *discoveryv1.EndpointSlice) { s.Endpoints, s.Ports = nil, nil }),
			actual:     actualSlice(empty),
			wantChange: mirror.NoChange,
		},
		{
			name: "endpoint added",
			desired: wantSlice("fluentd-abcde", func(s *discoveryv1.EndpointSlice) {
				s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"198.18.0.12"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
			}),
			actual: actualSlice(desired),
			want: withActual(func(a *discoveryv1.EndpointSlice) {
				a.Endpoints = append(a.Endpoints, discoveryv1.Endpoint{Addresses: []string{"198.18.0.12"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
			}),
			wantChange: mirror.Update,
		},
		{
			name:    "endpoint address changed",
			desired: wantSlice("fluentd-abcde", func(s *discoveryv1.EndpointSlice) { s.Endpoints[1].Addresses = []string{"198.18.0.99"} }),
			actual:  actualSlice(desired),
			want: withActual(func(a *discoveryv1.EndpointSlice) {
				a.Endpoints[1].Addresses = []string{"198.18.0.99"}
			}),
			wantChange: mirror.Update,
		},
		{
			name:    "condition changed",
			desired: wantSlice("fluentd-abcde", func(s *discoveryv1.EndpointSlice) { s.Endpoints[1].Conditions.Ready = ptr.To(true) }),
			actual:  actualSlice(desired),
			want: withActual(func(a *discoveryv1.EndpointSlice) {
				a.Endpoints[1].Conditions.Ready = ptr.To(true)
			}),
			wantChange: mirror.Update,
		},
		{
			name:    "port changed",
			desired: wantSlice("fluentd-abcde", func(s *discoveryv1.EndpointSlice) { s.Ports[1].Port = ptr.To[int32](8081) }),
			actual:  actualSlice(desired),
			want: withActual(func(a *discoveryv1.EndpointSlice) {
				a.Ports[1].Port = ptr.To[int32](8081)
			}),
			wantChange: mirror.Update,
		},
		{
			name:    "owned label and annotation restored, foreign ones kept",
			desired: desired,
			actual: withActual(func(a *discoveryv1.EndpointSlice) {
				a.Labels[discoveryv1.LabelManagedBy] = "endpointslice-controller.k8s.io"
				a.Annotations[mirror.AnnotationSourceSlice] = "other"
			}),
			want:       actualSlice(desired),
			wantChange: mirror.Update,
		},
		{
			name:    "annotations missing entirely",
			desired: desired,
			actual: withActual(func(a *discoveryv1.EndpointSlice) {
				a.Annotations = nil
			}),
			want: withActual(func(a *discoveryv1.EndpointSlice) {
				a.Annotations = map[string]string{mirror.AnnotationSourceSlice: "fluentd-abcde"}
			}),
			wantChange: mirror.Update,
		},
		{
			name:       "address type changed",
			desired:    wantSlice("fluentd-abcde", func(s *discoveryv1.EndpointSlice) { s.AddressType = discoveryv1.AddressTypeIPv6 }),
			actual:     actualSlice(desired),
			wantChange: mirror.Recreate,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkUpdate(t, "UpdateEndpointSlice", mirror.UpdateEndpointSlice, tt.desired, tt.actual, tt.want, tt.wantChange)
		})
	}
}

// checkResult compares what the function fn returned with want, and its input after the call with
// a copy taken before: the input is a cache object, which fn must not mutate.
func checkResult[O, I any](t *testing.T, fn string, got, want O, before, after I) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s() mismatch (-want +got):\n%s", fn, diff)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("%s() mutated its input (-before +after):\n%s", fn, diff)
	}
}

// checkUpdate checks one case of an Update function (named fn): the change it reports, the object
// it returns, that it mutates neither input (actual is a cache object), and that comparing the
// result with desired again settles (no write loop).
func checkUpdate[O any, P interface {
	*O
	DeepCopy() P
}](t *testing.T, fn string, update func(desired, actual P) (mirror.Change, P), desired, actual, want P, wantChange mirror.Change) {
	t.Helper()
	desiredBefore, actualBefore := desired.DeepCopy(), actual.DeepCopy()
	change, got := update(desired, actual)
	if change != wantChange {
		t.Errorf("%s() change = %v, want %v", fn, change, wantChange)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s() object mismatch (-want +got):\n%s", fn, diff)
	}
	if diff := cmp.Diff(desiredBefore, desired); diff != "" {
		t.Errorf("%s() mutated desired (-before +after):\n%s", fn, diff)
	}
	if diff := cmp.Diff(actualBefore, actual); diff != "" {
		t.Errorf("%s() mutated actual, a cache object (-before +after):\n%s", fn, diff)
	}
	if got != nil {
		if again, _ := update(desired, got); again != mirror.NoChange {
			t.Errorf("%s(desired, result) = %v, want NoChange", fn, again)
		}
	}
}

// Admit keeps the addresses the guard accepts, drops an endpoint left with none (and an FQDN
// slice's every endpoint), and reports each refusal with its source slice.
func TestAdmitKeepsOnlyWhatTheRemoteMayPublish(t *testing.T) {
	var ranges addrguard.Ranges
	if err := ranges.Decode("aws:198.18.1.0/24,aws:fd00:1::/64"); err != nil {
		t.Fatal(err)
	}
	ep := func(addrs ...string) discoveryv1.Endpoint { return discoveryv1.Endpoint{Addresses: addrs} }
	slice := func(name string, t discoveryv1.AddressType, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return mirror.CopySlice(&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, AddressType: t, Endpoints: eps}, metav1.ObjectMeta{})
	}
	copies := []*discoveryv1.EndpointSlice{
		slice("v4", discoveryv1.AddressTypeIPv4, ep("198.18.1.1"), ep("198.18.2.1"), ep("198.18.1.2", "100.100.100.200"), ep("127.0.0.1")),
		slice("v6", discoveryv1.AddressTypeIPv6, ep("fd00:1::1"), ep("fd00:ec2::254")),
		slice("names", discoveryv1.AddressTypeFQDN, ep("metadata.google.internal")),
	}
	refused := mirror.Admit(copies, addrguard.New(ranges).For("aws"))
	var kept []string
	for _, s := range copies {
		for _, e := range s.Endpoints {
			kept = append(kept, s.Annotations[mirror.AnnotationSourceSlice]+":"+strings.Join(e.Addresses, "+"))
		}
	}
	if want := []string{"v4:198.18.1.1", "v4:198.18.1.2", "v6:fd00:1::1"}; !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
	want := []addrguard.Refused{
		{Source: "v4", Addr: "198.18.2.1", Reason: addrguard.ReasonOutsideRanges},
		{Source: "v4", Addr: "100.100.100.200", Reason: addrguard.ReasonSpecial},
		{Source: "v4", Addr: "127.0.0.1", Reason: addrguard.ReasonSpecial},
		{Source: "v6", Addr: "fd00:ec2::254", Reason: addrguard.ReasonSpecial},
		{Source: "names", Addr: "metadata.google.internal", Reason: addrguard.ReasonSpecial},
	}
	if diff := cmp.Diff(want, refused); diff != "" {
		t.Errorf("refused (-want +got):\n%s", diff)
	}
}

// The central property, on arbitrary slices: every address left in a mirror is one the remote
// may publish (inside its ranges, outside the local cluster's and the special ones), every
// endpoint left has one, and every address is either kept or reported refused.
func FuzzAdmitKeepsOnlyWhatTheRemoteMayPublish(f *testing.F) {
	f.Add("198.18.1.5,198.18.7.9;169.254.169.254;::ffff:198.18.2.1,fd00:1::5", "FQDN")
	f.Add("10.0.0.1;127.0.0.1,198.18.3.3;fd00:1:0:7::1;not an address", "IPv4")
	guard := addrguard.New(addrguard.Ranges{"aws": addrguardtest.Ranges})
	guard.SetLocal("test", addrguardtest.Local)
	f.Fuzz(func(t *testing.T, endpoints, addressType string) {
		s := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressType(addressType)}
		var total int
		for e := range strings.SplitSeq(endpoints, ";") {
			addrs := strings.Split(e, ",")
			total += len(addrs)
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: addrs})
		}
		refused := mirror.Admit([]*discoveryv1.EndpointSlice{s}, guard.For("aws"))
		kept := 0
		for _, e := range s.Endpoints {
			if len(e.Addresses) == 0 {
				t.Fatalf("an endpoint without an address is left: %v", s.Endpoints)
			}
			for _, a := range e.Addresses {
				kept++
				if !addrguardtest.Allowed(a) {
					t.Fatalf("%q is left in the mirror", a)
				}
			}
		}
		if kept+len(refused) != total {
			t.Fatalf("%d addresses kept and %d refused of %d", kept, len(refused), total)
		}
	})
}
