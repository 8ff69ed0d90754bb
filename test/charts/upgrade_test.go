package charts_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/tooling/helmchart"
)

// previousRelease is the commit whose charts every change must upgrade from: until the first
// tagged release, the commit of main before the uninstall hooks and the monitoring switch
// (docs/releasing.md says to move it to each release's tag).
const previousRelease = "e14124526ebe57ec830920db31e332192ba0a388"

// previousCharts extracts the charts directory of previousRelease from the repository's
// history (git archive; a shallow clone has no history, and this test says so).
func previousCharts(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	archive := exec.Command("git", "-C", testbed.RepoRoot(), "archive", "--format=tar", "--output", filepath.Join(dir, "charts.tar"), previousRelease, "charts")
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s charts (the previous release; a shallow clone lacks it): %v: %s", previousRelease, err, out)
	}
	if out, err := exec.Command("tar", "-x", "-C", dir, "-f", filepath.Join(dir, "charts.tar")).CombinedOutput(); err != nil {
		t.Fatalf("extracting the previous release's charts: %v: %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, helmchart.UmbrellaDir, "Chart.yaml")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Both charts of the previous release, installed with that release's scenario values, upgrade
// to this tree's with this tree's values (as `helm upgrade -f` does): the API server takes every
// change (a changed selector or another immutable field would fail here), and every object both
// releases render is the same object afterwards (its UID kept): a token Secret made anew would
// hand consumers new tokens, a Service made anew a new ClusterIP.
func TestUpgradeFromThePreviousRelease(t *testing.T) {
	aws, gcp := clusters(t)
	old := previousCharts(t)
	tests := []struct {
		name, scenario string
		c              *testenv.Cluster
		chart          string
		values         string
	}{
		{name: "semaphore", scenario: "all", c: gcp, chart: helmchart.UmbrellaDir,
			values: "serviceMirror: {mirrorNamespace: {name: semaphore-ci-upgrade}}"},
		{name: "semaphore-remote", scenario: "several-consumers", c: aws, chart: helmchart.RemoteDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const name, namespace = "up", "semaphore-ci-upgrade"
			oldDir, newDir := filepath.Join(old, tt.chart), filepath.Join(testbed.RepoRoot(), tt.chart)
			scenario := filepath.Join("ci", tt.scenario+"-values.yaml")
			before := install(t, tt.c, oldDir, name, namespace, valuesOf(t, []string{filepath.Join(oldDir, scenario)}, tt.values))
			uids := liveUIDs(t, tt.c, before, namespace)
			after := upgrade(t, tt.c, newDir, name, namespace, valuesOf(t, []string{filepath.Join(newDir, scenario)}, tt.values))
			checkInstalled(t, tt.c, after, name, namespace)
			kept := 0
			for key, uid := range liveUIDs(t, tt.c, after, namespace) {
				if was, ok := uids[key]; ok {
					kept++
					if was != uid {
						t.Errorf("%s was made anew by the upgrade (uid %s, was %s)", key, uid, was)
					}
				}
			}
			t.Logf("upgraded %d objects to %d; %d rendered by both kept their UIDs", len(before.Objects), len(after.Objects), kept)
			uninstall(t, tt.c, name, namespace)
		})
	}
}

// liveUIDs are the UIDs, in c, of the objects of m that are not hooks, by kind/namespace/name.
func liveUIDs(t *testing.T, c *testenv.Cluster, m *manifest, namespace string) map[string]types.UID {
	t.Helper()
	dyn, mapper := clients(t, c)
	out := map[string]types.UID{}
	for _, o := range m.Objects {
		if isHook(o) {
			continue
		}
		got, err := resourceOf(t, dyn, mapper, o, namespace).Get(context.Background(), o.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
		out[objectKey(got)] = got.GetUID()
	}
	return out
}

// objectKey names o: kind namespace/name.
func objectKey(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}
