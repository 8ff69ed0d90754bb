package mesh

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/internal/promtext"
)

var now = time.Unix(1795982460, 0).UTC()

// pod is a running pod on node whose metrics say of aws: up, last synced at synced (never when
// zero), and the user when up; unread, its metrics could not be read.
type pod struct {
	name, node string
	up         int
	synced     time.Time
	unread     bool
}

func (p pod) scraped(t *testing.T, prefix string) scraped {
	t.Helper()
	s := scraped{pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name}, Spec: corev1.PodSpec{NodeName: p.node}}}
	if p.unread {
		s.err = errors.New("reading /metrics on port 8080 through the API server's pod proxy: the server is currently unable to handle the request")
		return s
	}
	ts := int64(0)
	if !p.synced.IsZero() {
		ts = p.synced.Unix()
	}
	text := fmt.Sprintf("%s_remote_up{remote=\"aws\"} %d\n%s_remote_last_sync_timestamp_seconds{remote=\"aws\"} %d\n", prefix, p.up, prefix, ts)
	if p.up == 1 {
		text += prefix + `_remote_identity_info{remote="aws",user="system:serviceaccount:semaphore-remote:semaphore-remote-gcp"} 1` + "\n"
	}
	var err error
	if s.metrics, err = promtext.Parse(strings.NewReader(text)); err != nil {
		t.Fatal(err)
	}
	return s
}

// viewOf is the view of component (kind Deployment or DaemonSet) made of pods, leader the
// Lease's holder.
func viewOf(t *testing.T, component, kind, leader string, pods ...pod) view {
	t.Helper()
	c := release.Component{Name: component, Kind: kind, Namespace: "semaphore", Workload: "semaphore-" + component, Env: map[string]string{"SEMAPHORE_REMOTES": "aws"}}
	v := view{c: c, elected: elects(c), leader: leader}
	for _, p := range pods {
		v.running = append(v.running, p.scraped(t, release.MetricPrefix[component]))
	}
	return v
}

// Whether a remote answers a component is what the pods whose view counts say: the leader's of
// elected replicas, else the one that synced last; every agent's of wireguard. Pods whose
// metrics cannot be read, pods that do not read the remote and views not current say why.
func TestAccessIsWhatThePodsWhoseViewCountsSay(t *testing.T) {
	fresh, stale := now.Add(-5*time.Second), now.Add(-10*time.Minute)
	for _, c := range []struct {
		name      string
		view      view
		reachable bool
		says      string
	}{
		{"the leader answered, the standby never synced", viewOf(t, release.ServiceMirror, "Deployment", "mirror-b",
			pod{name: "mirror-a", up: 0}, pod{name: "mirror-b", up: 1, synced: fresh}), true, ""},
		{"the leader not answered", viewOf(t, release.ServiceMirror, "Deployment", "mirror-a",
			pod{name: "mirror-a", up: 0, synced: fresh}, pod{name: "mirror-b", up: 1, synced: fresh}), false,
			"pod mirror-a (leader) says semaphore_service_mirror_remote_up is 0: the remote did not answer its last probe of /readyz"},
		{"no Lease: the pod that synced last", viewOf(t, release.Policy, "Deployment", "",
			pod{name: "policy-a", up: 1}, pod{name: "policy-b", unread: true}, pod{name: "policy-c", up: 1, synced: fresh}), true, ""},
		{"no Lease, no pod read: one says why", viewOf(t, release.Policy, "Deployment", "",
			pod{name: "policy-a", unread: true}), false,
			"pod policy-a: reading /metrics on port 8080 through the API server's pod proxy: the server is currently unable"},
		{"the leader's view not current", viewOf(t, release.Policy, "Deployment", "policy-a",
			pod{name: "policy-a", up: 1, synced: stale}), false,
			"pod policy-a (leader) last synced its view of the remote 10m0s ago (more than 30s): its caches of it are not current"},
		{"every agent answered", viewOf(t, release.WireGuard, "DaemonSet", "",
			pod{name: "wg-1", node: "gcp-1", up: 1, synced: fresh}, pod{name: "wg-2", node: "gcp-2", up: 1, synced: fresh}), true, ""},
		{"one agent not answered, one not read", viewOf(t, release.WireGuard, "DaemonSet", "",
			pod{name: "wg-1", node: "gcp-1", up: 1, synced: fresh}, pod{name: "wg-2", node: "gcp-2", up: 0, synced: fresh}, pod{name: "wg-3", node: "gcp-3", unread: true}), false,
			"pod wg-2 (node gcp-2) says semaphore_wg_remote_up is 0: the remote did not answer its last probe of /readyz; pod wg-3 (node gcp-3): reading /metrics"},
		{"an agent that never synced", viewOf(t, release.WireGuard, "DaemonSet", "",
			pod{name: "wg-1", node: "gcp-1", up: 1}), false, "pod wg-1 (node gcp-1) has never synced its view of the remote"},
		{"no running pod", viewOf(t, release.WireGuard, "DaemonSet", ""), false,
			"DaemonSet semaphore/semaphore-wireguard has no running pod to say whether the remote answers it"},
	} {
		a := c.view.access("aws", now)
		if a.Reachable != c.reachable || !strings.Contains(a.Error, c.says) || (a.Error == "") != c.reachable {
			t.Errorf("%s: %+v, want reachable %v, saying %q", c.name, a, c.reachable, c.says)
		}
		if c.reachable && (a.User != "system:serviceaccount:semaphore-remote:semaphore-remote-gcp" || !a.LastSync.Equal(fresh)) {
			t.Errorf("%s: user %q, last sync %v: want the consumer's ServiceAccount, synced 5s ago", c.name, a.User, a.LastSync)
		}
	}
}

// A pod that exports no remote_up of the remote does not read it; a listing that failed says
// so; SEMAPHORE_LEADER_ELECT=false makes every replica's view count.
func TestAccessSaysWhyNoPodTells(t *testing.T) {
	v := viewOf(t, release.Policy, "Deployment", "", pod{name: "policy-a", up: 1, synced: now})
	if a := v.access("merit", now); a.Reachable || !strings.Contains(a.Error, `pod policy-a exports no semaphore_policy_remote_up{remote="merit"}: it does not read the remote`) {
		t.Errorf("a remote the pod does not read: %+v", a)
	}
	v.err = errors.New("pods is forbidden")
	if a := v.access("aws", now); a.Reachable || a.Error != "listing the pods of Deployment semaphore/semaphore-policy: pods is forbidden" {
		t.Errorf("pods not listed: %+v", a)
	}
	off := release.Component{Kind: "Deployment", Env: map[string]string{"SEMAPHORE_LEADER_ELECT": "false"}}
	if elects(off) || !elects(release.Component{Kind: "Deployment"}) || elects(release.Component{Kind: "DaemonSet"}) {
		t.Error("elects: want Deployments alone, unless SEMAPHORE_LEADER_ELECT is false")
	}
}
