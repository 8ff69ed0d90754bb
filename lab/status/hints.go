package status

import (
	"fmt"
	"io"
	"slices"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// hints are the commands that show the lab at work, and change it.
type hints struct{ printOnly }

func (hints) print(w io.Writer, rec *layout.Record) {
	section(w, "Poke at it")
	kubectl := func(cluster string) string {
		return fmt.Sprintf("kubectl --kubeconfig %s --context %s", rec.Kubeconfig, cluster)
	}
	fmt.Fprintf(w, "  %s get pods -A -o wide\n", kubectl("gcp"))
	fmt.Fprintf(w, "  %s get svc,endpointslices -n %s\n", kubectl("gcp"), layout.SemaphoreNamespace)
	fmt.Fprintf(w, "  %s get svc,endpointslices -n %s\n", kubectl(layout.FluentdCluster), layout.SampleNamespace)
	fmt.Fprintf(w, "  %s get globalnetworksets.projectcalico.org -o yaml\n", kubectl(layout.RemotesOf(layout.ForwarderCluster)[0]))
	fmt.Fprintf(w, "  # stop mirroring fluentd, and watch its mirrors go (and the forwarders' requests fail):\n")
	fmt.Fprintf(w, "  %s -n %s label svc %s %s-\n", kubectl(layout.FluentdCluster), layout.SampleNamespace, layout.FluentdName, layout.MirrorLabel)
	fmt.Fprintf(w, "  # scale the forwarders down to one, and watch the network sets shrink:\n")
	fmt.Fprintf(w, "  %s -n %s scale deployment %s --replicas 1\n", kubectl(layout.ForwarderCluster), layout.SampleNamespace, layout.ForwarderName)
	if i := slices.IndexFunc(rec.Pods, func(p layout.Pod) bool { return p.App == layout.FluentdName }); i >= 0 {
		p := rec.Pods[i]
		fmt.Fprintf(w, "  # what fluentd logs (the API server reaches the kubelet through the egress proxy), or the kubelet's file itself:\n")
		fmt.Fprintf(w, "  %s -n %s logs -f %s\n", kubectl(p.Cluster), p.Namespace, p.Name)
		fmt.Fprintf(w, "  tail -f %s\n", p.Log)
	}
	if rec.Nodes != nil && len(rec.Nodes.Nodes) > 0 {
		n := rec.Nodes.Nodes[0]
		fmt.Fprintf(w, "  # a node's routes to the other clusters' pods, through its WireGuard devices, and kube-proxy's rules:\n")
		fmt.Fprintf(w, "  ip -n %s route; ip -n %s -s link show %s; ip netns exec %s iptables -t nat -S KUBE-SERVICES\n",
			n.Netns, n.Netns, peers.DeviceName(layout.RemotesOf(n.Cluster)[0]), n.Netns)
	}
}
