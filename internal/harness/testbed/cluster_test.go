package testbed_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// TestClustersAreIndependentAndCuttable starts two API servers, checks that the proxied
// kubeconfig reaches the right one, that the audit log records writes, and that cutting the
// proxy makes the cluster unreachable until it is restored.
func TestClustersAreIndependentAndCuttable(t *testing.T) {
	cs := testenv.Start(t, testenv.Options{Audit: true}, "one", "two")
	ctx := context.Background()
	if err := cs[0].EnsureNamespace(ctx, "only-in-one"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[1].Client.CoreV1().Namespaces().Get(ctx, "only-in-one", metav1.GetOptions{}); err == nil {
		t.Fatal("namespace created in cluster one is visible in cluster two")
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", cs[0].Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 2 * time.Second
	cfg.UserAgent = "proxied-client"
	proxied := kubernetes.NewForConfigOrDie(cfg)
	if _, err := proxied.CoreV1().Namespaces().Get(ctx, "only-in-one", metav1.GetOptions{}); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	if _, err := proxied.CoreV1().ConfigMaps("only-in-one").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	writes, err := cs[0].Writes("proxied-client")
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 1 || writes[0].Verb != "create" || writes[0].ObjectRef.Resource != "configmaps" {
		t.Fatalf("audit log: want one configmap create by proxied-client, got %+v", writes)
	}

	if err := cs[0].SetReachable(false); err != nil {
		t.Fatal(err)
	}
	if _, err := proxied.CoreV1().Namespaces().Get(ctx, "only-in-one", metav1.GetOptions{}); err == nil {
		t.Fatal("cut proxy still answers")
	}
	if err := cs[0].SetReachable(true); err != nil {
		t.Fatal(err)
	}
	if _, err := proxied.CoreV1().Namespaces().Get(ctx, "only-in-one", metav1.GetOptions{}); err != nil {
		t.Fatalf("restored proxy: %v", err)
	}
}
