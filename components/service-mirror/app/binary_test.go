package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/remote"
	"github.com/kube-semaphore/semaphore/internal/testenv"
)

func TestBadConfiguration(t *testing.T) {
	bin := testenv.BuildBinary(t, "github.com/kube-semaphore/semaphore/components/service-mirror")

	// Remote kubeconfig fixtures: none at all, and one that is not YAML a kubeconfig can be.
	noRemotes := t.TempDir()
	garbageRemotes := t.TempDir()
	garbage := remote.KubeconfigPath(garbageRemotes, "aws")
	if err := os.MkdirAll(filepath.Dir(garbage), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(garbage, []byte("not: [valid"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Everything a start needs short of the case's mistake; leader election is left on (the
	// default) with its namespace from POD_NAMESPACE, as in a pod.
	valid := func(extra ...string) []string {
		return append([]string{
			"SEMAPHORE_LOCAL_CLUSTER=local",
			"SEMAPHORE_LOCAL_KUBECONFIG=" + local.DirectKubeconfig,
			"SEMAPHORE_ADMIN_ADDR=127.0.0.1:0",
			"POD_NAMESPACE=semaphore",
		}, extra...)
	}

	for _, tc := range []struct {
		name string
		env  []string
		// want are the strings the one line on stderr must contain.
		want []string
	}{
		{
			name: "missing local cluster",
			env:  nil,
			want: []string{"SEMAPHORE_LOCAL_CLUSTER"},
		},
		{
			name: "remote name not a DNS label",
			env:  valid("SEMAPHORE_REMOTES=gcp,AWS_1"),
			want: []string{"SEMAPHORE_REMOTES", `"AWS_1"`},
		},
		{
			name: "remote kubeconfig missing",
			env:  valid("SEMAPHORE_REMOTES=aws", "SEMAPHORE_REMOTES_DIR="+noRemotes),
			want: []string{remote.KubeconfigPath(noRemotes, "aws"), "aws"},
		},
		{
			name: "remote kubeconfig not a kubeconfig",
			env:  valid("SEMAPHORE_REMOTES=aws", "SEMAPHORE_REMOTES_DIR="+garbageRemotes),
			want: []string{garbage, "aws"},
		},
		{
			name: "local kubeconfig not a kubeconfig",
			env:  append(valid(), "SEMAPHORE_LOCAL_KUBECONFIG="+garbage),
			want: []string{"SEMAPHORE_LOCAL_KUBECONFIG", garbage},
		},
		{
			name: "bad label selector",
			env:  valid("SEMAPHORE_MIRROR_LABEL_SELECTOR=a b c"),
			want: []string{"SEMAPHORE_MIRROR_LABEL_SELECTOR"},
		},
		{
			name: "client QPS not a number",
			env:  valid("SEMAPHORE_CLIENT_QPS=abc"),
			want: []string{"SEMAPHORE_CLIENT_QPS", "abc"},
		},
		{
			name: "leader election without a namespace",
			env:  []string{"SEMAPHORE_LOCAL_CLUSTER=local", "SEMAPHORE_LOCAL_KUBECONFIG=" + local.DirectKubeconfig},
			want: []string{"SEMAPHORE_LEADER_ELECT_NAMESPACE", "POD_NAMESPACE"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testenv.ExpectConfigError(t, testenv.RunBinary(t, bin, tc.env), tc.want...)
		})
	}

	t.Run("help", func(t *testing.T) {
		r := testenv.RunBinary(t, bin, nil, "-h")
		if r.Code != 0 {
			t.Errorf("-h exit code %d, want 0; stderr: %s", r.Code, r.Stderr)
		}
		for _, v := range []string{"SEMAPHORE_MIRROR_NAMESPACE", "SEMAPHORE_LOCAL_CLUSTER", "SEMAPHORE_REMOTES"} {
			if !strings.Contains(r.Stdout, v) {
				t.Errorf("-h output does not list %s:\n%s", v, r.Stdout)
			}
		}
		if r.Stderr != "" {
			t.Errorf("-h wrote to stderr: %s", r.Stderr)
		}
	})
}
