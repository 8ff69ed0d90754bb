package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// TestCalicoCRDs checks that the GlobalNetworkSet CRDs semaphore-policy's tests serve Calico's API
// from install through Options.CRDDirs, and behave as Calico's schemas say: cluster-scoped,
// spec.nets a list of strings, IPv4 and IPv6 networks alike.
func TestCalicoCRDs(t *testing.T) {
	dir := testenv.CRDs("policy")
	c := testenv.Start(t, testenv.Options{CRDDirs: []string{dir}}, "local")[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		gvr schema.GroupVersionResource
		// validatesNets: the v3 schema checks each entry is an IP or a CIDR (as the Calico API
		// server does); the v1 CRD, Calico's backing storage, checks nothing.
		validatesNets bool
	}{
		{schema.GroupVersionResource{Group: "projectcalico.org", Version: "v3", Resource: "globalnetworksets"}, true},
		{schema.GroupVersionResource{Group: "crd.projectcalico.org", Version: "v1", Resource: "globalnetworksets"}, false},
	} {
		t.Run(tc.gvr.Group, func(t *testing.T) {
			res, err := c.Client.Discovery().ServerResourcesForGroupVersion(tc.gvr.GroupVersion().String())
			if err != nil {
				t.Fatalf("discovery of %s: %v", tc.gvr.GroupVersion(), err)
			}
			i := slices.IndexFunc(res.APIResources, func(r metav1.APIResource) bool { return r.Name == tc.gvr.Resource })
			if i < 0 {
				t.Fatalf("%s does not serve %s", tc.gvr.GroupVersion(), tc.gvr.Resource)
			}
			if r := res.APIResources[i]; r.Kind != "GlobalNetworkSet" || r.Namespaced {
				t.Fatalf("%s: kind %q, namespaced %v; want GlobalNetworkSet, cluster-scoped", tc.gvr, r.Kind, r.Namespaced)
			}

			sets := client.Resource(tc.gvr)
			labels := map[string]string{
				"app.kubernetes.io/managed-by":     "semaphore-policy",
				"policy.semaphore.uw.io/cluster":   "gcp",
				"policy.semaphore.uw.io/namespace": "sys-log",
				"policy.semaphore.uw.io/name":      "forwarder",
			}
			nets := []any{"198.18.0.1/32", "fd00::1/128"}
			set := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": tc.gvr.GroupVersion().String(),
				"kind":       "GlobalNetworkSet",
				"metadata":   map[string]any{"name": "gcp-sys-log-forwarder"},
				"spec":       map[string]any{"nets": nets},
			}}
			set.SetLabels(labels)
			if _, err := sets.Create(ctx, set, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create: %v", err)
			}

			got, err := sets.Get(ctx, "gcp-sys-log-forwarder", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if diff := cmp.Diff(labels, got.GetLabels()); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			gotNets, _, err := unstructured.NestedSlice(got.Object, "spec", "nets")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(nets, gotNets); diff != "" {
				t.Errorf("spec.nets (-want +got):\n%s", diff)
			}
			if ns := got.GetNamespace(); ns != "" {
				t.Errorf("namespace %q, want none", ns)
			}

			list, err := sets.List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=semaphore-policy"})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			var names []string
			for _, item := range list.Items {
				names = append(names, item.GetName())
			}
			if diff := cmp.Diff([]string{"gcp-sys-log-forwarder"}, names); diff != "" {
				t.Errorf("listed (-want +got):\n%s", diff)
			}

			// The controller updates nets in place and deletes empty sets.
			if err := unstructured.SetNestedSlice(got.Object, []any{"198.18.0.2/32"}, "spec", "nets"); err != nil {
				t.Fatal(err)
			}
			if _, err := sets.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("update: %v", err)
			}

			invalid := func(name string, nets any) error {
				_, err := sets.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": tc.gvr.GroupVersion().String(),
					"kind":       "GlobalNetworkSet",
					"metadata":   map[string]any{"name": name},
					"spec":       map[string]any{"nets": nets},
				}}, metav1.CreateOptions{})
				return err
			}
			if err := invalid("not-a-list", "not-a-list"); !apierrors.IsInvalid(err) {
				t.Errorf("create with spec.nets a string: %v, want Invalid", err)
			}
			err = invalid("not-a-cidr", []any{"not-a-cidr"})
			switch {
			case tc.validatesNets && !apierrors.IsInvalid(err):
				t.Errorf("create with spec.nets [not-a-cidr]: %v, want Invalid", err)
			case !tc.validatesNets && err != nil:
				t.Errorf("create with spec.nets [not-a-cidr]: %v, want it accepted (Calico's v1 CRD does not validate)", err)
			}

			if err := sets.Delete(ctx, "gcp-sys-log-forwarder", metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if _, err := sets.Get(ctx, "gcp-sys-log-forwarder", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("get after delete: %v, want NotFound", err)
			}
		})
	}
}
