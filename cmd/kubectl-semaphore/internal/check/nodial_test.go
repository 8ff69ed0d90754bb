package check_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/check"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// listener counts the connections made to an address.
type listener struct {
	net.Listener
	accepted atomic.Int64
}

func listen(t *testing.T) *listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{Listener: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			_ = conn.Close()
		}
	}()
	return l
}

// pointRemoteAt sets the server of remote's kubeconfig in every Secret of gcp's components to
// server, and returns a function that puts the kubeconfigs back.
func pointRemoteAt(t *testing.T, remote, server string) func() {
	t.Helper()
	ctx := context.Background()
	secrets := gcp.Client.CoreV1().Secrets("semaphore")
	list, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: "semaphore.uw.io/remote=" + remote})
	if err != nil || len(list.Items) != 3 {
		t.Fatalf("the kubeconfig Secrets of remote %s: %v, %d of them, want one per component", remote, err, len(list.Items))
	}
	var restore []func()
	for _, s := range list.Items {
		before := s.Data["kubeconfig"]
		kc, err := clientcmd.Load(before)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range kc.Clusters {
			c.Server = server
		}
		if s.Data["kubeconfig"], err = clientcmd.Write(*kc); err != nil {
			t.Fatal(err)
		}
		if _, err := secrets.Update(ctx, &s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		restore = append(restore, func() {
			latest, err := secrets.Get(ctx, s.Name, metav1.GetOptions{})
			if err == nil {
				latest.Data["kubeconfig"] = before
				_, err = secrets.Update(ctx, latest, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Errorf("putting back Secret %s: %v", s.Name, err)
			}
		})
	}
	return func() {
		for _, r := range restore {
			r()
		}
	}
}

// By default nothing of the check connects to an address read from the cluster's objects: with
// the remote's address in every Secret pointed at a listener, the check runs and tells whether
// the remote answers the pods, and the listener sees no connection; with --probe-remotes it
// does (so the listener would have seen one).
func TestTheDefaultCheckConnectsToNoRemoteAddress(t *testing.T) {
	testenv.SkipIfShort(t, "API servers")
	s := linkedPair(t)
	l := listen(t)
	defer pointRemoteAt(t, "aws", "https://"+l.Addr().String())()

	results := s.run(t, s.fromPods(s.pods))
	if n := l.accepted.Load(); n != 0 {
		t.Fatalf("the check made %d connections to the remote's address in the Secrets, want none", n)
	}
	for _, c := range []string{"service-mirror", "policy", "wireguard"} {
		if r := resultOf(t, results, check.Reachable, "aws", c); !r.OK {
			t.Errorf("%+v: want the pods' view (remote_up) to pass", r)
		}
	}
	for _, r := range results {
		if r.Check == check.ProbeReachable {
			t.Errorf("%+v: no probe from here without ProbeRemotes", r)
		}
	}

	probing := s.fromPods(s.pods)
	probing.ProbeRemotes = true
	results = s.run(t, probing)
	if n := l.accepted.Load(); n == 0 {
		t.Errorf("with ProbeRemotes, no connection to the remote's address in the Secrets: the listener would not have seen one either")
	}
	if r := resultOf(t, results, check.ProbeReachable, "aws", "policy"); r.OK {
		t.Errorf("%+v: the listener speaks no TLS, want the probe from here to fail", r)
	}
}
