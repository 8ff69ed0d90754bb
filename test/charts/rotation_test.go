package charts_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// The helm commands of docs/operations.md's token rotation, as written there.
const (
	rotationGetValues = `helm get values semaphore-remote --kube-context aws -n semaphore-remote -o yaml > semaphore-remote-aws.yaml`
	rotationUpgrade   = `helm upgrade semaphore-remote "$CHARTS/semaphore-remote" --kube-context aws -n semaphore-remote -f semaphore-remote-aws.yaml`
	// rotationWithSet is what the documentation warns against.
	rotationWithSet = `helm upgrade semaphore-remote "$CHARTS/semaphore-remote" --kube-context aws -n semaphore-remote --reuse-values --set 'consumers[0].tokenGeneration=2'`
)

// shell runs the helm CLI as a user would from a shell, in a directory and an environment of
// its own: KUBECONFIG with the context aws, CHARTS this repository's charts, helm on the PATH.
type shell struct {
	dir string
	env []string
}

func newShell(t *testing.T, aws *testenv.Cluster) shell {
	t.Helper()
	helm, err := testbed.CIToolPath(os.Stderr, "helm.sh")
	if err != nil {
		testenv.SkipForMissing(t, "helm (ci/helm.sh): %v", err)
	}
	home := t.TempDir()
	return shell{dir: t.TempDir(), env: []string{
		"KUBECONFIG=" + aws.DirectKubeconfig,
		"CHARTS=" + filepath.Join(testbed.RepoRoot(), "charts"),
		"PATH=" + filepath.Dir(helm) + ":" + os.Getenv("PATH"),
		"HOME=" + home,
		"HELM_CACHE_HOME=" + filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
		"HELM_DATA_HOME=" + filepath.Join(home, "data"),
	}}
}

// run runs command with bash, and returns its output and error.
func (s shell) run(t *testing.T, command string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", command)
	cmd.Dir, cmd.Env = s.dir, s.env
	out, err := cmd.CombinedOutput()
	t.Logf("$ %s\n%s", command, out)
	return string(out), err
}

// must runs command, which must succeed.
func (s shell) must(t *testing.T, command string) {
	t.Helper()
	if out, err := s.run(t, command); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
}

// editConsumer sets fields of consumer's entry in the values file, as the documentation asks
// the reader to, and checks that the file kept the other consumers and values.
func (s shell) editConsumer(t *testing.T, consumer string, fields map[string]any) {
	t.Helper()
	path := filepath.Join(s.dir, "semaphore-remote-aws.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var vals struct {
		ClusterName string           `json:"clusterName"`
		APIServer   string           `json:"apiServer"`
		Consumers   []map[string]any `json:"consumers"`
	}
	if err := yaml.UnmarshalStrict(data, &vals); err != nil {
		t.Fatalf("helm get values wrote more or other than the values given: %v\n%s", err, data)
	}
	if vals.ClusterName != "aws" || vals.APIServer == "" || len(vals.Consumers) != 2 || vals.Consumers[1]["calicoIPAM"] != true {
		t.Fatalf("the values file does not hold the release's values:\n%s", data)
	}
	for _, c := range vals.Consumers {
		if c["name"] == consumer {
			for k, v := range fields {
				c[k] = v
			}
		}
	}
	if data, err = yaml.Marshal(vals); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// docs/operations.md rotates a consumer's token with commands that work: the release's values
// into a file (helm get values), the consumer's entry edited there, helm upgrade -f with it, and
// the same once the previous token may go. Run against a real API server exactly as written
// there: after the first upgrade both generations' token Secrets exist, the other consumer's
// entry untouched; after the second only the new one. The --set form the documentation warns
// against is refused by the chart's schema, changing nothing.
func TestTokenRotationAsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testbed.RepoRoot(), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, command := range []string{rotationGetValues, rotationUpgrade} {
		if !strings.Contains(string(doc), "\n"+command+"\n") {
			t.Fatalf("docs/operations.md does not run %s", command)
		}
	}
	aws := testenv.Start(t, testenv.Options{}, "aws")[0]
	sh := newShell(t, aws)
	sh.must(t, `helm install semaphore-remote "$CHARTS/semaphore-remote" --kube-context aws -n semaphore-remote --create-namespace `+
		`--set clusterName=aws --set apiServer=https://aws.example.net:6443 --set 'consumers[0].name=gcp' --set 'consumers[1].name=merit' --set 'consumers[1].calicoIPAM=true'`)
	secrets := aws.Client.CoreV1().Secrets("semaphore-remote")
	exists := func(name string) bool {
		t.Helper()
		_, err := secrets.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}

	if out, err := sh.run(t, rotationWithSet); err == nil || !strings.Contains(out, "values don't meet the specifications of the schema") {
		t.Errorf("the --set form: %v, want the schema to refuse it:\n%s", err, out)
	}
	if exists("semaphore-remote-gcp-token-2") {
		t.Error("the refused --set form made a token Secret")
	}

	sh.must(t, rotationGetValues)
	sh.editConsumer(t, "gcp", map[string]any{"tokenGeneration": 2, "keepPreviousToken": true})
	sh.must(t, rotationUpgrade)
	for name, want := range map[string]bool{"semaphore-remote-gcp-token": true, "semaphore-remote-gcp-token-2": true, "semaphore-remote-merit-token": true} {
		if exists(name) != want {
			t.Errorf("after step 1: Secret %s exists %v, want %v", name, !want, want)
		}
	}
	if _, err := aws.Client.RbacV1().ClusterRoleBindings().Get(context.Background(), "semaphore-remote-merit-calico-ipam", metav1.GetOptions{}); err != nil {
		t.Errorf("after step 1, merit's entry lost its calicoIPAM: %v", err)
	}

	sh.editConsumer(t, "gcp", map[string]any{"keepPreviousToken": false})
	sh.must(t, rotationUpgrade)
	for name, want := range map[string]bool{"semaphore-remote-gcp-token": false, "semaphore-remote-gcp-token-2": true, "semaphore-remote-merit-token": true} {
		if exists(name) != want {
			t.Errorf("after step 4: Secret %s exists %v, want %v", name, !want, want)
		}
	}
}
