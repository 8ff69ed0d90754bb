package charts_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
)

// libraryName is the library chart's name, as the charts depend on it.
const libraryName = "semaphore-common"

// Every chart that uses the library (the umbrella, each subchart, semaphore-remote) depends on
// the one under charts/common, through a file:// dependency and a charts/common link to it, so
// that each is installable alone from a clone and packages the library with it.
func TestEveryChartUsesTheOneLibrary(t *testing.T) {
	library, err := filepath.EvalSymlinks(filepath.Join(testbed.RepoRoot(), "charts", "common"))
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{umbrellaChart, remoteChart}
	for _, c := range components {
		dirs = append(dirs, filepath.Join(umbrellaChart, "charts", c))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			ch := loadChart(t, dir)
			var repo string
			for _, d := range ch.Metadata.Dependencies {
				if d.Name == libraryName {
					repo = d.Repository
				}
			}
			path, ok := strings.CutPrefix(repo, "file://")
			if !ok {
				t.Fatalf("Chart.yaml: dependency %s has repository %q, want file://<path to charts/common>", libraryName, repo)
			}
			for what, p := range map[string]string{"its repository": filepath.Join(dir, path), "charts/common": filepath.Join(dir, "charts", "common")} {
				if got, err := filepath.EvalSymlinks(p); err != nil || got != library {
					t.Errorf("%s is %s (%v), want the library %s", what, got, err, library)
				}
			}
			var loaded bool
			for _, d := range ch.Dependencies() {
				loaded = loaded || (d.Name() == libraryName && d.Metadata.Type == "library")
			}
			if !loaded {
				t.Errorf("the loaded chart has no library chart %s", libraryName)
			}
		})
	}
}

// Common labels add to the standard labels of every object and never replace one, in the
// umbrella (global.commonLabels) and in semaphore-remote (commonLabels) alike.
func TestCommonLabelsNeverReplaceStandardLabels(t *testing.T) {
	const labels = `
  team: platform
  app.kubernetes.io/part-of: other
  app.kubernetes.io/name: other
  helm.sh/chart: other
`
	for _, tt := range []struct {
		dir  string
		vals map[string]any
	}{
		{umbrellaChart, valuesOf(t, nil, awsGlobals+"  commonLabels:"+strings.ReplaceAll(labels, "\n  ", "\n    ")+"wireguard:\n  listenPorts:\n    aws: 51821\n")},
		{remoteChart, valuesOf(t, nil, "consumers:\n  - name: gcp\ncommonLabels:"+labels)},
	} {
		t.Run(filepath.Base(tt.dir), func(t *testing.T) {
			m := mustRender(t, tt.dir, tt.vals)
			for _, o := range m.Objects {
				got := o.GetLabels()
				if got["team"] != "platform" {
					t.Errorf("%s %s: common label team=platform missing (labels %v)", o.GetKind(), o.GetName(), got)
				}
				for _, k := range []string{"app.kubernetes.io/part-of", "app.kubernetes.io/name", "helm.sh/chart"} {
					if got[k] == "other" {
						t.Errorf("%s %s: common label %s replaced the standard one (labels %v)", o.GetKind(), o.GetName(), k, got)
					}
				}
			}
		})
	}
}

// semaphore-remote is not one component: its objects are named after the chart (nameOverride
// included), not "<release>-<component>" as the subcharts' are.
func TestRemoteObjectsAreNamedAfterTheChart(t *testing.T) {
	for _, tt := range []struct {
		release, overrides, fullname, name string
	}{
		{"semaphore-remote", "", "semaphore-remote", "semaphore-remote"},
		{"semaphore", "", "semaphore-semaphore-remote", "semaphore-remote"},
		{"remote", "", "remote-semaphore-remote", "semaphore-remote"},
		{"rel", "nameOverride: readers\n", "rel-readers", "readers"},
		{"readers-1", "nameOverride: readers\n", "readers-1", "readers"},
		{"rel", "fullnameOverride: granted\n", "granted", "semaphore-remote"},
	} {
		t.Run(tt.release+"/"+strings.TrimSpace(tt.overrides), func(t *testing.T) {
			m := mustRenderAs(t, remoteChart, tt.release, releaseNamespace, valuesOf(t, nil, "consumers:\n  - name: gcp\n"+tt.overrides))
			for kind, name := range map[string]string{"ClusterRole": tt.fullname, "ClusterRoleBinding": tt.fullname + "-gcp", "ConfigMap": tt.fullname + "-link"} {
				o := m.Get(kind, name)
				if o == nil {
					t.Errorf("no %s %s (objects: %v)", kind, name, m.Kinds())
					continue
				}
				if got := o.GetLabels()["app.kubernetes.io/name"]; got != tt.name {
					t.Errorf("%s %s: app.kubernetes.io/name=%s, want %s", kind, name, got, tt.name)
				}
				if _, ok := o.GetLabels()["app.kubernetes.io/component"]; ok {
					t.Errorf("%s %s: has an app.kubernetes.io/component label, but semaphore-remote is no component", kind, name)
				}
			}
		})
	}
}
