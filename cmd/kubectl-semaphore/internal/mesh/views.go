package mesh

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/agents"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/internal/adminport"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/promtext"
)

// view is a component as its pods run it: its pods, what the running ones say in their metrics,
// and which of them leads.
type view struct {
	c release.Component
	// pods are the component's pods, running or not; running are the running ones.
	pods    []corev1.Pod
	running []scraped
	// elected says the replicas elect a leader, which alone syncs its view of the remotes;
	// leader is the name of the pod holding the Lease, "" when not known.
	elected bool
	leader  string
	// err is why the pods could not be listed.
	err error
}

// scraped is a running pod and what its /metrics says, or why it could not be read.
type scraped struct {
	pod     *corev1.Pod
	metrics promtext.Metrics
	err     error
}

// concurrentReads bounds the reads of pods' metrics at once: one per node of a large cluster
// would be a burst on the API server.
const concurrentReads = 8

// readViews reads the components whose metrics Collect needs: each one's, to tell whether the
// remotes answer it, unless the remotes are probed; wireguard's for its peers.
func readViews(ctx context.Context, s Sources, components map[string]release.Component) map[string]view {
	source := s.Metrics
	if source == nil {
		source = agents.PodProxy{Client: s.Client}
	}
	timeout := cmp.Or(s.Timeout, 5*time.Second)
	out := map[string]view{}
	for name, c := range components {
		if s.ProbeRemotes && name != release.WireGuard {
			continue
		}
		v := view{c: c, elected: elects(c)}
		v.pods, v.err = c.Pods(ctx, s.Client)
		v.running = scrape(ctx, source, v.pods, timeout)
		if v.elected {
			v.leader = leader(ctx, s.Client, c)
		}
		out[name] = v
	}
	return out
}

// scrape reads the metrics of the running pods, a few at a time, each read within timeout.
func scrape(ctx context.Context, source agents.MetricsSource, pods []corev1.Pod, timeout time.Duration) []scraped {
	var out []scraped
	for i := range pods {
		if pods[i].Status.Phase == corev1.PodRunning {
			out = append(out, scraped{pod: &pods[i]})
		}
	}
	slots := make(chan struct{}, concurrentReads)
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			out[i].metrics, out[i].err = readMetrics(ctx, source, out[i].pod, timeout)
		})
	}
	wg.Wait()
	return out
}

func readMetrics(ctx context.Context, source agents.MetricsSource, pod *corev1.Pod, timeout time.Duration) (promtext.Metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	port := adminport.Of(pod)
	text, err := source.Metrics(ctx, pod, port)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics on port %d through the API server's pod proxy: %w", port, err)
	}
	return promtext.Parse(bytes.NewReader(text))
}

// elects reports whether the component's replicas elect a leader: a Deployment's do, unless
// SEMAPHORE_LEADER_ELECT turns it off.
func elects(c release.Component) bool {
	if on, err := strconv.ParseBool(c.Env["SEMAPHORE_LEADER_ELECT"]); err == nil && !on {
		return false
	}
	return c.Kind == "Deployment"
}

// defaultLease is the Lease an elected component's replicas hold unless
// SEMAPHORE_LEADER_ELECT_LEASE_NAME names another.
var defaultLease = map[string]string{
	release.ServiceMirror: ownership.ServiceMirror,
	release.Policy:        ownership.Policy,
}

// leader is the holder of the component's Lease, in SEMAPHORE_LEADER_ELECT_NAMESPACE or the
// component's own: the name of its pod, which the chart makes each replica's identity. It is ""
// when the Lease cannot be read.
func leader(ctx context.Context, client kubernetes.Interface, c release.Component) string {
	namespace := cmp.Or(c.Env["SEMAPHORE_LEADER_ELECT_NAMESPACE"], c.Namespace)
	name := cmp.Or(c.Env["SEMAPHORE_LEADER_ELECT_LEASE_NAME"], defaultLease[c.Name])
	lease, err := client.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}
