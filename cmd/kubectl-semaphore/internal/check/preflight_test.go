package check_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/check"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/clustertest"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// preflightCase is a state of gcp and what a preflight check makes of it.
type preflightCase struct {
	name         string
	check        string
	remote       string
	fails, warns bool
	says         string
}

// expect checks gcp with opts and checks the result of c.
func (c preflightCase) expect(t *testing.T, s inSync, opts check.Options) {
	t.Helper()
	r := resultOf(t, s.run(t, opts), c.check, c.remote, "")
	if r.OK == c.fails || r.Warning != c.warns || !strings.Contains(r.Message, c.says) {
		t.Errorf("%s: %+v\nwant ok=%v warning=%v saying %q", c.name, r, !c.fails, c.warns, c.says)
	}
}

// corefileMap writes the Corefile text into ConfigMap kube-system/name of gcp, and returns a
// function that deletes it.
func corefileMap(t *testing.T, name, text string) func() {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"}, Data: map[string]string{"Corefile": text}}
	maps := gcp.Client.CoreV1().ConfigMaps("kube-system")
	if _, err := maps.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		if _, err := maps.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return func() { _ = maps.Delete(ctx, name, metav1.DeleteOptions{}) }
}

// The dns check finds the rewrite of docs/coredns.md for the remote and for global services in
// CoreDNS's Corefile, and asks the running CoreDNS pods whether they loaded it; a remote missing
// from the rule, a rule that does not rewrite the answers, or pods that did not reload fail.
func TestDNSFindsTheRewriteOfEachRemoteAndThatCoreDNSRunsIt(t *testing.T) {
	testenv.SkipIfShort(t, "API servers")
	s := linkedPair(t)
	docs, err := testbed.DocsCorefile()
	if err != nil {
		t.Fatal(err)
	}
	opts := s.fromPods(s.pods)
	defer corefileMap(t, "coredns", docs)()
	preflightCase{name: "no CoreDNS pod to ask", check: check.DNS, remote: "aws", warns: true,
		says: `maps fluentd.sys-log.svc.cluster.aws. to aws-sys-log-73736d-fluentd.semaphore.svc.cluster.local.; no running CoreDNS pod`}.expect(t, s, opts)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns-0", Namespace: "kube-system", Labels: map[string]string{"k8s-app": "kube-dns"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "coredns", Image: "coredns", Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9153}}}}},
	}
	clustertest.Create(t, gcp, pod)
	defer func() {
		_ = gcp.Client.CoreV1().Pods("kube-system").Delete(context.Background(), pod.Name, metav1.DeleteOptions{})
	}()
	ready(t, gcp, pod, "10.2.0.53")

	for _, c := range []struct {
		preflightCase
		corefile string
		pods     fleet
	}{
		{preflightCase{name: "the Corefile of the docs, loaded", check: check.DNS, remote: "aws",
			says: "CoreDNS pods coredns-0 run it"}, docs, s.pods},
		{preflightCase{name: "global services", check: check.DNS,
			says: "maps fluentd.sys-log.svc.cluster.global. to gl-sys-log-73736d-fluentd.semaphore.svc.cluster.local."}, docs, s.pods},
		{preflightCase{name: "CoreDNS not reloaded", check: check.DNS, remote: "aws", fails: true,
			says: "CoreDNS pods coredns-0 run a configuration without the rewrite plugin"}, docs,
			s.pods.with(only("coredns", func(m metricLines) { m[`coredns_plugin_enabled{name="rewrite",server="dns://:53",zone="."}`] = 0 }))},
		{preflightCase{name: "the remote missing from the rule", check: check.DNS, remote: "aws", fails: true,
			says: "no rewrite in the Corefile of kube-system/coredns maps fluentd.sys-log.svc.cluster.aws."},
			strings.ReplaceAll(docs, "(aws|gcp|merit)", "(gcp|merit)"), s.pods},
		{preflightCase{name: "a rule that does not rewrite the answers", check: check.DNS, remote: "aws", fails: true,
			says: "does not rewrite the answers back (answer auto)"},
			strings.Replace(docs, "semaphore.svc.cluster.local. answer auto", "semaphore.svc.cluster.local.", 1), s.pods},
	} {
		t.Run(c.name, func(t *testing.T) {
			corefileMap(t, "coredns", c.corefile)
			c.expect(t, s, s.fromPods(c.pods))
		})
	}

	t.Run("a Corefile elsewhere", func(t *testing.T) {
		if err := gcp.Client.CoreV1().ConfigMaps("kube-system").Delete(context.Background(), "coredns", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		defer corefileMap(t, "rke2-coredns", docs)()
		preflightCase{check: check.DNS, remote: "aws", warns: true,
			says: "(found in ConfigMap rke2-coredns, not coredns: check it is the one CoreDNS runs)"}.expect(t, s, opts)
	})
}

// Where Calico runs, each pod range of each remote lies in an IPPool set as docs/calico.md
// says; and no remote's range overlaps this cluster's pod ranges.
func TestIPPoolsAndPodRangesOfTheRemotes(t *testing.T) {
	testenv.SkipIfShort(t, "API servers")
	s := linkedPair(t)
	ctx := context.Background()
	opts := s.fromPods(s.pods)
	preflightCase{name: "no pod ranges", check: check.IPPools, remote: "aws", warns: true,
		says: "remote aws has no pod ranges"}.expect(t, s, opts)

	setEnv(t, gcp, "semaphore-policy", "SEMAPHORE_REMOTE_POD_RANGES", "aws:10.1.0.0/16")
	defer setEnv(t, gcp, "semaphore-policy", "SEMAPHORE_REMOTE_POD_RANGES", "")
	preflightCase{name: "a pool as the docs say", check: check.IPPools, remote: "aws",
		says: "10.1.0.0/16 in IPPool semaphore-aws-ipv4"}.expect(t, s, opts)
	preflightCase{name: "ranges apart", check: check.PodRanges,
		says: "the 1 pod ranges of the remotes overlap neither each other nor this cluster's"}.expect(t, s, opts)

	setEnv(t, gcp, "semaphore-policy", "SEMAPHORE_REMOTE_POD_RANGES", "aws:10.1.0.0/16,aws:10.9.0.0/16")
	preflightCase{name: "a range without a pool", check: check.IPPools, remote: "aws", fails: true,
		says: "no IPPool holds remote aws's pod ranges 10.9.0.0/16"}.expect(t, s, opts)

	createIPPool(t, "semaphore-aws-9", "10.9.0.0/16", map[string]any{"natOutgoing": true, "disabled": false})
	defer deleteIPPool(t, "semaphore-aws-9")
	preflightCase{name: "a pool with NAT, enabled", check: check.IPPools, remote: "aws", fails: true,
		says: "IPPool semaphore-aws-9 (10.9.0.0/16, holding 10.9.0.0/16) is not disabled"}.expect(t, s, opts)
	// The enabled pool is this cluster's own: the remote's range overlaps it.
	preflightCase{name: "a remote range that is this cluster's", check: check.PodRanges, fails: true,
		says: "remote aws 10.9.0.0/16 overlaps this cluster's IPPool semaphore-aws-9 10.9.0.0/16"}.expect(t, s, opts)

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gcp-node-9"}, Spec: corev1.NodeSpec{PodCIDR: "10.1.5.0/24", PodCIDRs: []string{"10.1.5.0/24"}}}
	clustertest.Create(t, gcp, node)
	defer func() { _ = gcp.Client.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}) }()
	preflightCase{name: "a node's pod CIDR in a remote's range", check: check.PodRanges, fails: true,
		says: "remote aws 10.1.0.0/16 overlaps node gcp-node-9's pod CIDR 10.1.5.0/24"}.expect(t, s, opts)
}
