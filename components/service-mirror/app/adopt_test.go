package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/adopt"
	"github.com/kube-semaphore/semaphore/components/service-mirror/app"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// originalMirror creates in the mirror namespace what the original semaphore-service-mirror
// made for src: the mirror Service, its Endpoints and an EndpointSlice, all labelled as it
// labelled them, with the endpoint at addr.
func originalMirror(t *testing.T, cfg app.Config, src mirror.Source, addr string) *corev1.Service {
	t.Helper()
	ctx := context.Background()
	name := mirror.ServiceName(src)
	marks := map[string]string{adopt.LabelMirrored: "true", adopt.LabelPrefix: src.Cluster}
	svc := originalService(t, cfg, metav1.ObjectMeta{Name: name, Labels: marks})
	// The original wrote Endpoints (deprecated since Kubernetes 1.33): that is what is migrated.
	//nolint:staticcheck // as above
	if _, err := local.Client.CoreV1().Endpoints(cfg.Namespace).Create(ctx, &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: marks},
		Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck // as above
			Addresses: []corev1.EndpointAddress{{IP: addr}},
			Ports:     []corev1.EndpointPort{{Name: "forward", Port: 24224, Protocol: corev1.ProtocolTCP}},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := local.Client.DiscoveryV1().EndpointSlices(cfg.Namespace).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-orig1", Labels: map[string]string{
			discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: adopt.SliceManager,
			adopt.LabelMirrored: "true", adopt.LabelPrefix: src.Cluster,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{endpoint(addr)},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("forward"), Port: ptr.To[int32](24224)}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return svc
}

// Migrating from the original semaphore-service-mirror, step by step: its mirror, Endpoints and
// EndpointSlice are in the mirror namespace. Without SEMAPHORE_ADOPT_ORIGINAL our controller
// leaves them alone (a name clash, counted). Restarted with it, it adopts the Service in place
// (same UID and ClusterIP, our labels, the original's gone), writes its EndpointSlices, and only
// then deletes the original's Endpoints and EndpointSlice; the original's mirror of a cluster it
// does not read is left alone; then nothing is written.
func TestAdoptsTheOriginalsMirrors(t *testing.T) {
	cfg := newConfig(t, "aws")
	ns := fixture.Namespace(t, "app")
	src := mirror.Source{Cluster: "aws", Namespace: ns, Name: "web"}
	remoteService(t, aws, ns, "web", nil)
	remoteSlice(t, aws, ns, "web", "web-abcde", discoveryv1.AddressTypeIPv4, endpoint("198.18.2.20"), endpoint("198.18.2.21"))
	before := originalMirror(t, cfg, src, "198.18.2.20")
	elsewhere := originalMirror(t, cfg, mirror.Source{Cluster: "merit", Namespace: ns, Name: "web"}, "198.18.9.1")

	off := start(t, cfg)
	eventually(t, 30*time.Second, "the original's mirror counted as a clash", func() error {
		if v := metricValue(t, off.App.Registry, "semaphore_service_mirror_clashes_total", map[string]string{"remote": "aws", "kind": "Service"}); v < 1 {
			return fmt.Errorf("clashes_total{aws,Service} = %v", v)
		}
		return nil
	})
	if svc, _, err := mirrorOf(cfg, src); err != nil || svc.ResourceVersion != before.ResourceVersion {
		t.Fatalf("without SEMAPHORE_ADOPT_ORIGINAL the original's mirror changed: %v, %v", svc, err)
	}
	off.Stop()

	cfg.AdoptOriginal = true
	on := start(t, cfg)
	ctx := context.Background()
	eventually(t, 30*time.Second, "adopted in place, ours written, the original's endpoints gone", func() error {
		svc, sl, err := mirrorOf(cfg, src)
		if err != nil {
			return err
		}
		switch {
		case svc.UID != before.UID || svc.Spec.ClusterIP != before.Spec.ClusterIP:
			return fmt.Errorf("service %s/%s, was %s/%s: not adopted in place", svc.UID, svc.Spec.ClusterIP, before.UID, before.Spec.ClusterIP)
		case !ownership.IsManagedBy(svc.Labels, ownership.ServiceMirror) || svc.Labels[adopt.LabelMirrored] != "" || svc.Labels[adopt.LabelPrefix] != "":
			return fmt.Errorf("labels %v", svc.Labels)
		}
		if got := addressesOf(sl); len(got) != 2 || !got["198.18.2.20"] || !got["198.18.2.21"] {
			return fmt.Errorf("endpoints %v (of %d slices), want ours only: 198.18.2.20 and .21", got, len(sl))
		}
		if _, err := local.Client.CoreV1().Endpoints(cfg.Namespace).Get(ctx, svc.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the original's Endpoints: %w", err)
		}
		return nil
	})
	for kind, want := range map[string]float64{"EndpointSlice": 1, "Endpoints": 1} {
		if v := metricValue(t, on.App.Registry, "semaphore_service_mirror_original_objects_removed_total", map[string]string{"kind": kind}); v != want {
			t.Errorf("original_objects_removed_total{kind=%s} = %v, want %v", kind, v, want)
		}
	}
	if v := metricValue(t, on.App.Registry, "semaphore_service_mirror_adopted_total", map[string]string{"kind": "mirror"}); v != 1 {
		t.Errorf("adopted_total{kind=mirror} = %v, want 1", v)
	}
	other, err := local.Client.CoreV1().Services(cfg.Namespace).Get(ctx, elsewhere.Name, metav1.GetOptions{})
	if err != nil || other.ResourceVersion != elsewhere.ResourceVersion {
		t.Errorf("the original's mirror of merit, a cluster we do not read, changed: %v", err)
	}
	if _, err := local.Client.CoreV1().Endpoints(cfg.Namespace).Get(ctx, elsewhere.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the original's Endpoints of merit's mirror: %v", err)
	}
	expectNoWrites(t, cfg, "at rest once adopted")
}

// The original's global Service (gl-<namespace>-73736d-<name>, labelled global-svc=true) and its
// EndpointSlice: with SEMAPHORE_ADOPT_ORIGINAL the global-services controller adopts the Service
// in place (same ClusterIP, the original's label and annotation gone) and deletes the original's
// slice once ours hold every cluster's endpoints.
func TestAdoptsTheOriginalsGlobalServices(t *testing.T) {
	cfg := newGlobalConfig(t, "aws")
	cfg.AdoptOriginal = true
	ns := fixture.Namespace(t, "app")
	k := global.Key{Namespace: ns, Name: "api"}
	globalService(t, aws, ns, "api", nil, "198.18.2.1")
	ctx := context.Background()
	name := global.ServiceName(k)
	before := originalService(t, cfg, metav1.ObjectMeta{Name: name, Labels: map[string]string{adopt.LabelGlobal: "true"},
		Annotations: map[string]string{adopt.AnnotationGlobalClusters: "aws"}})
	if _, err := local.Client.DiscoveryV1().EndpointSlices(cfg.Namespace).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "gl-api-orig1", Labels: map[string]string{
			discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: adopt.SliceManager,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{endpoint("198.18.2.1")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	r := start(t, cfg)
	svc, _ := expectGlobal(t, cfg, k, map[string][]string{"aws": {"198.18.2.1"}})
	if svc.UID != before.UID || svc.Spec.ClusterIP != before.Spec.ClusterIP {
		t.Errorf("global Service %s/%s, was %s/%s: not adopted in place", svc.UID, svc.Spec.ClusterIP, before.UID, before.Spec.ClusterIP)
	}
	if _, ok := svc.Labels[adopt.LabelGlobal]; ok || svc.Annotations[adopt.AnnotationGlobalClusters] != "" {
		t.Errorf("the original's marks are still there: %v %v", svc.Labels, svc.Annotations)
	}
	if v := metricValue(t, r.App.Registry, "semaphore_service_mirror_adopted_total", map[string]string{"kind": "global"}); v != 1 {
		t.Errorf("adopted_total{kind=global} = %v, want 1", v)
	}
	expectNoWrites(t, cfg, "at rest once adopted")
}

// originalService creates, in the mirror namespace of cfg, a Service with meta as the original
// made them: the ports of remoteService's, without their targets.
func originalService(t *testing.T, cfg app.Config, meta metav1.ObjectMeta) *corev1.Service {
	t.Helper()
	svc, err := local.Client.CoreV1().Services(cfg.Namespace).Create(context.Background(), &corev1.Service{
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "forward", Port: 8888, Protocol: corev1.ProtocolTCP},
			{Name: "http", Port: 8889, Protocol: corev1.ProtocolTCP},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}
