package app_test

import (
	"testing"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
)

func TestBadConfiguration(t *testing.T) {
	bin := testenv.BuildBinary(t, "github.com/kube-semaphore/semaphore/components/policy")
	// Everything a start needs short of the case's mistake.
	valid := func(extra ...string) []string { return fixture.ValidEnv(local.DirectKubeconfig, extra...) }

	fixture.ExpectConfigErrors(t, bin, append(fixture.SharedCases(t, local.DirectKubeconfig), []fixture.ConfigCase{
		{Name: "missing local cluster", Env: []string{"SEMAPHORE_LOCAL_KUBECONFIG=" + local.DirectKubeconfig, "POD_NAMESPACE=semaphore"}, Want: []string{"SEMAPHORE_LOCAL_CLUSTER"}},
		{Name: "unknown Calico API", Env: valid("SEMAPHORE_POLICY_CALICO_API=projectcalico.org/v9"), Want: []string{"SEMAPHORE_POLICY_CALICO_API", "projectcalico.org/v9"}},
		{Name: "pod label not a label key", Env: valid("SEMAPHORE_POLICY_LABEL=not a label"), Want: []string{"SEMAPHORE_POLICY_LABEL", `"not a label"`}},
		{Name: "no workers", Env: valid("SEMAPHORE_POLICY_WORKERS=0"), Want: []string{"SEMAPHORE_POLICY_WORKERS"}},
		{Name: "no sets per remote", Env: valid("SEMAPHORE_POLICY_MAX_SETS_PER_REMOTE=0"), Want: []string{"SEMAPHORE_POLICY_MAX_SETS_PER_REMOTE", "at least 1"}},
		{Name: "no members per set", Env: valid("SEMAPHORE_POLICY_MAX_SET_MEMBERS=-5"), Want: []string{"SEMAPHORE_POLICY_MAX_SET_MEMBERS", "at least 1"}},
		{Name: "members not a number", Env: valid("SEMAPHORE_POLICY_MAX_SET_MEMBERS=lots"), Want: []string{"SEMAPHORE_POLICY_MAX_SET_MEMBERS", "lots"}},
		{Name: "pod range of an unknown remote", Env: valid("SEMAPHORE_REMOTE_POD_RANGES=azure:198.18.0.0/16"), Want: []string{"SEMAPHORE_REMOTE_POD_RANGES", `"azure"`}},
		{Name: "workers not a number", Env: valid("SEMAPHORE_POLICY_WORKERS=four"), Want: []string{"SEMAPHORE_POLICY_WORKERS", "four"}},
	}...))
	fixture.ExpectHelp(t, bin, "SEMAPHORE_POLICY_CALICO_API", "SEMAPHORE_POLICY_LABEL", "SEMAPHORE_LOCAL_CLUSTER", "SEMAPHORE_REMOTES")
}
