package env

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// How the lab installs what Calico's manifests define, minus the programs, which it runs itself
// (calico.go).

// calicoManifestKinds are the kinds the lab applies from Calico's manifests: the RBAC, the
// Calico API server's namespace, Service and APIService. Not the DaemonSet, Deployments and
// their ConfigMap: the lab runs those programs as processes.
var calicoManifestKinds = []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service", "APIService"}

// calicoManifests are the release's manifests the lab applies from.
var calicoManifests = []string{"calico.yaml", "apiserver.yaml"}

// calicoServiceAccounts are the ServiceAccounts of Calico's programs, by namespace and name,
// whose tokens the programs run with.
var calicoServiceAccounts = [][2]string{
	{"kube-system", "calico-node"},
	{"kube-system", "calico-cni-plugin"},
	{"kube-system", "calico-kube-controllers"},
	{"calico-apiserver", "calico-apiserver"},
}

// applyCalicoManifests applies calicoManifestKinds from the release's manifests to cluster
// spec: the Calico API server's Service without its selector, with the API server's address
// at the provider's router as its endpoint, and its APIService trusting the cluster's CA, which
// signed the Calico API server's certificate; and kube-controllers' configuration
// (kubeControllersConfig).
func (l *Lab) applyCalicoManifests(ctx context.Context, spec layout.ClusterSpec) error {
	c := l.clusters[spec.Name]
	ca, err := os.ReadFile(l.Path("clusters", spec.Name, "pki", caFile))
	if err != nil {
		return err
	}
	var objs []*unstructured.Unstructured
	for _, m := range calicoManifests {
		docs, err := readManifest(filepath.Join(l.bin.calico, m))
		if err != nil {
			return err
		}
		for _, o := range docs {
			if slices.Contains(calicoManifestKinds, o.GetKind()) {
				objs = append(objs, o)
			}
		}
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "Service":
			unstructured.RemoveNestedField(o.Object, "spec", "selector")
		case "APIService":
			if err := unstructured.SetNestedField(o.Object, base64.StdEncoding.EncodeToString(ca), "spec", "caBundle"); err != nil {
				return err
			}
		}
	}
	if err := applyObjects(ctx, c, append(objs, kubeControllersConfig())); err != nil {
		return err
	}
	return l.setCalicoAPIEndpoints(ctx, spec)
}

// setCalicoAPIEndpoints makes the Calico API server's Service point at where it listens: an
// EndpointSlice of its own, as for any Service without a selector.
func (l *Lab) setCalicoAPIEndpoints(ctx context.Context, spec layout.ClusterSpec) error {
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "calico-api", Namespace: "calico-apiserver", Labels: map[string]string{
			discoveryv1.LabelServiceName: "calico-api", discoveryv1.LabelManagedBy: "semaphore-lab",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{spec.APIAddr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("apiserver"), Port: ptr.To(int32(calicoAPIServerPort)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	_, err := l.clusters[spec.Name].Client.DiscoveryV1().EndpointSlices(slice.Namespace).Create(ctx, slice, metav1.CreateOptions{})
	return err
}

// readManifest is the objects of the YAML file at path.
func readManifest(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeManifest(f, path)
}

// decodeManifest is the objects of the YAML documents r reads, from the file named name.
func decodeManifest(r io.Reader, name string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

// applyObjects applies objs to cluster c, server-side, in order.
func applyObjects(ctx context.Context, c *testbed.Cluster, objs []*unstructured.Unstructured) error {
	dc, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client.Discovery()))
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
		}
		data, err := json.Marshal(o.Object)
		if err != nil {
			return err
		}
		var r dynamic.ResourceInterface = dc.Resource(m.Resource)
		if o.GetNamespace() != "" {
			r = dc.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if _, err := r.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "semaphore-lab", Force: ptr.To(true)}); err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
		}
	}
	return nil
}

// writeCalicoKubeconfigs writes, for each of calicoServiceAccounts, a kubeconfig with a token
// of the ServiceAccount, for the API server at its private address.
func (l *Lab) writeCalicoKubeconfigs(ctx context.Context, cluster string) error {
	dir := l.Path("clusters", cluster, "calico")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, err := os.ReadFile(l.Path("clusters", cluster, "pki", caFile))
	if err != nil {
		return err
	}
	for _, sa := range calicoServiceAccounts {
		tr, err := l.clusters[cluster].Client.CoreV1().ServiceAccounts(sa[0]).CreateToken(ctx, sa[1],
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(7 * 24 * 3600))}},
			metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("a token of %s/%s: %w", sa[0], sa[1], err)
		}
		kc := clientcmdapi.NewConfig()
		kc.Clusters[cluster] = &clientcmdapi.Cluster{Server: l.privateAPIServer(cluster), CertificateAuthorityData: ca}
		kc.AuthInfos[sa[1]] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
		kc.Contexts[cluster] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: sa[1]}
		kc.CurrentContext = cluster
		if err := clientcmd.WriteToFile(*kc, filepath.Join(dir, sa[1]+".kubeconfig")); err != nil {
			return err
		}
	}
	return nil
}

// ippoolsV1 is Calico's IPPools in the CRD API, which Felix and calico-ipam read.
var ippoolsV1 = schema.GroupVersionResource{Group: "crd.projectcalico.org", Version: "v1", Resource: "ippools"}

// createIPPools creates cluster's own pools (IPPoolsOf): in CalicoCluster encapsulated with
// VXLAN between the cluster's nodes, masqueraded when leaving the cluster's pod range (except to the other
// clusters' pods: their pools, from docs/calico.md, say so).
func (l *Lab) createIPPools(ctx context.Context, cluster string) error {
	dc, err := dynamic.NewForConfig(l.clusters[cluster].Config)
	if err != nil {
		return err
	}
	vxlan := "Never"
	if cluster == layout.CalicoCluster {
		vxlan = "Always"
	}
	for _, p := range layout.IPPoolsOf(cluster) {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "crd.projectcalico.org/v1",
			"kind":       "IPPool",
			"metadata":   map[string]any{"name": p.Name},
			"spec": map[string]any{
				"cidr": p.CIDR.String(), "blockSize": int64(p.BlockSize),
				"vxlanMode": vxlan, "ipipMode": "Never", "natOutgoing": true, "nodeSelector": "all()",
			},
		}}
		if _, err := dc.Resource(ippoolsV1).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("pool %s: %w", p.Name, err)
		}
	}
	return nil
}

// kubeControllersConfig is kube-controllers' configuration: the default but for how long an
// empty block stays affine to a node that has others before it is released (15 minutes by
// default), so that `lab check` sees calico-ipam release one within seconds.
func kubeControllersConfig() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "crd.projectcalico.org/v1",
		"kind":       "KubeControllersConfiguration",
		"metadata":   map[string]any{"name": "default"},
		"spec": map[string]any{
			"healthChecks": "Enabled",
			"controllers": map[string]any{
				"node": map[string]any{"reconcilerPeriod": "5m", "syncLabels": "Enabled", "leakGracePeriod": layout.BlockReleaseGrace.String()},
			},
		},
	}}
}

// waitCalicoAPI waits until cluster's API server serves projectcalico.org/v3 through the
// Calico API server.
func (l *Lab) waitCalicoAPI(ctx context.Context, cluster string) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		_, last = l.clusters[cluster].Client.Discovery().ServerResourcesForGroupVersion(layout.CalicoAPI)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%s is not served (see logs/calico-apiserver-%s.log): %w", layout.CalicoAPI, cluster, errors.Join(err, last))
	}
	return nil
}
