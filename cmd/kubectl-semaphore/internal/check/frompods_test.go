package check_test

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/check"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// podCase is what the pods say (change) and what one check of one component makes of it.
type podCase struct {
	name             string
	change           func(component string, m metricLines)
	check, component string
	fails, warns     bool
	says, alsoSays   string
}

// run checks gcp with the pods saying what c changes, and checks c's result.
func (c podCase) run(t *testing.T, s inSync) {
	t.Helper()
	results := s.run(t, s.fromPods(s.pods.with(c.change)))
	r := resultOf(t, results, c.check, "aws", c.component)
	if r.OK == c.fails || r.Warning != c.warns || !strings.Contains(r.Message, c.says) || !strings.Contains(r.Message, c.alsoSays) || (!r.OK || r.Warning) != (r.Runbook != "") {
		t.Errorf("%s: %+v\nwant ok=%v warning=%v, a runbook when not fine, and saying %q and %q", c.name, r, !c.fails, c.warns, c.says, c.alsoSays)
	}
}

// only applies change to the metrics of component.
func only(component string, change func(m metricLines)) func(string, metricLines) {
	return func(c string, m metricLines) {
		if c == component {
			change(m)
		}
	}
}

// Whether a remote answers the components, who they are there and whether it forbids them
// anything comes from their pods' own metrics, each failure naming the pods.
func TestReachableIdentityAndAccessComeFromThePods(t *testing.T) {
	testenv.SkipIfShort(t, "API servers")
	s := linkedPair(t)
	results := s.run(t, s.fromPods(s.pods))
	if check.Failed(results) {
		t.Fatalf("pods of working components fail:%s", failures(results))
	}
	for _, c := range []string{"service-mirror", "policy", "wireguard"} {
		if r := resultOf(t, results, check.Identity, "aws", c); !strings.Contains(r.Message, consumer) {
			t.Errorf("%+v: want the consumer's ServiceAccount named", r)
		}
	}
	mirror, policy, wg := "semaphore_service_mirror", "semaphore_policy", "semaphore_wg"
	for _, c := range []podCase{
		{name: "a remote that does not answer one component", check: check.Reachable, component: "policy", fails: true,
			change: only("policy", func(m metricLines) { m[policy+`_remote_up{remote="aws"}`] = 0 }),
			says:   "does not answer pod semaphore-policy-0", alsoSays: "its last probe of /readyz failed"},
		{name: "pods that do not read the remote", check: check.Reachable, component: "policy", fails: true,
			change: only("policy", func(m metricLines) { m.drop(policy + "_remote_up") }),
			says:   `export no semaphore_policy_remote_up{remote="aws"}`},
		{name: "a view of the remote that is not current", check: check.Reachable, component: "service-mirror", fails: true,
			change: only("service-mirror", func(m metricLines) {
				m[mirror+`_remote_last_sync_timestamp_seconds{remote="aws"}`] = float64(s.pods.now.Add(-10 * time.Minute).Unix())
			}),
			says: "pod semaphore-service-mirror-0 last synced its view of it 10m0s ago"},
		{name: "a view of the remote never synced", check: check.Reachable, component: "wireguard", fails: true,
			change: only("wireguard", func(m metricLines) { m[wg+`_remote_last_sync_timestamp_seconds{remote="aws"}`] = 0 }),
			says:   "pod semaphore-wireguard-0 (node gcp-node-1) has never synced its view of it"},
		{name: "a revoked token", check: check.Identity, component: "service-mirror", fails: true,
			change: func(c string, m metricLines) {
				p := map[string]string{"service-mirror": mirror, "policy": policy, "wireguard": wg}[c]
				m[p+`_remote_up{remote="aws"}`] = 0
				m.drop(p + "_remote_identity_info")
				m[p+`_remote_identity_info{remote="merit",user="someone"}`] = 1
				m[p+`_client_requests_total{code="401",host="`+s.pods.host+`",method="GET"}`] = 7
			},
			says: "remote aws rejects the credentials of pod semaphore-service-mirror-0 (7 requests answered 401)", alsoSays: "run kubectl semaphore link again"},
		{name: "another identity", check: check.Identity, component: "wireguard", fails: true,
			change: only("wireguard", func(m metricLines) {
				m.drop(wg + "_remote_identity_info")
				m[wg+`_remote_identity_info{remote="aws",user="system:serviceaccount:default:someone-else"}`] = 1
			}),
			says: "pod semaphore-wireguard-0 (node gcp-node-1) is system:serviceaccount:default:someone-else", alsoSays: "want " + consumer},
		{name: "pods of a version without the identity", check: check.Identity, component: "policy", warns: true,
			change: only("policy", func(m metricLines) { m.drop(policy + "_remote_identity_info") }),
			says:   "export no semaphore_policy_remote_identity_info"},
		{name: "forbidden requests", check: check.Access, component: "wireguard", fails: true,
			change: only("wireguard", func(m metricLines) {
				m[wg+`_client_requests_total{code="403",host="`+s.pods.host+`",method="GET"}`] = 3
			}),
			says: "forbade wireguard requests (403 Forbidden", alsoSays: "pod semaphore-wireguard-0 (node gcp-node-1): GET 3"},
		{name: "no request to the remote's address", check: check.Access, component: "policy", warns: true,
			change: only("policy", func(m metricLines) {
				m.drop(policy + "_client_requests_total")
				m[policy+`_client_requests_total{code="200",host="10.9.9.9:6443",method="GET"}`] = 5
			}),
			says: "counted no request to " + s.pods.host},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, s) })
	}
}

// Of replicas that elect a leader, only the leader syncs: its view is the one that must be
// current, and it is named as such; a standby's is never synced.
func TestTheLeadersViewOfTheRemoteMustBeCurrent(t *testing.T) {
	testenv.SkipIfShort(t, "API servers")
	s := linkedPair(t)
	ctx := context.Background()
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "semaphore-service-mirror", Namespace: "semaphore"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("semaphore-service-mirror-0")},
	}
	if _, err := gcp.Client.CoordinationV1().Leases("semaphore").Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = gcp.Client.CoordinationV1().Leases("semaphore").Delete(ctx, lease.Name, metav1.DeleteOptions{})
	}()
	podCase{check: check.Reachable, component: "service-mirror",
		change: func(string, metricLines) {},
		says:   "the view of it of pod semaphore-service-mirror-0 (leader) is at most 5s old"}.run(t, s)
	podCase{check: check.Reachable, component: "service-mirror", fails: true,
		change: only("service-mirror", func(m metricLines) {
			m[`semaphore_service_mirror_remote_last_sync_timestamp_seconds{remote="aws"}`] = 0
		}),
		says: "pod semaphore-service-mirror-0 (leader) has never synced its view of it"}.run(t, s)
}
