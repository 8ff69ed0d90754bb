package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/kube-semaphore/semaphore/internal/testenv"
)

// dnsClusters are the clusters whose CoreDNS the lab runs: gcp, where the blog's forwarders
// look fluentd up.
var dnsClusters = []string{"gcp"}

// startCoreDNS runs CoreDNS for each of dnsClusters with the Corefile of docs/coredns.md,
// changed only as the test harness changes it for a CoreDNS outside a pod (a kubeconfig for the
// kubernetes plugin, free ports on 127.0.0.1): the lab checks what the docs tell users to
// deploy.
func (l *lab) startCoreDNS(ctx context.Context) error {
	var started []*child
	// CoreDNS keeps no state, and its lameduck period (5 s in the docs' Corefile) only matters
	// behind a Service: kill it.
	l.onTeardown(func() {
		stopAll(started, syscall.SIGKILL, 5*time.Second)
		l.logf("stopped CoreDNS")
	})
	for _, name := range dnsClusters {
		c, err := l.startOneCoreDNS(ctx, name)
		if c != nil {
			started = append(started, c)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

func (l *lab) startOneCoreDNS(ctx context.Context, cluster string) (*child, error) {
	corefile, err := testenv.CorefileFromDocsFile(l.clusters[cluster].DirectKubeconfig, semaphoreNamespace)
	if err != nil {
		return nil, fmt.Errorf("docs/coredns.md: %w", err)
	}
	dir := l.path("coredns", cluster)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	conf := l.path("coredns", cluster, "Corefile")
	if err := os.WriteFile(conf, []byte(corefile), 0o644); err != nil {
		return nil, err
	}
	port, err := freeDNSPort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	log := l.path("logs", "coredns-"+cluster+".log")
	c, err := l.startChild("coredns-"+cluster, l.bin.coredns, []string{"-conf", conf, "-dns.port", strconv.Itoa(port)}, nil, log, false)
	if err != nil {
		return nil, err
	}
	// CoreDNS opens its UDP and TCP listeners together, once every plugin has started (the
	// kubernetes plugin waits up to 5 s for its caches): an accepted TCP connection means it
	// answers on both.
	deadline := time.Now().Add(time.Minute)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			break
		}
		select {
		case <-c.done:
			return c, fmt.Errorf("coredns exited at start (%w); see %s", c.err, log)
		case <-ctx.Done():
			return c, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return c, fmt.Errorf("coredns does not listen on %s; see %s", addr, log)
		}
	}
	l.mu.Lock()
	l.state.DNS = append(l.state.DNS, DNSState{Cluster: cluster, Addr: addr, Corefile: conf, Log: log})
	l.mu.Unlock()
	l.logf("started CoreDNS for %s on %s (Corefile from docs/coredns.md)", cluster, addr)
	return c, nil
}

// freeDNSPort returns a port free for both UDP and TCP on 127.0.0.1 at the time of the call.
func freeDNSPort() (int, error) {
	var err error
	for range 20 {
		var port int
		if port, err = freePort(); err != nil {
			return 0, err
		}
		var ul net.PacketConn
		ul, err = net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			ul.Close()
			return port, nil
		}
	}
	return 0, err
}

// dnsNames are the names each CoreDNS of the lab must resolve, by cluster.
func dnsNames() map[string][]expectedMirror {
	out := map[string][]expectedMirror{}
	for _, m := range expectedMirrors() {
		for _, c := range dnsClusters {
			if c == m.Cluster {
				out[c] = append(out[c], m)
			}
		}
	}
	return out
}
