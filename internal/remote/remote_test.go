package remote

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/metrics"
)

// gauge returns the value of the series name{remote=remote} on reg, and whether it exists.
func gauge(t *testing.T, reg *prometheus.Registry, name, remote string) (float64, bool) {
	t.Helper()
	v, n := testenv.MetricSeries(t, reg, name, map[string]string{"remote": remote})
	return v, n > 0
}

const (
	upMetric       = "semaphore_test_remote_up"
	lastSyncMetric = "semaphore_test_remote_last_sync_timestamp_seconds"
)

func newHealth(t *testing.T, interval time.Duration) (*Health, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	h := NewHealth(metrics.NewFactory(reg, "semaphore_test"), interval, slog.New(slog.DiscardHandler))
	return h, reg
}

// switchable is a probe whose result the test sets.
type switchable struct{ err atomic.Pointer[error] }

func (s *switchable) set(err error) { s.err.Store(&err) }

func (s *switchable) probe(context.Context) error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return nil
}

func TestHealthUpFollowsProbes(t *testing.T) {
	h, reg := newHealth(t, time.Hour)
	aws, merit := &switchable{}, &switchable{}
	h.Add("aws", aws.probe)
	h.Add("merit", merit.probe)
	merit.set(errors.New("connection refused"))

	type state struct {
		Up      float64
		IsUp    bool
		Check   string
		Present bool
	}
	observe := func(name string) state {
		v, ok := gauge(t, reg, upMetric, name)
		s := state{Up: v, Present: ok, IsUp: h.isUp(name), Check: "ok"}
		if err := h.Check(name); err != nil {
			s.Check = err.Error()
		}
		return s
	}

	steps := []struct {
		name      string
		before    func()
		probe     bool
		wantAWS   state
		wantMerit state
	}{
		{
			name:      "added, not probed",
			before:    func() {},
			wantAWS:   state{Up: 0, Present: true, Check: "not probed yet"},
			wantMerit: state{Up: 0, Present: true, Check: "not probed yet"},
		},
		{
			name:      "first probe, caches not synced",
			before:    func() {},
			probe:     true,
			wantAWS:   state{Up: 1, IsUp: true, Present: true, Check: "caches not synced yet"},
			wantMerit: state{Up: 0, Present: true, Check: "unreachable: connection refused"},
		},
		{
			name:      "synced",
			before:    func() { h.MarkSynced("aws"); h.MarkSynced("merit") },
			wantAWS:   state{Up: 1, IsUp: true, Present: true, Check: "ok"},
			wantMerit: state{Up: 0, Present: true, Check: "unreachable: connection refused"},
		},
		{
			name:      "aws goes down, merit comes up",
			before:    func() { aws.set(errors.New("i/o timeout")); merit.set(nil) },
			probe:     true,
			wantAWS:   state{Up: 0, Present: true, Check: "unreachable: i/o timeout"},
			wantMerit: state{Up: 1, IsUp: true, Present: true, Check: "ok"},
		},
		{
			name:      "aws back",
			before:    func() { aws.set(nil) },
			probe:     true,
			wantAWS:   state{Up: 1, IsUp: true, Present: true, Check: "ok"},
			wantMerit: state{Up: 1, IsUp: true, Present: true, Check: "ok"},
		},
	}
	for _, s := range steps {
		s.before()
		if s.probe {
			h.probeAll(t.Context())
		}
		if diff := cmp.Diff(s.wantAWS, observe("aws")); diff != "" {
			t.Errorf("%s: aws mismatch (-want +got):\n%s", s.name, diff)
		}
		if diff := cmp.Diff(s.wantMerit, observe("merit")); diff != "" {
			t.Errorf("%s: merit mismatch (-want +got):\n%s", s.name, diff)
		}
	}

	if err := h.Check("gcp"); err == nil || err.Error() != "unknown remote" {
		t.Errorf("Check(unknown) = %v, want \"unknown remote\"", err)
	}
	if h.isUp("gcp") {
		t.Error("Up(unknown) = true, want false")
	}
	if diff := cmp.Diff([]string{"aws", "merit"}, h.names()); diff != "" {
		t.Errorf("names() mismatch (-want +got):\n%s", diff)
	}
}

func TestHealthLastSync(t *testing.T) {
	tests := []struct {
		name  string
		steps func(h *Health, p *switchable)
		want  bool // whether the timestamp is set
	}{
		{"nothing", func(*Health, *switchable) {}, false},
		{"probe only", func(h *Health, _ *switchable) { h.probeAll(context.Background()) }, false},
		{"synced only", func(h *Health, _ *switchable) { h.MarkSynced("aws") }, false},
		{"synced, failed probe", func(h *Health, p *switchable) {
			p.set(errors.New("down"))
			h.MarkSynced("aws")
			h.probeAll(context.Background())
		}, false},
		{"synced then probed", func(h *Health, _ *switchable) {
			h.MarkSynced("aws")
			h.probeAll(context.Background())
		}, true},
		{"probed then synced", func(h *Health, _ *switchable) {
			h.probeAll(context.Background())
			h.MarkSynced("aws")
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, reg := newHealth(t, time.Hour)
			p := &switchable{}
			h.Add("aws", p.probe)
			start := time.Now()
			tt.steps(h, p)
			got, ok := gauge(t, reg, lastSyncMetric, "aws")
			if !ok {
				t.Fatalf("%s{remote=aws} is not exported", lastSyncMetric)
			}
			if !tt.want {
				if got != 0 {
					t.Errorf("last sync = %v, want 0 (never synced and reachable)", got)
				}
				return
			}
			if ts := time.Unix(int64(got), 0); ts.Before(start.Truncate(time.Second)) || ts.After(time.Now()) {
				t.Errorf("last sync = %v, want between %v and now", ts, start)
			}
		})
	}
}

func TestHealthLastSyncKeptWhileDown(t *testing.T) {
	h, reg := newHealth(t, time.Hour)
	p := &switchable{}
	h.Add("aws", p.probe)
	h.MarkSynced("aws")
	h.probeAll(t.Context())
	before, _ := gauge(t, reg, lastSyncMetric, "aws")
	if before == 0 {
		t.Fatal("last sync not set after sync and a successful probe")
	}
	p.set(errors.New("down"))
	h.probeAll(t.Context())
	if after, _ := gauge(t, reg, lastSyncMetric, "aws"); after != before {
		t.Errorf("last sync changed from %v to %v on a failed probe, want it kept (it says how stale the view is)", before, after)
	}
}

func TestHealthProbeCancelled(t *testing.T) {
	h, reg := newHealth(t, time.Hour)
	h.Add("aws", func(ctx context.Context) error { return ctx.Err() })
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	h.probeAll(ctx)
	// A probe cut short by shutdown says nothing about the remote.
	if err := h.Check("aws"); err == nil || err.Error() != "not probed yet" {
		t.Errorf("Check() after a cancelled probe = %v, want \"not probed yet\"", err)
	}
	if v, _ := gauge(t, reg, upMetric, "aws"); v != 0 {
		t.Errorf("up = %v, want 0", v)
	}
}

func TestHealthProbeTimeout(t *testing.T) {
	h, _ := newHealth(t, 10*time.Millisecond)
	h.Add("aws", func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("probe has no deadline")
		}
		<-ctx.Done()
		return ctx.Err()
	})
	start := time.Now()
	h.probeAll(t.Context())
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a hanging probe held probeAll for %v, want it bounded by the probe timeout", d)
	}
	if err := h.Check("aws"); err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("Check() after a hanging probe = %v, want unreachable: deadline exceeded", err)
	}
}

func TestHealthRun(t *testing.T) {
	h, reg := newHealth(t, 5*time.Millisecond)
	p := &switchable{}
	p.set(errors.New("down"))
	var calls atomic.Int64
	h.Add("aws", func(ctx context.Context) error {
		calls.Add(1)
		return p.probe(ctx)
	})
	h.MarkSynced("aws")

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		h.Run(ctx)
		close(done)
	}()
	waitFor := func(what string, want float64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if v, _ := gauge(t, reg, upMetric, "aws"); v == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (up=%v)", what, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// Wait for a failed probe before switching, so 0 is observed after a probe, not only
	// because Add starts at 0.
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("Run never probed")
		}
		time.Sleep(time.Millisecond)
	}
	waitFor("down", 0)
	p.set(nil)
	waitFor("up", 1)
	p.set(errors.New("down again"))
	waitFor("down again", 0)

	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
	n := calls.Load()
	time.Sleep(20 * time.Millisecond)
	if calls.Load() != n {
		t.Error("probes continued after Run returned")
	}
}

// writeKubeconfig writes a kubeconfig for server, with the given user, to dir/name/kubeconfig.
func writeKubeconfig(t *testing.T, dir, name string, user *clientcmdapi.AuthInfo) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	cfg.AuthInfos[name] = user
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	path := KubeconfigPath(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestKubeconfigPath(t *testing.T) {
	if diff := cmp.Diff("/etc/semaphore/remotes/aws/kubeconfig", KubeconfigPath("/etc/semaphore/remotes", "aws")); diff != "" {
		t.Errorf("KubeconfigPath mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadRemotes(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "aws", "token")
	writeKubeconfig(t, dir, "aws", &clientcmdapi.AuthInfo{TokenFile: tokenFile})
	if err := os.WriteFile(tokenFile, []byte("first-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeKubeconfig(t, dir, "merit", &clientcmdapi.AuthInfo{Token: "static-token"})

	opts := ClientOptions{UserAgent: "semaphore-test/v1", QPS: 123, Burst: 456}
	clusters, err := LoadRemotes(dir, []string{"aws", "merit"}, opts)
	if err != nil {
		t.Fatalf("LoadRemotes() = %v", err)
	}
	type summary struct {
		Name, Host, UserAgent, BearerToken, BearerTokenFile string
		// Protobuf for the built-in types: less to decode than JSON.
		ContentType string
		QPS         float32
		Burst       int
		HasClient   bool
	}
	var got []summary
	for _, c := range clusters {
		got = append(got, summary{
			Name: c.Name, Host: c.Config.Host, UserAgent: c.Config.UserAgent,
			BearerToken: c.Config.BearerToken, BearerTokenFile: c.Config.BearerTokenFile,
			ContentType: c.Config.ContentType, QPS: c.Config.QPS, Burst: c.Config.Burst, HasClient: c.Client != nil,
		})
	}
	want := []summary{
		// BearerTokenFile is what makes client-go re-read a rotated token.
		{Name: "aws", Host: "https://127.0.0.1:1", UserAgent: "semaphore-test/v1", BearerToken: "first-token", BearerTokenFile: tokenFile, ContentType: "application/vnd.kubernetes.protobuf", QPS: 123, Burst: 456, HasClient: true},
		{Name: "merit", Host: "https://127.0.0.1:1", UserAgent: "semaphore-test/v1", BearerToken: "static-token", ContentType: "application/vnd.kubernetes.protobuf", QPS: 123, Burst: 456, HasClient: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadRemotes() mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadRemotesNone(t *testing.T) {
	clusters, err := LoadRemotes(filepath.Join(t.TempDir(), "missing"), nil, ClientOptions{})
	if err != nil || len(clusters) != 0 {
		t.Errorf("LoadRemotes(no names) = %v, %v, want nothing and no error", clusters, err)
	}
}

func TestLoadRemotesErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) // writes dir/aws/kubeconfig, or not
	}{
		{"missing file", func(*testing.T, string) {}},
		{"garbage", func(t *testing.T, dir string) {
			writeFile(t, KubeconfigPath(dir, "aws"), "this: is: not: a kubeconfig\n\t[")
		}},
		{"no current context", func(t *testing.T, dir string) {
			writeFile(t, KubeconfigPath(dir, "aws"), "apiVersion: v1\nkind: Config\nclusters: []\n")
		}},
		{"missing token file", func(t *testing.T, dir string) {
			writeKubeconfig(t, dir, "aws", &clientcmdapi.AuthInfo{TokenFile: filepath.Join(dir, "aws", "no-such-token")})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeKubeconfig(t, dir, "merit", &clientcmdapi.AuthInfo{Token: "t"})
			tt.setup(t, dir)
			_, err := LoadRemotes(dir, []string{"merit", "aws"}, ClientOptions{QPS: 1, Burst: 1})
			if err == nil {
				t.Fatal("LoadRemotes() = nil, want an error")
			}
			path := KubeconfigPath(dir, "aws")
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `"aws"`) {
				t.Errorf("LoadRemotes() = %q, want it to name the remote and %s", err, path)
			}
		})
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLocalConfig(t *testing.T) {
	dir := t.TempDir()
	path := writeKubeconfig(t, dir, "local", &clientcmdapi.AuthInfo{Token: "t"})
	cfg, err := LocalConfig(path, ClientOptions{UserAgent: "ua", QPS: 7, Burst: 8})
	if err != nil {
		t.Fatalf("LocalConfig() = %v", err)
	}
	if cfg.Host != "https://127.0.0.1:1" || cfg.UserAgent != "ua" || cfg.QPS != 7 || cfg.Burst != 8 {
		t.Errorf("LocalConfig() = host %q, user agent %q, QPS %v, burst %v; want the kubeconfig's server and the options", cfg.Host, cfg.UserAgent, cfg.QPS, cfg.Burst)
	}

	missing := filepath.Join(dir, "missing")
	if _, err := LocalConfig(missing, ClientOptions{}); err == nil || !strings.HasPrefix(err.Error(), "SEMAPHORE_LOCAL_KUBECONFIG: "+missing) {
		t.Errorf("LocalConfig(missing) = %v, want an error naming SEMAPHORE_LOCAL_KUBECONFIG and the path", err)
	}
}

// A Secret mounted at <dir>/<remote>/ naturally holds the kubeconfig next to its token and CA,
// referenced by relative paths, which kubectl resolves against the kubeconfig's directory.
func TestLoadRemotesRelativePaths(t *testing.T) {
	dir := t.TempDir()
	writeKubeconfig(t, dir, "aws", &clientcmdapi.AuthInfo{TokenFile: "token"})
	writeFile(t, filepath.Join(dir, "aws", "token"), "tok")
	clusters, err := LoadRemotes(dir, []string{"aws"}, ClientOptions{})
	if err != nil {
		t.Fatalf("LoadRemotes() = %v", err)
	}
	if diff := cmp.Diff(filepath.Join(dir, "aws", "token"), clusters[0].Config.BearerTokenFile); diff != "" {
		t.Errorf("BearerTokenFile mismatch (-want +got):\n%s", diff)
	}
}
