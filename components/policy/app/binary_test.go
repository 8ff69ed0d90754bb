package app_test

import (
	"strings"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/remote"
	"github.com/kube-semaphore/semaphore/internal/testenv"
)

func TestBadConfiguration(t *testing.T) {
	bin := testenv.BuildBinary(t, "github.com/kube-semaphore/semaphore/components/policy")
	noRemotes := t.TempDir()
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
			env:  []string{"SEMAPHORE_LOCAL_KUBECONFIG=" + local.DirectKubeconfig, "POD_NAMESPACE=semaphore"},
			want: []string{"SEMAPHORE_LOCAL_CLUSTER"},
		},
		{
			name: "unknown Calico API",
			env:  valid("SEMAPHORE_POLICY_CALICO_API=projectcalico.org/v9"),
			want: []string{"SEMAPHORE_POLICY_CALICO_API", "projectcalico.org/v9"},
		},
		{
			name: "pod label not a label key",
			env:  valid("SEMAPHORE_POLICY_LABEL=not a label"),
			want: []string{"SEMAPHORE_POLICY_LABEL", `"not a label"`},
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
			name: "no workers",
			env:  valid("SEMAPHORE_POLICY_WORKERS=0"),
			want: []string{"SEMAPHORE_POLICY_WORKERS"},
		},
		{
			name: "workers not a number",
			env:  valid("SEMAPHORE_POLICY_WORKERS=four"),
			want: []string{"SEMAPHORE_POLICY_WORKERS", "four"},
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
		for _, v := range []string{"SEMAPHORE_POLICY_CALICO_API", "SEMAPHORE_POLICY_LABEL", "SEMAPHORE_LOCAL_CLUSTER", "SEMAPHORE_REMOTES"} {
			if !strings.Contains(r.Stdout, v) {
				t.Errorf("-h output does not list %s:\n%s", v, r.Stdout)
			}
		}
		if r.Stderr != "" {
			t.Errorf("-h wrote to stderr: %s", r.Stderr)
		}
	})
}
