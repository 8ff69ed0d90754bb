package remote

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

const identityMetric = "semaphore_test_remote_identity_info"

// identities are the users of the identity series of remote, by user.
func identities(t *testing.T, reg *prometheus.Registry, remote string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, user := range []string{"system:serviceaccount:semaphore-remote:semaphore-remote-gcp", "system:serviceaccount:semaphore-remote:semaphore-remote-gcp-2"} {
		if v, n := testenv.MetricSeries(t, reg, identityMetric, map[string]string{"remote": remote, "user": user}); n > 0 {
			out[user] = v
		}
	}
	return out
}

// answering is a whoAmI that counts its calls and answers user.
type answering struct {
	calls atomic.Int64
	user  atomic.Pointer[string]
	err   error
}

func (a *answering) whoAmI(context.Context) (string, error) {
	a.calls.Add(1)
	return *a.user.Load(), a.err
}

// The identity is asked once when the remote first answers, not on every probe, and again
// after a failure; the new answer replaces the old one, and a failure keeps it.
func TestHealthExportsWhoTheComponentIsAtEachRemote(t *testing.T) {
	const first, second = "system:serviceaccount:semaphore-remote:semaphore-remote-gcp", "system:serviceaccount:semaphore-remote:semaphore-remote-gcp-2"
	h, reg := newHealth(t, time.Hour)
	p, who := &switchable{}, &answering{}
	who.user.Store(ptr.To(first))
	p.set(errors.New("connection refused"))
	h.add("aws", p.probe, who.whoAmI)

	type state struct {
		Calls int64
		Users map[string]float64
	}
	steps := []struct {
		name   string
		before func()
		want   state
	}{
		{"down", func() {}, state{0, map[string]float64{}}},
		{"first answer", func() { p.set(nil) }, state{1, map[string]float64{first: 1}}},
		{"answering again", func() {}, state{1, map[string]float64{first: 1}}},
		{"down again", func() { p.set(errors.New("i/o timeout")) }, state{1, map[string]float64{first: 1}}},
		{"back with another token", func() { p.set(nil); who.user.Store(ptr.To(second)) }, state{2, map[string]float64{second: 1}}},
	}
	for _, s := range steps {
		s.before()
		h.probeAll(t.Context())
		if diff := cmp.Diff(s.want, state{who.calls.Load(), identities(t, reg, "aws")}); diff != "" {
			t.Errorf("%s: mismatch (-want +got):\n%s", s.name, diff)
		}
	}
}

// A remote that rejects the credentials (401) no longer knows the component as the user
// exported: the series goes, and the identity is asked again once the remote accepts them.
func TestHealthDropsTheIdentityARemoteRejects(t *testing.T) {
	const user = "system:serviceaccount:semaphore-remote:semaphore-remote-gcp"
	h, reg := newHealth(t, time.Hour)
	p, who := &switchable{}, &answering{}
	who.user.Store(ptr.To(user))
	h.add("aws", p.probe, who.whoAmI)
	h.probeAll(t.Context())
	p.set(apierrors.NewUnauthorized("token revoked"))
	h.probeAll(t.Context())
	if got := identities(t, reg, "aws"); len(got) != 0 {
		t.Errorf("after a 401, identity series %v, want none", got)
	}
	p.set(nil)
	h.probeAll(t.Context())
	if diff := cmp.Diff(map[string]float64{user: 1}, identities(t, reg, "aws")); diff != "" || who.calls.Load() != 2 {
		t.Errorf("accepted again: asked %d times, want 2; series mismatch (-want +got):\n%s", who.calls.Load(), diff)
	}
}

// A remote that cannot say who the component is (no SelfSubjectReview API) exports no series,
// and is not asked on every probe.
func TestHealthAsksARemoteThatCannotSayOnlyAfterItsNextFailure(t *testing.T) {
	h, reg := newHealth(t, time.Hour)
	p := &switchable{}
	who := &answering{err: apierrors.NewNotFound(schema.GroupResource{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}, "")}
	who.user.Store(ptr.To(""))
	h.add("aws", p.probe, who.whoAmI)
	h.probeAll(t.Context())
	h.probeAll(t.Context())
	if n := who.calls.Load(); n != 1 {
		t.Errorf("asked %d times over two answering probes, want 1", n)
	}
	if _, n := testenv.MetricSeries(t, reg, identityMetric, map[string]string{"remote": "aws"}); n != 0 {
		t.Errorf("%d identity series, want none", n)
	}
}

// Remotes added without a way to ask (Add) export no identity and are never asked.
func TestHealthAddAsksNoIdentity(t *testing.T) {
	h, reg := newHealth(t, time.Hour)
	h.Add("aws", (&switchable{}).probe)
	h.probeAll(t.Context())
	if _, n := testenv.MetricSeries(t, reg, identityMetric, map[string]string{"remote": "aws"}); n != 0 {
		t.Errorf("%d identity series, want none", n)
	}
}

// AddClusters probes a cluster's /readyz and asks it, with the cluster's own client, who the
// component is (a SelfSubjectReview).
func TestAddClustersExportsTheSelfSubjectReviewsUser(t *testing.T) {
	const user = "system:serviceaccount:semaphore-remote:semaphore-remote-gcp"
	var reviews atomic.Int64
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/readyz":
			_, _ = w.Write([]byte("ok"))
		case r.Method == http.MethodPost && r.URL.Path == "/apis/authentication.k8s.io/v1/selfsubjectreviews":
			reviews.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{
				"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
				"status": map[string]any{"userInfo": map[string]any{"username": user}},
			})
		default:
			http.NotFound(w, r)
		}
	}))
	defer server.Close()
	cfg := &rest.Config{Host: server.URL}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h, reg := newHealth(t, time.Hour)
	h.AddClusters([]Cluster{{Name: "aws", Config: cfg, Client: client}})
	h.probeAll(t.Context())
	h.probeAll(t.Context())
	if diff := cmp.Diff(map[string]float64{user: 1}, identities(t, reg, "aws")); diff != "" {
		t.Errorf("identity series mismatch (-want +got):\n%s", diff)
	}
	if n := reviews.Load(); n != 1 {
		t.Errorf("%d SelfSubjectReviews over two probes, want 1", n)
	}
}
