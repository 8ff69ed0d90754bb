package app_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
)

// Real CoreDNS, configured with the Corefile from docs/coredns.md and
// pointed at the local API server, resolves <name>.<namespace>.svc.cluster.<remote> to the
// ClusterIP of the mirror the controller created.
func TestCoreDNSResolvesMirror(t *testing.T) {
	cfg := newConfig(t, "aws")
	ns := fixture.Namespace(t, "sys-log")
	remoteService(t, aws, ns, "fluentd", nil)
	remoteSlice(t, aws, ns, "fluentd", "fluentd-abcde", discoveryv1.AddressTypeIPv4, endpoint("198.18.5.1"))
	start(t, cfg)

	src := mirror.Source{Cluster: "aws", Namespace: ns, Name: "fluentd"}
	var clusterIP string
	eventually(t, 30*time.Second, "mirror", func() error {
		svc, _, err := mirrorOf(cfg, src)
		if err == nil {
			clusterIP = svc.Spec.ClusterIP
		}
		return err
	})

	addr := testenv.StartCoreDNS(t, testenv.CorefileFromDocs(t, local.DirectKubeconfig, cfg.Namespace))
	expectResolves(t, addr, fmt.Sprintf("fluentd.%s.svc.cluster.aws", ns), clusterIP)
}

// expectResolves waits until the CoreDNS at addr resolves name to ip alone.
func expectResolves(t *testing.T, addr, name, ip string) {
	t.Helper()
	eventually(t, 30*time.Second, "resolving "+name, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		got, err := testbed.LookupHost(ctx, addr, name)
		if err != nil {
			return err
		}
		if !slices.Equal(got, []string{ip}) {
			return fmt.Errorf("%s resolves to %v, want the ClusterIP %s", name, got, ip)
		}
		return nil
	})
}

// Real CoreDNS with the Corefile of docs/coredns.md resolves
// <name>.<namespace>.svc.cluster.global to the ClusterIP of the global Service the controller
// made.
func TestCoreDNSResolvesGlobalService(t *testing.T) {
	cfg := newGlobalConfig(t, "aws")
	ns := fixture.Namespace(t, "sys-log")
	globalService(t, local, ns, "fluentd", nil, "198.18.1.1")
	globalService(t, aws, ns, "fluentd", nil, "198.18.2.1")
	start(t, cfg)
	svc, _ := expectGlobal(t, cfg, global.Key{Namespace: ns, Name: "fluentd"}, map[string][]string{"local": {"198.18.1.1"}, "aws": {"198.18.2.1"}})

	addr := testenv.StartCoreDNS(t, testenv.CorefileFromDocs(t, local.DirectKubeconfig, cfg.Namespace))
	expectResolves(t, addr, fmt.Sprintf("fluentd.%s.svc.cluster.global", ns), svc.Spec.ClusterIP)
}
