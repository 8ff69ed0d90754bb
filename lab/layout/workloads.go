package layout

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
)

// A global service: echo in sys-log, the sample program serving HTTP and logging every request
// with its client, in every cluster behind a Service of the same name labelled as global and
// local-first. semaphore-service-mirror serves it in every cluster as the selector-less
// semaphore/gl-sys-log-73736d-echo, with the EndpointSlices of all three clusters, the local
// cluster's endpoints zone-hinted for the local Nodes' zones and the others' for none of them:
// kube-proxy then sends to the local endpoints while any is ready, and to the other clusters'
// when none is. gcp's echo-client asks for it as echo.sys-log.svc.cluster.global, which the
// Corefile of docs/coredns.md resolves to the global Service. `lab check` scales gcp's echo to
// zero and back, and measures where the client's requests go.
const (
	GlobalName           = "echo"
	GlobalReplicas int32 = 2
	GlobalPortName       = "http"
	GlobalPort     int32 = 8080
	// GlobalCluster runs the client, and is the cluster whose echo the check takes away.
	GlobalCluster    = "gcp"
	GlobalClientName = "echo-client"
	// GlobalInterval is the client's time between requests: often enough to time a failover
	// to a fifth of a second.
	GlobalInterval = 200 * time.Millisecond
)

// GlobalKey is the global service of the lab.
var GlobalKey = global.Key{Namespace: SampleNamespace, Name: GlobalName}

// GlobalDNSName is the name the Corefile of docs/coredns.md resolves to the global Service.
func GlobalDNSName() string {
	return fmt.Sprintf("%s.%s.svc.cluster.global", GlobalKey.Name, GlobalKey.Namespace)
}

// GlobalPorts are the ports of echo's Service in every cluster, and so of the global Service,
// as the status prints them.
var GlobalPorts = []string{fmt.Sprintf("%s:%d/%s", GlobalPortName, GlobalPort, corev1.ProtocolTCP)}

// The sample workloads of the Semaphore blog post: fluentd in aws collects logs, and the
// forwarder pods in gcp send it theirs, through fluentd's mirror in gcp. fluentd runs on the
// aws node whose pods' addresses are borrowed from another node's IPAM block (calico.go). And
// a global service, echo in every cluster, with a client in gcp (global.go).
const (
	SampleNamespace       = "sys-log"
	FluentdCluster        = "aws"
	FluentdName           = "fluentd"
	FluentdReplicas int32 = 2
	// FluentdPort is the port the forwarders send to.
	FluentdPort            = 8889
	ForwarderCluster       = "gcp"
	ForwarderName          = "forwarder"
	ForwarderCount   int32 = 2

	// MirrorLabel opts a Service in to mirroring; PolicyLabel names the network set of the pods
	// that carry it.
	MirrorLabel = "mirror.semaphore.uw.io/mirror-service"
	PolicyLabel = "policy.semaphore.uw.io/name"
)
