package app_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/app"
	"github.com/kube-semaphore/semaphore/components/service-mirror/caches"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
)

// overLimit is the over_limit gauge of remote for what, and its number of series.
func overLimit(t *testing.T, r *running, remote, what string) (float64, int) {
	t.Helper()
	return metricSeries(t, r.App.Registry, "semaphore_service_mirror_over_limit", map[string]string{"remote": remote, "what": what})
}

// expectOverLimit waits until the over_limit gauge of remote for what is want.
func expectOverLimit(t *testing.T, r *running, remote, what string, want float64) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("over_limit{remote=%s,what=%s} = %v", remote, what, want), func() error {
		if got, n := overLimit(t, r, remote, what); n != 1 || got != want {
			return fmt.Errorf("%v (%d series)", got, n)
		}
		return nil
	})
}

// expectMirrors waits until, of the Services of remote in ns named names, exactly those in
// mirrored have a mirror with their one slice, and the others none.
func expectMirrors(t *testing.T, cfg app.Config, remote, ns string, names, mirrored []string) {
	t.Helper()
	want := map[string]bool{}
	for _, n := range mirrored {
		want[n] = true
	}
	eventually(t, 30*time.Second, fmt.Sprintf("mirrors of %s %v, none of the rest of %v", remote, mirrored, names), func() error {
		for _, n := range names {
			src := mirror.Source{Cluster: remote, Namespace: ns, Name: n}
			if !want[n] {
				if err := mirrorGone(cfg, src); err != nil {
					return fmt.Errorf("%s: %w", n, err)
				}
				continue
			}
			_, sl, err := mirrorOf(cfg, src)
			if err == nil && len(sl) != 1 {
				err = fmt.Errorf("%d slices", len(sl))
			}
			if err != nil {
				return fmt.Errorf("%s: %w", n, err)
			}
		}
		return nil
	})
}

// limitedServices creates, in ns of c, labelled Services named names, each with one slice.
func limitedServices(t *testing.T, c *testenv.Cluster, ns string, names ...string) {
	t.Helper()
	for i, n := range names {
		remoteService(t, c, ns, n, nil)
		remoteSlice(t, c, ns, n, n+"-1", discoveryv1.AddressTypeIPv4, endpoint(fmt.Sprintf("198.18.7.%d", i+1)))
	}
}

// A remote with more labelled Services than SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE gets
// mirrors of the first in namespace/name order only, whatever order they were made in; the
// others are counted in over_limit, not in the drift, and the other remote is unaffected. A
// Service that sorts first takes its place and pushes the last one out. Raising the limit
// mirrors the rest; lowering it deletes the mirrors beyond it, as if their Services had gone.
func TestARemoteOverItsServiceLimitGetsMirrorsOfTheFirstOnly(t *testing.T) {
	cfg := newConfig(t, "aws", "gcp")
	cfg.MaxServices = 3
	ns := fixture.Namespace(t, "app")
	awsNames := []string{"s4", "s2", "s5", "s1", "s3"} // made out of order
	limitedServices(t, aws, ns, awsNames...)
	limitedServices(t, gcp, ns, "g1", "g2")
	r := start(t, cfg)

	expectMirrors(t, cfg, "aws", ns, awsNames, []string{"s1", "s2", "s3"})
	expectMirrors(t, cfg, "gcp", ns, []string{"g1", "g2"}, []string{"g1", "g2"})
	expectOverLimit(t, r, "aws", "services", 2)
	expectOverLimit(t, r, "gcp", "services", 0)
	eventually(t, 10*time.Second, "no drift: what is over the limit is left out on purpose", func() error {
		for _, remote := range []string{"aws", "gcp"} {
			if v := metricValue(t, r.App.Registry, "semaphore_service_mirror_mirror_drift", map[string]string{"remote": remote}); v != 0 {
				return fmt.Errorf("mirror_drift{%s} = %v", remote, v)
			}
		}
		return nil
	})

	// s0 sorts first: it is mirrored, and s3 is pushed beyond the limit, its mirror deleted.
	limitedServices(t, aws, ns, "s0")
	awsNames = append(awsNames, "s0")
	expectMirrors(t, cfg, "aws", ns, awsNames, []string{"s0", "s1", "s2"})
	expectOverLimit(t, r, "aws", "services", 3)

	// Deleting s1 lets s3 in again.
	if err := aws.Client.CoreV1().Services(ns).Delete(context.Background(), "s1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	awsNames = []string{"s0", "s2", "s3", "s4", "s5"}
	expectMirrors(t, cfg, "aws", ns, awsNames, []string{"s0", "s2", "s3"})
	r.Stop()

	r = startWith(t, cfg, func(c *app.Config) { c.MaxServices = 10 })
	expectMirrors(t, cfg, "aws", ns, awsNames, awsNames)
	expectOverLimit(t, r, "aws", "services", 0)
	r.Stop()

	r = startWith(t, cfg, func(c *app.Config) { c.MaxServices = 1 })
	expectMirrors(t, cfg, "aws", ns, awsNames, []string{"s0"})
	expectMirrors(t, cfg, "gcp", ns, []string{"g1", "g2"}, []string{"g1"})
	expectOverLimit(t, r, "aws", "services", 4)
	expectOverLimit(t, r, "gcp", "services", 1)
}

// A remote with more global Services than SEMAPHORE_GLOBAL_MAX_SERVICES_PER_REMOTE contributes
// to the first in namespace/name order only: to no other, and creates none the others do not
// have; the local cluster and the other remote are unaffected. A restart with the same limit
// writes nothing; raising it brings the rest in, lowering it takes its share out again.
func TestARemoteOverItsGlobalLimitContributesToTheFirstOnly(t *testing.T) {
	cfg := newGlobalConfig(t, "aws", "gcp")
	cfg.GlobalMaxServices = 2
	ns := fixture.Namespace(t, "app")
	for i, n := range []string{"g3", "g1", "g2", "g4"} {
		globalService(t, aws, ns, n, nil, fmt.Sprintf("198.18.2.%d", i+1))
	}
	globalService(t, gcp, ns, "g1", nil, "198.18.3.1")
	globalService(t, local, ns, "g3", nil, "198.18.1.3")
	key := func(n string) global.Key { return global.Key{Namespace: ns, Name: n} }
	r := start(t, cfg)

	// aws's g1 and g2 are within its limit (198.18.2.2 and .3), g3 and g4 are not.
	expectGlobal(t, cfg, key("g1"), map[string][]string{"aws": {"198.18.2.2"}, "gcp": {"198.18.3.1"}})
	expectGlobal(t, cfg, key("g2"), map[string][]string{"aws": {"198.18.2.3"}})
	expectGlobal(t, cfg, key("g3"), map[string][]string{"local": {"198.18.1.3"}})
	expectOverLimit(t, r, "aws", "global_services", 2)
	expectOverLimit(t, r, "gcp", "global_services", 0)
	if _, _, err := globalOf(cfg, key("g4")); !apierrors.IsNotFound(err) {
		t.Errorf("global service g4, which only aws has beyond its limit: %v, want none", err)
	}
	expectNoWrites(t, cfg, "at rest")
	r.Stop()

	// The limit's handler must have seen every Service before the remote counts as synced:
	// otherwise a restart would take aws's share out of g2 and put it back.
	before := len(globalWrites(t, cfg))
	r = start(t, cfg)
	expectOverLimit(t, r, "aws", "global_services", 2)
	expectNoWrites(t, cfg, "after a restart")
	if got := globalWrites(t, cfg)[before:]; len(got) != 0 {
		t.Errorf("the restart made %d writes, want none:%s", len(got), got)
	}
	r.Stop()

	r = startWith(t, cfg, func(c *app.Config) { c.GlobalMaxServices = 4 })
	expectGlobal(t, cfg, key("g3"), map[string][]string{"local": {"198.18.1.3"}, "aws": {"198.18.2.1"}})
	expectGlobal(t, cfg, key("g4"), map[string][]string{"aws": {"198.18.2.4"}})
	expectOverLimit(t, r, "aws", "global_services", 0)
	r.Stop()

	r = startWith(t, cfg, func(c *app.Config) { c.GlobalMaxServices = 1 })
	expectGlobal(t, cfg, key("g1"), map[string][]string{"aws": {"198.18.2.2"}, "gcp": {"198.18.3.1"}})
	expectGlobal(t, cfg, key("g3"), map[string][]string{"local": {"198.18.1.3"}})
	for _, n := range []string{"g2", "g4"} {
		eventually(t, 30*time.Second, "global service "+n+" gone", func() error {
			_, _, err := globalOf(cfg, key(n))
			if err == nil {
				return errors.New("still there")
			}
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
	}
	expectOverLimit(t, r, "aws", "global_services", 3)
}

// hugeAnnotation is 200 KiB, within the 256 KiB the API server allows an object's annotations.
var hugeAnnotation = map[string]string{"example.com/huge": strings.Repeat("x", 200<<10)}

// A remote Service and EndpointSlice carrying a 200 KiB annotation and labels no one reads are
// mirrored, and served as a global service, as any other; what the controllers cache of them
// holds no annotation and only the labels they read.
func TestRemoteMetadataNoOneReadsIsNotCached(t *testing.T) {
	cfg := newGlobalConfig(t, "aws")
	ns := fixture.Namespace(t, "app")
	ctx := context.Background()
	noisy := func(s *corev1.Service) {
		s.Annotations = hugeAnnotation
		s.Labels["example.com/team"] = "payments"
	}
	remoteService(t, aws, ns, "web", noisy)
	globalService(t, aws, ns, "api", noisy)
	for _, name := range []string{"web", "api-abcde"} {
		var s *discoveryv1.EndpointSlice
		if name == "web" {
			s = remoteSlice(t, aws, ns, "web", "web-1", discoveryv1.AddressTypeIPv4, endpoint("198.18.2.1"))
		} else {
			var err error
			if s, err = aws.Client.DiscoveryV1().EndpointSlices(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
			s.Endpoints = []discoveryv1.Endpoint{endpoint("198.18.2.2")}
		}
		s.Annotations = hugeAnnotation
		if _, err := aws.Client.DiscoveryV1().EndpointSlices(ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r := start(t, cfg)

	src := mirror.Source{Cluster: "aws", Namespace: ns, Name: "web"}
	eventually(t, 30*time.Second, "mirror of "+src.String(), func() error {
		svc, sl, err := mirrorOf(cfg, src)
		if err != nil {
			return err
		}
		if len(svc.Spec.Ports) != 2 || len(sl) != 1 || !addressesOf(sl)["198.18.2.1"] {
			return fmt.Errorf("%d ports, %d slices with %v", len(svc.Spec.Ports), len(sl), addressesOf(sl))
		}
		return nil
	})
	expectGlobal(t, cfg, global.Key{Namespace: ns, Name: "api"}, map[string][]string{"aws": {"198.18.2.2"}})

	ctrls := r.App.Controller()
	mirrors := ctrls.Mirrors.RemoteCaches("aws")
	services, remoteSlices := mirrors.Services, mirrors.Slices
	globalServices := ctrls.Global.ClusterCaches("aws").Services
	for what, get := range map[string]func() (metav1.Object, error){
		"the mirrors' Service web": func() (metav1.Object, error) { return services.Services(ns).Get("web") },
		"the global services' Service api": func() (metav1.Object, error) {
			return globalServices.Services(ns).Get("api")
		},
		"the EndpointSlice web-1": func() (metav1.Object, error) { return cachedSlice(remoteSlices.GetByKey(ns + "/web-1")) },
		"the EndpointSlice api-abcde": func() (metav1.Object, error) {
			return cachedSlice(remoteSlices.GetByKey(ns + "/api-abcde"))
		},
	} {
		m, err := get()
		if err != nil {
			t.Errorf("%s is not cached: %v", what, err)
			continue
		}
		if len(m.GetAnnotations()) != 0 || len(m.GetManagedFields()) != 0 {
			t.Errorf("%s is cached with %d annotations and %d managedFields, want none", what, len(m.GetAnnotations()), len(m.GetManagedFields()))
		}
		for k := range m.GetLabels() {
			if !isReadLabel(k) {
				t.Errorf("%s is cached with label %s, which no controller reads", what, k)
			}
		}
	}
}

func cachedSlice(obj any, exists bool, err error) (metav1.Object, error) {
	if err == nil && !exists {
		err = fmt.Errorf("not in the store")
	}
	if err != nil {
		return nil, err
	}
	return obj.(*discoveryv1.EndpointSlice), nil
}

func isReadLabel(k string) bool {
	return slices.Contains(caches.ServiceLabels, k) || slices.Contains(caches.SliceLabels, k)
}
