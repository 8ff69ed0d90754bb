package app_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/app"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
)

// With SEMAPHORE_WITHDRAW_AFTER=aws:2s, cutting aws and gcp makes aws's mirrored endpoints (its
// mirror's and its copies in a global service) not ready once aws has gone 2 s without a
// sync, while gcp's, which the policy does not name, stay ready; once aws answers again its
// endpoints are ready again at once. Nothing is deleted, and each transition is counted.
func TestWithdrawAfterMarksARemotesEndpointsNotReadyAndBringsThemBack(t *testing.T) {
	cfg := newGlobalConfig(t, "aws", "gcp")
	cfg.RemoteProbeInterval = 200 * time.Millisecond
	if err := cfg.WithdrawAfter.Decode("aws:2s"); err != nil {
		t.Fatal(err)
	}
	ns := fixture.Namespace(t, "app")
	awsMirror, gcpMirror := mirror.Source{Cluster: "aws", Namespace: ns, Name: "web"}, mirror.Source{Cluster: "gcp", Namespace: ns, Name: "web"}
	for _, c := range []*testenv.Cluster{aws, gcp} {
		remoteService(t, c, ns, "web", nil)
	}
	remoteSlice(t, aws, ns, "web", "web-abcde", discoveryv1.AddressTypeIPv4, endpoint("198.18.2.10"), endpoint("198.18.2.11"))
	remoteSlice(t, gcp, ns, "web", "web-abcde", discoveryv1.AddressTypeIPv4, endpoint("198.18.3.10"))
	globalService(t, aws, ns, "api", nil, "198.18.2.1")
	globalService(t, gcp, ns, "api", nil, "198.18.3.1")
	k := global.Key{Namespace: ns, Name: "api"}

	r := start(t, cfg)
	ready := map[string]bool{"198.18.2.10": true, "198.18.2.11": true, "198.18.3.10": true, "198.18.2.1": true, "198.18.3.1": true}
	eventually(t, 30*time.Second, "every endpoint ready", endpointsAre(cfg, k, ready, awsMirror, gcpMirror))

	aws.Cut(t)
	gcp.Cut(t)
	cut := time.Now()
	withdrawn := maps.Clone(ready)
	for _, a := range []string{"198.18.2.10", "198.18.2.11", "198.18.2.1"} {
		withdrawn[a] = false
	}
	eventually(t, 15*time.Second, "aws's endpoints withdrawn, gcp's ready", endpointsAre(cfg, k, withdrawn, awsMirror, gcpMirror))
	if d := time.Since(cut); d < 2*time.Second {
		t.Errorf("aws's endpoints withdrawn %v after the cut, before SEMAPHORE_WITHDRAW_AFTER (2s)", d)
	}
	t.Logf("aws's endpoints withdrawn %v after the cut", time.Since(cut).Round(time.Millisecond))
	if v := metricValue(t, r.App.Registry, "semaphore_service_mirror_remote_withdrawn", map[string]string{"remote": "aws"}); v != 1 {
		t.Errorf("remote_withdrawn{remote=aws} = %v, want 1", v)
	}
	if v := metricValue(t, r.App.Registry, "semaphore_service_mirror_remote_withdrawn", map[string]string{"remote": "gcp"}); v != 0 {
		t.Errorf("remote_withdrawn{remote=gcp} = %v, want 0: the policy does not name gcp", v)
	}
	testenv.Hold(t, 2*time.Second, "gcp's endpoints kept ready, nothing deleted", endpointsAre(cfg, k, withdrawn, awsMirror, gcpMirror))

	for _, c := range []*testenv.Cluster{aws, gcp} {
		if err := c.SetReachable(true); err != nil {
			t.Fatal(err)
		}
	}
	restored := time.Now()
	eventually(t, 10*time.Second, "aws's endpoints ready again", endpointsAre(cfg, k, ready, awsMirror, gcpMirror))
	t.Logf("aws's endpoints back %v after the remote answered", time.Since(restored).Round(time.Millisecond))
	if v := metricValue(t, r.App.Registry, "semaphore_service_mirror_remote_withdrawals_total", map[string]string{"remote": "aws"}); v != 1 {
		t.Errorf("remote_withdrawals_total{remote=aws} = %v, want 1", v)
	}
	expectNoWrites(t, cfg, "at rest after the return")
}

// endpointsAre is nil when the mirrors of srcs and the global service k hold exactly want
// (address -> ready).
func endpointsAre(cfg app.Config, k global.Key, want map[string]bool, srcs ...mirror.Source) func() error {
	return func() error {
		got := map[string]bool{}
		for _, src := range srcs {
			_, sl, err := mirrorOf(cfg, src)
			if err != nil {
				return err
			}
			maps.Copy(got, addressesOf(sl))
		}
		_, sl, err := globalOf(cfg, k)
		if err != nil {
			return err
		}
		maps.Copy(got, addressesOf(sl))
		if !maps.Equal(got, want) {
			return fmt.Errorf("endpoints (address: ready) %v, want %v", got, want)
		}
		return nil
	}
}

// SEMAPHORE_WITHDRAW_AFTER is read as one duration, pairs, or both; a bad value or a remote
// that is not configured is refused at start naming the variable.
func TestWithdrawAfterConfiguration(t *testing.T) {
	for value, want := range map[string]string{
		"":              "",
		"5m":            "5m0s",
		"aws:30s":       "aws:30s",
		"5m, aws:30s":   "5m0s,aws:30s",
		"aws:1m,gcp:2m": "aws:1m0s,gcp:2m0s",
	} {
		cfg := newConfig(t, "aws", "gcp")
		if err := cfg.WithdrawAfter.Decode(value); err != nil {
			t.Errorf("Decode(%q) = %v", value, err)
			continue
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate with %q = %v", value, err)
		}
		if got := cfg.WithdrawAfter.String(); got != want {
			t.Errorf("Decode(%q).String() = %q, want %q", value, got, want)
		}
	}
	for _, value := range []string{"soon", "aws:0s", "-1m", "aws:1m,aws:2m", "1m,2m", "aws:"} {
		cfg := newConfig(t, "aws")
		if err := cfg.WithdrawAfter.Decode(value); err == nil {
			t.Errorf("Decode(%q) = nil, want an error", value)
		}
	}
	cfg := newConfig(t, "aws")
	if err := cfg.WithdrawAfter.Decode("merit:1m"); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err == nil || err.Error() != `SEMAPHORE_WITHDRAW_AFTER: remote "merit" is not in SEMAPHORE_REMOTES` {
		t.Errorf("Validate with an unknown remote = %v", err)
	}
}
