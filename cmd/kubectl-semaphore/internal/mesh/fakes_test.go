package mesh_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// staticMetrics serves fixed metrics text by pod name, for pods without a kubelet behind them.
type staticMetrics map[string]string

func (s staticMetrics) Metrics(_ context.Context, pod *corev1.Pod, _ int) ([]byte, error) {
	text, ok := s[pod.Name]
	if !ok {
		return nil, errors.New("no metrics for pod " + pod.Name)
	}
	return []byte(text), nil
}

// forwarder forwards the connections to its address to a target, counting them.
type forwarder struct {
	addr  string
	conns atomic.Int64
}

func forward(t *testing.T, target string) *forwarder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	f := &forwarder{addr: ln.Addr().String()}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			f.conns.Add(1)
			go pipe(conn, target)
		}
	}()
	return f
}

// pipe copies between conn and a connection to target, both ways, until either side closes.
func pipe(conn net.Conn, target string) {
	defer func() { _ = conn.Close() }()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	go func() {
		_, _ = io.Copy(up, conn)
		_ = up.Close()
	}()
	_, _ = io.Copy(conn, up)
}
