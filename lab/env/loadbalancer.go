package env

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kube-semaphore/semaphore/lab/layout"
)

// loadBalancerPackage is the lab's stand-in for a cloud's UDP network load balancer
// (lab/cmd/loadbalancer).
const loadBalancerPackage = "github.com/kube-semaphore/semaphore/lab/cmd/loadbalancer"

// gatewayHealthPort is the agents' admin port, where a load balancer asks GET
// /gateway/<remote> (the chart's default).
const gatewayHealthPort = 8080

// startLoadBalancers runs, for each cluster on a private network, its load balancer inside its
// provider's router: each WireGuard port the cluster's devices listen on (as link chose them),
// from the load balancer's address to the gateway node that is the active gateway toward that
// port's remote, as its health check finds it.
func (l *Lab) startLoadBalancers(ctx context.Context) error {
	if !l.NodesRun() {
		return nil
	}
	for _, spec := range layout.ClusterSpecs {
		if spec.Network.NAT != layout.PrivateNAT {
			continue
		}
		if err := l.startLoadBalancer(spec); err != nil {
			return fmt.Errorf("%s's load balancer: %w", spec.Name, err)
		}
	}
	return nil
}

func (l *Lab) startLoadBalancer(spec layout.ClusterSpec) error {
	args := []string{"netns", "exec", layout.VPCNetns(spec.Name), l.bin.loadBalancer,
		"-address", spec.Network.LoadBalancerAddr, "-health-port", strconv.Itoa(gatewayHealthPort)}
	var targets []string
	for _, n := range l.Record().Nodes.Nodes {
		if n.Cluster == spec.Name {
			targets = append(targets, n.InternalIP)
		}
	}
	args = append(args, "-targets", strings.Join(targets, ","))
	for _, remote := range layout.RemotesOf(spec.Name) {
		port, err := l.ListenPort(spec.Name, remote)
		if err != nil {
			return err
		}
		args = append(args, "-forward", fmt.Sprintf("%d=/gateway/%s", port, remote))
	}
	ch, err := l.startChild("loadbalancer-"+spec.Name, "ip", args, nil, l.Path("logs", "loadbalancer-"+spec.Name+".log"), false)
	if err != nil {
		return err
	}
	l.onTeardown(func() { ch.stop(syscall.SIGTERM, 5*time.Second) })
	l.Logf("started %s's load balancer on %s in %s, forwarding to its active gateways (%s)",
		spec.Name, spec.Network.LoadBalancerAddr, layout.VPCNetns(spec.Name), ch.Log)
	return nil
}
