package layout

const (
	// NodesPerCluster is how many nodes every cluster has: two, so that every remote is more
	// than one peer.
	NodesPerCluster = 2
	// NetnsPrefix starts the name of every network namespace of the lab, in `ip netns list`.
	// The names are the same for every lab directory: one lab with nodes per machine.
	NetnsPrefix = "semaphore-lab-"
)

// Nodes is the lab's nodes, or why it runs without them.
type Nodes struct {
	// Skipped says why there are no nodes (and so no pods).
	Skipped string `json:"skipped,omitempty"`
	Nodes   []Node `json:"nodes,omitempty"`
}

// Node is one node: a Node in its cluster, and a network namespace on this machine.
type Node struct {
	Name    string `json:"name"`
	Cluster string `json:"cluster"`
	Netns   string `json:"netns"`
	// InternalIP is the node's address on its provider's private network.
	InternalIP string `json:"internalIP"`
	// ExternalIP is the node's public address, which its provider's 1:1 NAT translates to
	// InternalIP; empty behind a source NAT (no way in).
	ExternalIP string `json:"externalIP,omitempty"`
	// PodCIDR is the node's Node's pod CIDR, which host-local hands addresses out from; none
	// in CalicoCluster, where calico-ipam hands them out (calico.go).
	PodCIDR string `json:"podCIDR"`
	// Dir holds the node's state: containerd's, kubelet's, the pods' logs (lab/node).
	Dir string `json:"dir"`
	// Zone is the node's topology.kubernetes.io/zone: each node of a cluster in a zone of its
	// own, which kube-proxy and the global services' local-first hints go by.
	Zone string `json:"zone"`
}
