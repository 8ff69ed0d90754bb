package app_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

func TestBadConfiguration(t *testing.T) {
	bin := testenv.BuildBinary(t, "github.com/kube-semaphore/semaphore/components/service-mirror")

	// Remote kubeconfig fixtures: none at all, and one that is not YAML a kubeconfig can be.
	garbageRemotes := t.TempDir()
	garbage := remote.KubeconfigPath(garbageRemotes, "aws")
	if err := os.MkdirAll(filepath.Dir(garbage), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(garbage, []byte("not: [valid"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Everything a start needs short of the case's mistake.
	valid := func(extra ...string) []string { return fixture.ValidEnv(local.DirectKubeconfig, extra...) }

	fixture.ExpectConfigErrors(t, bin, append(fixture.SharedCases(t, local.DirectKubeconfig), []fixture.ConfigCase{
		{Name: "missing local cluster", Env: nil, Want: []string{"SEMAPHORE_LOCAL_CLUSTER"}},
		{Name: "remote kubeconfig not a kubeconfig", Env: valid("SEMAPHORE_REMOTES=aws", "SEMAPHORE_REMOTES_DIR="+garbageRemotes), Want: []string{garbage, "aws"}},
		{Name: "local kubeconfig not a kubeconfig", Env: append(valid(), "SEMAPHORE_LOCAL_KUBECONFIG="+garbage), Want: []string{"SEMAPHORE_LOCAL_KUBECONFIG", garbage}},
		{Name: "bad label selector", Env: valid("SEMAPHORE_MIRROR_LABEL_SELECTOR=a b c"), Want: []string{"SEMAPHORE_MIRROR_LABEL_SELECTOR"}},
		{Name: "withdraw-after not a duration", Env: valid("SEMAPHORE_WITHDRAW_AFTER=aws:soon"), Want: []string{"SEMAPHORE_WITHDRAW_AFTER", "aws:soon"}},
		{Name: "mirror limit of zero", Env: valid("SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE=0"), Want: []string{"SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE", "at least 1"}},
		{Name: "global limit not a number", Env: valid("SEMAPHORE_GLOBAL_MAX_SERVICES_PER_REMOTE=many"), Want: []string{"SEMAPHORE_GLOBAL_MAX_SERVICES_PER_REMOTE", "many"}},
		{Name: "global limit negative", Env: valid("SEMAPHORE_GLOBAL_MAX_SERVICES_PER_REMOTE=-5"), Want: []string{"SEMAPHORE_GLOBAL_MAX_SERVICES_PER_REMOTE", "at least 1"}},
		{Name: "client QPS not a number", Env: valid("SEMAPHORE_CLIENT_QPS=abc"), Want: []string{"SEMAPHORE_CLIENT_QPS", "abc"}},
		{Name: "leader election without a namespace", Env: []string{"SEMAPHORE_LOCAL_CLUSTER=local", "SEMAPHORE_LOCAL_KUBECONFIG=" + local.DirectKubeconfig}, Want: []string{"SEMAPHORE_LEADER_ELECT_NAMESPACE", "POD_NAMESPACE"}},
	}...))
	fixture.ExpectHelp(t, bin, "SEMAPHORE_MIRROR_NAMESPACE", "SEMAPHORE_WITHDRAW_AFTER", "SEMAPHORE_LOCAL_CLUSTER", "SEMAPHORE_REMOTES",
		"SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE", "SEMAPHORE_GLOBAL_MAX_SERVICES_PER_REMOTE")
}
