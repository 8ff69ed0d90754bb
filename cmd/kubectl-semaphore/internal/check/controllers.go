package check

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/internal/adminport"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// leaseName is the Lease each elected component's replicas hold by default (the component's
// name, SEMAPHORE_LEADER_ELECT_LEASE_NAME).
var leaseName = map[string]string{
	release.ServiceMirror: ownership.ServiceMirror,
	release.Policy:        ownership.Policy,
}

// controllers is a component as it runs: its running pods with what each says in its metrics,
// and which of them leads.
type controllers struct {
	c release.Component
	// all are the component's pods, running or not; pods the running ones.
	all  []corev1.Pod
	pods []running
	// elected says the replicas elect a leader: only the leader syncs its view of the remotes.
	elected bool
	// leader is the name of the pod holding the Lease, "" when not known.
	leader string
	// err is why the pods could not be listed.
	err error
}

// running is one running pod and its metrics, or why they could not be read.
type running struct {
	pod     *corev1.Pod
	metrics scrape
	err     error
}

// controllers reads the running pods of c and their metrics, through the API server.
func (k *checker) controllers(ctx context.Context, c release.Component) controllers {
	v := controllers{c: c, elected: elects(c)}
	v.all, v.err = c.Pods(ctx, k.client)
	for i := range v.all {
		pod := &v.all[i]
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			continue // the pods check reports it
		}
		v.pods = append(v.pods, k.scrapePod(ctx, pod, adminport.Of(pod)))
	}
	if v.elected {
		v.leader = k.leader(ctx, c)
	}
	return v
}

// scrapePod reads the metrics pod serves on port.
func (k *checker) scrapePod(ctx context.Context, pod *corev1.Pod, port int) running {
	ctx, cancel := context.WithTimeout(ctx, k.opts.Timeout)
	defer cancel()
	text, err := k.opts.Metrics(ctx, pod, port)
	if err != nil {
		return running{pod: pod, err: fmt.Errorf("reading /metrics on port %d through the API server's pod proxy: %w", port, err)}
	}
	m, err := parseScrape(text)
	return running{pod: pod, metrics: m, err: err}
}

// elects reports whether the component's replicas elect a leader: a Deployment, unless
// SEMAPHORE_LEADER_ELECT turns it off.
func elects(c release.Component) bool {
	on, err := strconv.ParseBool(env(c, "SEMAPHORE_LEADER_ELECT", "true"))
	return c.Kind == "Deployment" && (err != nil || on)
}

// leader is the holder of the component's Lease: its pod's name (POD_NAME is the identity,
// unless SEMAPHORE_LEADER_ELECT_IDENTITY says otherwise); "" when it cannot be read.
func (k *checker) leader(ctx context.Context, c release.Component) string {
	namespace := cmp.Or(c.Env["SEMAPHORE_LEADER_ELECT_NAMESPACE"], c.Namespace)
	name := cmp.Or(c.Env["SEMAPHORE_LEADER_ELECT_LEASE_NAME"], leaseName[c.Name])
	lease, err := k.client.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// metric is the full name of the component's metric name.
func (v controllers) metric(name string) string { return release.MetricName(v.c.Name, name) }

// where names a pod in messages: with its node for a DaemonSet's, marked as the leader.
func (v controllers) where(p running) string {
	leader := ""
	if v.elected {
		leader = v.leader
	}
	return v.c.DescribePod(p.pod, leader)
}

// readable are the pods whose metrics were read.
func (v controllers) readable() []running {
	var out []running
	for _, p := range v.pods {
		if p.err == nil {
			out = append(out, p)
		}
	}
	return out
}

// syncing are the pods whose view of the remotes must be current: every pod, or of elected
// replicas the leader; when the Lease cannot be read, the one that synced last (which is the
// leader, unless none ever synced).
func (v controllers) syncing(remote string) []running {
	read := v.readable()
	if !v.elected {
		return read
	}
	var latest running
	newest := -1.0
	for _, p := range read {
		if p.pod.Name == v.leader {
			return []running{p}
		}
		if ts, _ := p.metrics.Value(v.metric("remote_last_sync_timestamp_seconds"), "remote", remote); ts > newest {
			latest, newest = p, ts
		}
	}
	if newest < 0 {
		return nil
	}
	return []running{latest}
}

// probeInterval is how often the component probes its remotes (SEMAPHORE_REMOTE_PROBE_INTERVAL).
func (v controllers) probeInterval() time.Duration {
	d, err := time.ParseDuration(env(v.c, "SEMAPHORE_REMOTE_PROBE_INTERVAL", "10s"))
	if err != nil || d <= 0 {
		return 10 * time.Second
	}
	return d
}
