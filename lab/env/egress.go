package env

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kube-semaphore/semaphore/lab/layout"
)

// egressPackage is the lab's egress proxy (lab/cmd/egress).
const egressPackage = "github.com/kube-semaphore/semaphore/lab/cmd/egress"

// egressSocket is the egress proxy's Unix socket, in the lab directory.
// egressSocket is, in the lab directory, the socket of cluster's egress proxy.
func egressSocket(cluster string) string { return "egress-" + cluster + ".sock" }

// The API servers run on this machine's loopback, the nodes and pods in network namespaces.
// As a control plane that cannot route to its nodes does, each API server sends what it dials
// in the cluster (kubelets for logs, exec and port-forward; pods, Services and Nodes for their
// proxy subresources) through its egress selector: an HTTP CONNECT over the Unix socket of the
// cluster's egress proxy, which runs inside its provider's router, where every node's and pod's
// address routes. The control plane's and etcd's connections stay direct.

// egressSelectorConfig is kube-apiserver's EgressSelectorConfiguration: the cluster's traffic
// over HTTP CONNECT through socket.
func egressSelectorConfig(socket string) string {
	return fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %q
`, socket)
}

// writeEgressSelectorConfig writes cluster's egress selector configuration into dir and
// returns its path, for --egress-selector-config-file.
func (l *Lab) writeEgressSelectorConfig(cluster, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "egress-selector.yaml")
	return path, os.WriteFile(path, []byte(egressSelectorConfig(l.Path(egressSocket(cluster)))), 0o644)
}

// startEgress runs cluster's egress proxy inside its provider's router, listening on its
// socket, and waits for the socket. stop stops it (which removes the socket).
func (l *Lab) startEgress(cluster string) (stop func(), err error) {
	socket := l.Path(egressSocket(cluster))
	ch, err := l.startChild("egress-"+cluster, "ip", []string{"netns", "exec", layout.VPCNetns(cluster), l.bin.egress, "-socket", socket},
		nil, l.Path("logs", "egress-"+cluster+".log"), false)
	if err != nil {
		return nil, fmt.Errorf("the egress proxy: %w", err)
	}
	stop = func() { ch.stop(syscall.SIGTERM, 5*time.Second) }
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if fi, err := os.Stat(socket); err == nil && fi.Mode()&os.ModeSocket != 0 {
			l.Logf("started the egress proxy in %s on %s: %s's API server reaches its nodes and pods through it", layout.VPCNetns(cluster), socket, cluster)
			return stop, nil
		}
		select {
		case <-ch.done:
			return stop, fmt.Errorf("the egress proxy exited (%w); see %s", ch.Err, ch.Log)
		default:
		}
		if time.Now().After(deadline) {
			return stop, fmt.Errorf("the egress proxy did not listen on %s within 10s; see %s", socket, ch.Log)
		}
	}
}
