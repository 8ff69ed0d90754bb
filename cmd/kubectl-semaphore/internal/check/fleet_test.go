package check_test

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/agents"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/check"
)

var (
	linkOnce sync.Once
	linked   inSync
)

// linkedPair is gcp linked to aws (linkInSync), set up once for the tests of the package, which
// put back what they change.
func linkedPair(t *testing.T) inSync {
	t.Helper()
	linkOnce.Do(func() { linked = linkInSync(t) })
	if linked.dyn == nil {
		t.Fatal("linking gcp to aws failed in an earlier test")
	}
	return linked
}

// consumer is who gcp's components are in aws: the ServiceAccount semaphore-remote makes there
// for consumer gcp, whose token the Secrets hold.
const consumer = "system:serviceaccount:semaphore-remote:semaphore-remote-gcp"

// metricLines are the series of a /metrics: "family{labels}" to value.
type metricLines map[string]float64

// text is the exposition of the series, each family's together.
func (m metricLines) text() []byte {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s %v\n", k, m[k])
	}
	return []byte(b.String())
}

// drop removes the series of family.
func (m metricLines) drop(family string) {
	for k := range m {
		if strings.HasPrefix(k, family+"{") {
			delete(m, k)
		}
	}
}

// fleet serves, as the /metrics of gcp's pods, what working components reading aws say, as
// change (when set) alters them for each component (wireguard, ...; coredns for CoreDNS's pods).
type fleet struct {
	now    time.Time
	host   string
	change func(component string, m metricLines)
}

func newFleet(t *testing.T, now time.Time) fleet {
	t.Helper()
	u, err := url.Parse(aws.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	return fleet{now: now, host: u.Host}
}

// with is f whose pods' metrics change also alters.
func (f fleet) with(change func(component string, m metricLines)) fleet {
	before := f.change
	f.change = func(component string, m metricLines) {
		if before != nil {
			before(component, m)
		}
		change(component, m)
	}
	return f
}

// metrics implements check.Options.Metrics.
func (f fleet) metrics(_ context.Context, pod *corev1.Pod, _ int) ([]byte, error) {
	component := pod.Labels["app.kubernetes.io/component"]
	if pod.Namespace == "kube-system" {
		component = "coredns"
	}
	m := f.working(component)
	if f.change != nil {
		f.change(component, m)
	}
	return m.text(), nil
}

// working is what a working component of gcp reading aws says.
func (f fleet) working(component string) metricLines {
	if component == "coredns" {
		return metricLines{`coredns_plugin_enabled{name="rewrite",server="dns://:53",zone="."}`: 1, `coredns_plugin_enabled{name="cache",server="dns://:53",zone="."}`: 1}
	}
	p := map[string]string{"service-mirror": "semaphore_service_mirror", "policy": "semaphore_policy", "wireguard": "semaphore_wg"}[component]
	m := metricLines{
		p + `_remote_up{remote="aws"}`:                                              1,
		p + `_remote_last_sync_timestamp_seconds{remote="aws"}`:                     float64(f.now.Add(-5 * time.Second).Unix()),
		p + `_remote_identity_info{remote="aws",user="` + consumer + `"}`:           1,
		p + `_client_requests_total{code="200",host="` + f.host + `",method="GET"}`: 42,
	}
	if component == "wireguard" {
		maps.Copy(m, metricLines{
			agents.HandshakeMetric + `{peer="aws-node-1",remote="aws"}`:                        float64(f.now.Add(-30 * time.Second).Unix()),
			`semaphore_wg_peer_info{endpoint_published="true",peer="aws-node-1",remote="aws"}`: 1,
			`semaphore_wg_peers_without_handshake{remote="aws"}`:                               0,
			`semaphore_wg_skipped_peers{reason="not_annotated",remote="aws"}`:                  0,
			`semaphore_wg_device_info{device="wg-aws",implementation="kernel",remote="aws"}`:   1,
			`semaphore_wg_device_mtu{remote="aws"}`:                                            1420,
			`semaphore_wg_path_mtu{remote="aws"}`:                                              1500,
		})
	}
	return m
}

// fromPods are the options that check gcp from what its pods say, as pods serves it, without
// probing the remote from here.
func (s inSync) fromPods(pods fleet) check.Options {
	opts := s.opts
	opts.Metrics, opts.ProbeRemotes = pods.metrics, false
	return opts
}

// ipPools is Calico's IPPool resource.
var ipPools = schema.GroupVersionResource{Group: "crd.projectcalico.org", Version: "v1", Resource: "ippools"}

// createIPPool creates in gcp the IPPool name holding cidr, configured as docs/calico.md says
// for a remote's pods, with the fields of change (when not nil) instead.
func createIPPool(t *testing.T, name, cidr string, change map[string]any) {
	t.Helper()
	spec := map[string]any{"cidr": cidr, "disabled": true, "natOutgoing": false, "ipipMode": "Never", "vxlanMode": "Never", "disableBGPExport": true}
	maps.Copy(spec, change)
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "crd.projectcalico.org/v1", "kind": "IPPool",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
	pools := dynamic.NewForConfigOrDie(gcp.Config).Resource(ipPools)
	if _, err := pools.Create(context.Background(), pool, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// deleteIPPool deletes the IPPool name of gcp.
func deleteIPPool(t *testing.T, name string) {
	t.Helper()
	if err := dynamic.NewForConfigOrDie(gcp.Config).Resource(ipPools).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// resultOf is the result of check name about remote (and of component, unless "") among results.
func resultOf(t *testing.T, results []check.Result, name, remote, component string) check.Result {
	t.Helper()
	for _, r := range results {
		if r.Check == name && r.Remote == remote && (component == "" || r.Component == component) {
			return r
		}
	}
	t.Fatalf("no %s result about %q of %q:%s", name, remote, component, failures(results))
	return check.Result{}
}
