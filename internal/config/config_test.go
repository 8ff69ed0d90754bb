package config_test

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-semaphore/semaphore/internal/config"
)

// testConfig is shaped like a component's configuration.
type testConfig struct {
	config.Shared
	config.LeaderElection
	Extra time.Duration `envconfig:"SEMAPHORE_TEST_EXTRA" default:"1s" desc:"a component setting"`
}

func (c *testConfig) Validate() error {
	if err := c.Shared.Validate(); err != nil {
		return err
	}
	return c.LeaderElection.Validate()
}

// variables are all the variables testConfig reads.
var variables = []string{
	"SEMAPHORE_LOCAL_CLUSTER",
	"SEMAPHORE_REMOTES",
	"SEMAPHORE_REMOTES_DIR",
	"SEMAPHORE_LOCAL_KUBECONFIG",
	"SEMAPHORE_ADMIN_ADDR",
	"SEMAPHORE_LOG_LEVEL",
	"SEMAPHORE_CLIENT_QPS",
	"SEMAPHORE_CLIENT_BURST",
	"SEMAPHORE_RESYNC_PERIOD",
	"SEMAPHORE_REMOTE_PROBE_INTERVAL",
	"SEMAPHORE_LEADER_ELECT",
	"SEMAPHORE_LEADER_ELECT_NAMESPACE",
	"SEMAPHORE_LEADER_ELECT_LEASE_NAME",
	"SEMAPHORE_LEADER_ELECT_IDENTITY",
	"SEMAPHORE_LEADER_ELECT_LEASE_DURATION",
	"SEMAPHORE_LEADER_ELECT_RENEW_DEADLINE",
	"SEMAPHORE_LEADER_ELECT_RETRY_PERIOD",
	"SEMAPHORE_TEST_EXTRA",
}

// unsetenv removes a variable for the duration of the test, restoring it afterwards.
func unsetenv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "") // registers the restore
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}

// setEnv makes env the only variables testConfig sees; a value of "<unset>" unsets one.
func setEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, k := range variables {
		unsetenv(t, k)
	}
	for k, v := range env {
		if v == "<unset>" {
			unsetenv(t, k)
			continue
		}
		t.Setenv(k, v)
	}
}

// baseEnv is a valid configuration.
func baseEnv() map[string]string {
	return map[string]string{
		"SEMAPHORE_LOCAL_CLUSTER":           "gcp",
		"SEMAPHORE_REMOTES":                 "aws,merit",
		"SEMAPHORE_LEADER_ELECT_NAMESPACE":  "semaphore",
		"SEMAPHORE_LEADER_ELECT_LEASE_NAME": "semaphore-test",
		"SEMAPHORE_LEADER_ELECT_IDENTITY":   "pod-0",
	}
}

func TestLoadValid(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want testConfig
	}{
		{
			name: "defaults",
			env:  baseEnv(),
			want: testConfig{
				Shared: config.Shared{
					LocalCluster:        "gcp",
					Remotes:             []string{"aws", "merit"},
					RemotesDir:          "/etc/semaphore/remotes",
					AdminAddr:           ":8080",
					LogLevel:            slog.LevelInfo,
					ClientQPS:           200,
					ClientBurst:         400,
					ResyncPeriod:        10 * time.Minute,
					RemoteProbeInterval: 10 * time.Second,
				},
				LeaderElection: config.LeaderElection{
					Enabled:       true,
					Namespace:     "semaphore",
					LeaseName:     "semaphore-test",
					Identity:      "pod-0",
					LeaseDuration: 15 * time.Second,
					RenewDeadline: 10 * time.Second,
					RetryPeriod:   2 * time.Second,
				},
				Extra: time.Second,
			},
		},
		{
			name: "everything set",
			env: map[string]string{
				"SEMAPHORE_LOCAL_CLUSTER":               "gcp",
				"SEMAPHORE_REMOTES":                     "",
				"SEMAPHORE_REMOTES_DIR":                 "/tmp/remotes",
				"SEMAPHORE_LOCAL_KUBECONFIG":            "/tmp/kubeconfig",
				"SEMAPHORE_ADMIN_ADDR":                  "127.0.0.1:9090",
				"SEMAPHORE_LOG_LEVEL":                   "debug",
				"SEMAPHORE_CLIENT_QPS":                  "-1",
				"SEMAPHORE_CLIENT_BURST":                "0",
				"SEMAPHORE_RESYNC_PERIOD":               "0s",
				"SEMAPHORE_REMOTE_PROBE_INTERVAL":       "250ms",
				"SEMAPHORE_LEADER_ELECT":                "false",
				"SEMAPHORE_LEADER_ELECT_LEASE_DURATION": "1s",
				"SEMAPHORE_LEADER_ELECT_RENEW_DEADLINE": "1s",
				"SEMAPHORE_LEADER_ELECT_RETRY_PERIOD":   "1s",
				"SEMAPHORE_TEST_EXTRA":                  "1m",
			},
			want: testConfig{
				Shared: config.Shared{
					LocalCluster:        "gcp",
					Remotes:             []string{},
					RemotesDir:          "/tmp/remotes",
					LocalKubeconfig:     "/tmp/kubeconfig",
					AdminAddr:           "127.0.0.1:9090",
					LogLevel:            slog.LevelDebug,
					ClientQPS:           -1,
					ClientBurst:         0,
					ResyncPeriod:        0,
					RemoteProbeInterval: 250 * time.Millisecond,
				},
				// Disabled: the inconsistent durations do not matter.
				LeaderElection: config.LeaderElection{
					LeaseDuration: time.Second,
					RenewDeadline: time.Second,
					RetryPeriod:   time.Second,
				},
				Extra: time.Minute,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, tt.env)
			var got testConfig
			if err := config.Load(nil, &bytes.Buffer{}, &got); err != nil {
				t.Fatalf("Load() = %v, want nil", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Load() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string // over baseEnv
		variable string            // the error's first token, without the colon
		contains string            // and something the error must say
	}{
		{"missing local cluster", map[string]string{"SEMAPHORE_LOCAL_CLUSTER": "<unset>"}, "SEMAPHORE_LOCAL_CLUSTER", "required"},
		{"empty local cluster", map[string]string{"SEMAPHORE_LOCAL_CLUSTER": ""}, "SEMAPHORE_LOCAL_CLUSTER", "empty"},
		{"local cluster not a DNS label", map[string]string{"SEMAPHORE_LOCAL_CLUSTER": "GCP_1"}, "SEMAPHORE_LOCAL_CLUSTER", `"GCP_1"`},
		{"local cluster too long", map[string]string{"SEMAPHORE_LOCAL_CLUSTER": strings.Repeat("a", 64)}, "SEMAPHORE_LOCAL_CLUSTER", "not a valid cluster name"},
		{"remote not a DNS label", map[string]string{"SEMAPHORE_REMOTES": "aws,Merit.eu"}, "SEMAPHORE_REMOTES", `"Merit.eu"`},
		{"empty remote", map[string]string{"SEMAPHORE_REMOTES": "aws,"}, "SEMAPHORE_REMOTES", "empty"},
		{"remote is the local cluster", map[string]string{"SEMAPHORE_REMOTES": "aws,gcp"}, "SEMAPHORE_REMOTES", "local cluster"},
		{"duplicate remote", map[string]string{"SEMAPHORE_REMOTES": "aws,merit,aws"}, "SEMAPHORE_REMOTES", "twice"},
		{"remote a dash-prefix of another", map[string]string{"SEMAPHORE_REMOTES": "aws,aws-prod"}, "SEMAPHORE_REMOTES", `"aws" and "aws-prod"`},
		{"remote named as the global prefix", map[string]string{"SEMAPHORE_REMOTES": "aws,gl"}, "SEMAPHORE_REMOTES", `"gl"`},
		{"remote starting with the global prefix", map[string]string{"SEMAPHORE_REMOTES": "gl-eu"}, "SEMAPHORE_REMOTES", `"gl" and "gl-eu"`},
		{"empty remotes dir", map[string]string{"SEMAPHORE_REMOTES_DIR": ""}, "SEMAPHORE_REMOTES_DIR", "empty"},
		{"empty admin address", map[string]string{"SEMAPHORE_ADMIN_ADDR": ""}, "SEMAPHORE_ADMIN_ADDR", "empty"},
		{"bad log level", map[string]string{"SEMAPHORE_LOG_LEVEL": "loud"}, "SEMAPHORE_LOG_LEVEL", `"loud"`},
		{"bad float", map[string]string{"SEMAPHORE_CLIENT_QPS": "fast"}, "SEMAPHORE_CLIENT_QPS", `"fast"`},
		{"zero QPS", map[string]string{"SEMAPHORE_CLIENT_QPS": "0"}, "SEMAPHORE_CLIENT_QPS", "0"},
		{"bad int", map[string]string{"SEMAPHORE_CLIENT_BURST": "1.5"}, "SEMAPHORE_CLIENT_BURST", `"1.5"`},
		{"zero burst", map[string]string{"SEMAPHORE_CLIENT_BURST": "0"}, "SEMAPHORE_CLIENT_BURST", "at least 1"},
		{"bad duration", map[string]string{"SEMAPHORE_RESYNC_PERIOD": "soon"}, "SEMAPHORE_RESYNC_PERIOD", `"soon"`},
		{"negative duration", map[string]string{"SEMAPHORE_RESYNC_PERIOD": "-1m"}, "SEMAPHORE_RESYNC_PERIOD", "negative"},
		{"zero probe interval", map[string]string{"SEMAPHORE_REMOTE_PROBE_INTERVAL": "0s"}, "SEMAPHORE_REMOTE_PROBE_INTERVAL", "positive"},
		{"negative probe interval", map[string]string{"SEMAPHORE_REMOTE_PROBE_INTERVAL": "-1s"}, "SEMAPHORE_REMOTE_PROBE_INTERVAL", "positive"},
		{"bad probe interval", map[string]string{"SEMAPHORE_REMOTE_PROBE_INTERVAL": "often"}, "SEMAPHORE_REMOTE_PROBE_INTERVAL", `"often"`},
		{"bad bool", map[string]string{"SEMAPHORE_LEADER_ELECT": "maybe"}, "SEMAPHORE_LEADER_ELECT", `"maybe"`},
		{"bad component duration", map[string]string{"SEMAPHORE_TEST_EXTRA": "10"}, "SEMAPHORE_TEST_EXTRA", `"10"`},
		{"no lease namespace", map[string]string{"SEMAPHORE_LEADER_ELECT_NAMESPACE": ""}, "SEMAPHORE_LEADER_ELECT_NAMESPACE", "required"},
		{"bad lease namespace", map[string]string{"SEMAPHORE_LEADER_ELECT_NAMESPACE": "Semaphore"}, "SEMAPHORE_LEADER_ELECT_NAMESPACE", `"Semaphore"`},
		{"bad lease name", map[string]string{"SEMAPHORE_LEADER_ELECT_LEASE_NAME": "Lease!"}, "SEMAPHORE_LEADER_ELECT_LEASE_NAME", `"Lease!"`},
		{"no identity", map[string]string{"SEMAPHORE_LEADER_ELECT_IDENTITY": ""}, "SEMAPHORE_LEADER_ELECT_IDENTITY", "set it"},
		{"lease equal to renew", map[string]string{"SEMAPHORE_LEADER_ELECT_LEASE_DURATION": "10s"}, "SEMAPHORE_LEADER_ELECT_LEASE_DURATION", "SEMAPHORE_LEADER_ELECT_RENEW_DEADLINE"},
		{"lease shorter than renew", map[string]string{"SEMAPHORE_LEADER_ELECT_LEASE_DURATION": "5s"}, "SEMAPHORE_LEADER_ELECT_LEASE_DURATION", "greater"},
		{"renew equal to retry", map[string]string{"SEMAPHORE_LEADER_ELECT_RETRY_PERIOD": "10s"}, "SEMAPHORE_LEADER_ELECT_RENEW_DEADLINE", "SEMAPHORE_LEADER_ELECT_RETRY_PERIOD"},
		{"renew shorter than retry", map[string]string{"SEMAPHORE_LEADER_ELECT_RETRY_PERIOD": "12s"}, "SEMAPHORE_LEADER_ELECT_RENEW_DEADLINE", "greater"},
		{"zero retry", map[string]string{"SEMAPHORE_LEADER_ELECT_RETRY_PERIOD": "0s"}, "SEMAPHORE_LEADER_ELECT_RENEW_DEADLINE", "positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := baseEnv()
			for k, v := range tt.env {
				env[k] = v
			}
			setEnv(t, env)
			var c testConfig
			err := config.Load(nil, &bytes.Buffer{}, &c)
			if err == nil {
				t.Fatalf("Load() = nil, want an error about %s", tt.variable)
			}
			msg := err.Error()
			if first := strings.Fields(msg)[0]; first != tt.variable+":" {
				t.Errorf("Load() = %q, want the first token to be %q", msg, tt.variable+":")
			}
			if !strings.Contains(msg, tt.contains) {
				t.Errorf("Load() = %q, want it to contain %q", msg, tt.contains)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("Load() = %q, want one line", msg)
			}
		})
	}
}

func TestLoadHelp(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help"} {
		t.Run(arg, func(t *testing.T) {
			// Help works even when the environment is invalid.
			setEnv(t, map[string]string{"SEMAPHORE_CLIENT_QPS": "fast"})
			var out bytes.Buffer
			var c testConfig
			err := config.Load([]string{"-v", arg}, &out, &c)
			if !errors.Is(err, config.ErrHelp) {
				t.Fatalf("Load(%q) = %v, want ErrHelp", arg, err)
			}
			for _, v := range variables {
				if !strings.Contains(out.String(), v) {
					t.Errorf("help does not mention %s:\n%s", v, out.String())
				}
			}
			for _, s := range []string{"(required)", "(default /etc/semaphore/remotes)", "name of this cluster"} {
				if !strings.Contains(out.String(), s) {
					t.Errorf("help does not say %q:\n%s", s, out.String())
				}
			}
		})
	}
}

func TestLeaderElectionComplete(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		in   config.LeaderElection
		want config.LeaderElection
	}{
		{
			name: "from the pod's environment",
			env:  map[string]string{"POD_NAMESPACE": "semaphore", "POD_NAME": "mirror-7d9f-abcde"},
			want: config.LeaderElection{Namespace: "semaphore", LeaseName: "semaphore-service-mirror", Identity: "mirror-7d9f-abcde"},
		},
		{
			name: "explicit settings win",
			env:  map[string]string{"POD_NAMESPACE": "semaphore", "POD_NAME": "mirror-7d9f-abcde"},
			in:   config.LeaderElection{Namespace: "other", LeaseName: "lease", Identity: "me"},
			want: config.LeaderElection{Namespace: "other", LeaseName: "lease", Identity: "me"},
		},
		{
			name: "host name without POD_NAME",
			env:  map[string]string{"POD_NAMESPACE": "<unset>", "POD_NAME": "<unset>"},
			want: config.LeaderElection{LeaseName: "semaphore-service-mirror", Identity: host},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, tt.env)
			got := tt.in
			got.Complete("semaphore-service-mirror")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Complete() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLeaderElectionValidate(t *testing.T) {
	valid := config.LeaderElection{
		Enabled: true, Namespace: "semaphore", LeaseName: "semaphore-policy", Identity: "pod-0",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
	}
	tests := []struct {
		name     string
		mod      func(*config.LeaderElection)
		variable string // empty: valid
	}{
		{"valid", func(*config.LeaderElection) {}, ""},
		{"disabled ignores everything", func(l *config.LeaderElection) { *l = config.LeaderElection{} }, ""},
		{"lease equal to renew", func(l *config.LeaderElection) { l.LeaseDuration = l.RenewDeadline }, "SEMAPHORE_LEADER_ELECT_LEASE_DURATION"},
		{"lease below renew", func(l *config.LeaderElection) { l.LeaseDuration = time.Second }, "SEMAPHORE_LEADER_ELECT_LEASE_DURATION"},
		{"renew equal to retry", func(l *config.LeaderElection) { l.RetryPeriod = l.RenewDeadline }, "SEMAPHORE_LEADER_ELECT_RENEW_DEADLINE"},
		{"renew below retry", func(l *config.LeaderElection) { l.RetryPeriod = 11 * time.Second }, "SEMAPHORE_LEADER_ELECT_RENEW_DEADLINE"},
		{"negative retry", func(l *config.LeaderElection) { l.RetryPeriod = -time.Second }, "SEMAPHORE_LEADER_ELECT_RENEW_DEADLINE"},
		{"no namespace", func(l *config.LeaderElection) { l.Namespace = "" }, "SEMAPHORE_LEADER_ELECT_NAMESPACE"},
		{"no lease name", func(l *config.LeaderElection) { l.LeaseName = "" }, "SEMAPHORE_LEADER_ELECT_LEASE_NAME"},
		{"no identity", func(l *config.LeaderElection) { l.Identity = "" }, "SEMAPHORE_LEADER_ELECT_IDENTITY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := valid
			tt.mod(&l)
			err := l.Validate()
			if tt.variable == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error about %s", tt.variable)
			}
			if first := strings.Fields(err.Error())[0]; first != tt.variable+":" {
				t.Errorf("Validate() = %q, want the first token to be %q", err, tt.variable+":")
			}
		})
	}
}

func TestCheckClusterName(t *testing.T) {
	tests := []struct {
		name  string
		valid bool
	}{
		{"aws", true},
		{"eu-west-1", true},
		{"1st", true},
		{strings.Repeat("a", 63), true},
		{"", false},
		{strings.Repeat("a", 64), false},
		{"-aws", false},
		{"aws-", false},
		{"AWS", false},
		{"aws.eu", false},
		{"aws_eu", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := config.CheckClusterName("SEMAPHORE_X", tt.name)
			if (err == nil) != tt.valid {
				t.Fatalf("CheckClusterName(%q) = %v, want valid=%v", tt.name, err, tt.valid)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "SEMAPHORE_X: ") {
				t.Errorf("CheckClusterName(%q) = %q, want it to start with the variable", tt.name, err)
			}
		})
	}
}

// Two remotes' pod ranges that overlap are refused at start, naming the variable.
func TestRemoteRangesOfTwoRemotesOverlapping(t *testing.T) {
	var r config.RemoteRanges
	if err := r.RemotePodRanges.Decode("aws:198.18.0.0/16,gcp:198.18.4.0/24"); err != nil {
		t.Fatal(err)
	}
	err := r.Validate([]string{"aws", "gcp"})
	if err == nil || !strings.HasPrefix(err.Error(), "SEMAPHORE_REMOTE_POD_RANGES: ") || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("Validate() = %v, want an overlap error naming SEMAPHORE_REMOTE_POD_RANGES", err)
	}
}
